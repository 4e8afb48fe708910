"""What ``POST /v1/messages`` adds to an answer, on top of ``ask_sources`` on the same documents
and backend.

The example handbook's files are sent as text documents with a question; the extractive
provider answers (no model: what is timed is quotebound's own work). Timed in one run, each
``--calls`` times: the library (``pipeline.ask_sources`` over the same pieces the endpoint
makes, traced to a store), the endpoint non-streamed (a served app on a loopback port,
``httpx``), and the endpoint streamed (time to the first event, and to ``message_stop``).
Every call's answer is checked (a cited text block) before it counts. p50 and p95 in ms.

    .venv/bin/python -m benchmarks.speed.messages_overhead            # --calls 50
"""

from __future__ import annotations

import argparse
import tempfile
import time

import httpx

from benchmarks.common import ROOT, p50_p95
from kits.serverkit import live_server
from quotebound.pipeline import ask_sources
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.server import ServerConfig, create_app
from quotebound.server.messages import read_request, sources_of
from quotebound.store import open_store

QUESTION = "How many weeks of paid parental leave do employees get?"


def _request() -> dict[str, object]:
    documents = [
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": path.read_text()},
            "title": path.stem,
            "citations": {"enabled": True},
        }
        for path in sorted((ROOT / "examples" / "handbook").glob("*"))
        if path.suffix in (".txt", ".md")
    ]
    return {
        "model": "quotebound-extractive",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [*documents, {"type": "text", "text": QUESTION}]}],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    request = _request()
    question, documents = read_request(request)
    times: dict[str, list[float]] = {
        "library": [],
        "endpoint": [],
        "first event": [],
        "streamed": [],
    }
    with tempfile.TemporaryDirectory(prefix="qb-msg-") as tmp:
        url = f"sqlite:///{tmp}/q.db"
        with open_store(url) as store:
            secret = store.create_key(name="bench")[1]
            provider = ExtractiveProvider()
            for _ in range(args.calls):
                at = time.perf_counter()
                answer = ask_sources(
                    question, sources_of(question, documents), provider, None, store
                )
                times["library"].append((time.perf_counter() - at) * 1000)
                assert answer.claims
        app = create_app(ServerConfig(store_url=url))
        headers = {"x-api-key": secret}
        with live_server(app) as base, httpx.Client(base_url=base, headers=headers) as client:
            for _ in range(args.calls):
                at = time.perf_counter()
                reply = client.post("/v1/messages", json=request)
                times["endpoint"].append((time.perf_counter() - at) * 1000)
                assert any(b.get("citations") for b in reply.json()["content"]), reply.text
                at = time.perf_counter()
                first = None
                with client.stream("POST", "/v1/messages", json={**request, "stream": True}) as r:
                    for line in r.iter_lines():
                        if first is None and line.startswith("event:"):
                            first = time.perf_counter()
                        if line == "event: message_stop":
                            break
                end = time.perf_counter()
                assert first is not None
                times["first event"].append((first - at) * 1000)
                times["streamed"].append((end - at) * 1000)
    print(
        f"n = {args.calls} calls each; the example handbook as {len(documents)} text "
        "documents (ms)\n"
    )
    print("| path | p50 | p95 |")
    print("|---|---:|---:|")
    for name, label in (
        ("library", "ask_sources (library)"),
        ("endpoint", "/v1/messages"),
        ("first event", "/v1/messages streamed: first event"),
        ("streamed", "/v1/messages streamed: message_stop"),
    ):
        print(f"| {label} | {p50_p95(times[name])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
