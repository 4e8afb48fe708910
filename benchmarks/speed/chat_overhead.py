"""What ``POST /v1/chat/completions`` adds to an answer, on top of ``pipeline.ask`` on the same
store, question and backend; and how soon a chat UI sees the first words.

The example handbook's documents (``kits.serverkit.fill``: the HR corpus) in a SQLite store; the
extractive provider answers (no model: what is timed is quotebound's own work). Timed in one
run, each ``--calls`` times: the library (``pipeline.ask`` with the options the service runs,
``server.answers.served_options``), the endpoint non-streamed (a served app on a loopback port,
``httpx``), and the endpoint streamed as Open WebUI asks (time to the first content chunk, and
to ``data: [DONE]``). Every call's answer is checked (a cited claim, a marker link) before it
counts. p50 and p95 in ms.

    .venv/bin/python -m benchmarks.speed.chat_overhead            # --calls 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import httpx

from benchmarks.common import p50_p95
from kits.serverkit import fill, live_server
from quotebound.pipeline import ask
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.server import ServerConfig, create_app
from quotebound.server.answers import served_options
from quotebound.server.state import ServerState
from quotebound.store import open_store

QUESTION = "How many weeks of paid parental leave do employees get?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {"library": [], "endpoint": [], "first": [], "done": []}
    request = {"model": "quotebound/hr", "messages": [{"role": "user", "content": QUESTION}]}
    with tempfile.TemporaryDirectory(prefix="qb-chat-") as tmp:
        url = f"sqlite:///{tmp}/q.db"
        config = ServerConfig(store_url=url)
        with open_store(url) as store:
            fill(store)
            secret = store.create_key(name="bench")[1]
            key = store.authenticate(secret)
            assert key is not None
            state = ServerState(config)
            options = served_options(state, key, corpora=["hr"])
            state.close()
            provider = ExtractiveProvider()
            for _ in range(args.calls):
                at = time.perf_counter()
                answer = ask(QUESTION, store, provider, options)
                times["library"].append((time.perf_counter() - at) * 1000)
                assert answer.claims, answer.status
        headers = {"Authorization": f"Bearer {secret}"}
        with (
            live_server(create_app(config)) as base,
            httpx.Client(base_url=base, headers=headers, timeout=60) as client,
        ):
            for _ in range(args.calls):
                at = time.perf_counter()
                reply = client.post("/v1/chat/completions", json=request)
                times["endpoint"].append((time.perf_counter() - at) * 1000)
                assert reply.json()["choices"][0]["message"]["annotations"], reply.text
                at = time.perf_counter()
                first, streamed_text = None, ""
                with client.stream(
                    "POST", "/v1/chat/completions", json={**request, "stream": True}
                ) as streamed:
                    for line in streamed.iter_lines():
                        if line == "data: [DONE]":
                            break
                        if line.startswith("data: {"):
                            delta = json.loads(line[6:]).get("choices", [{}])[0].get("delta", {})
                            if delta.get("content"):
                                first = first or time.perf_counter()
                                streamed_text += delta["content"]
                end = time.perf_counter()
                assert first is not None and "[[1]](" in streamed_text, streamed_text
                times["first"].append((first - at) * 1000)
                times["done"].append((end - at) * 1000)
    print(f"n = {args.calls} calls each; the HR example corpus, extractive provider (ms)\n")
    print("| path | p50 | p95 |")
    print("|---|---:|---:|")
    for name, label in (
        ("library", "pipeline.ask (library, the service's options)"),
        ("endpoint", "/v1/chat/completions"),
        ("first", "/v1/chat/completions streamed: first content chunk"),
        ("done", "/v1/chat/completions streamed: [DONE]"),
    ):
        print(f"| {label} | {p50_p95(times[name])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
