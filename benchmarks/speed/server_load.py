"""How many ``POST /v1/verify`` and ``POST /v1/ask`` requests the service answers, and how
fast, under load, on SQLite or on one PostgreSQL store shared by every worker.

What it does: starts ``quotebound serve`` (``--workers`` 1, then 2 processes, the extractive
provider, the store of ``--store``: SQLite in a temporary directory, or a fresh database on a
throwaway PostgreSQL cluster, ``kits/pgcluster.py``) on a free loopback port, creates an API
key, and for each route of ``--routes``:

- ``verify``: sends the same realistic verify request over and over: the working set and
  answer of ``benchmarks/speed/verify_speed.py`` (20 sources of about 1.5 KB, 8 claims, 11
  citations, two of which fail), about 33 KB of JSON; the verdict is checked before timing;
- ``ask``: asks questions in turn (the first words of each of those 20 sources, ingested as
  20 documents) with the extractive provider: each answer retrieves, packs, verifies and
  writes a trace. Afterwards every answer's trace id is checked: all distinct, each one in
  the store, and the store holds exactly as many traces as answers were given (nothing lost,
  nothing written twice, with every worker writing at once);
- ``chat``: the same questions as a chat UI sends them to ``POST /v1/chat/completions`` (the
  model ``quotebound/policies``), each answer traced and checked as ``ask``'s;
- ``messages``: the same questions as ``POST /v1/messages`` requests, each with its source as
  a text document (citations enabled), as the Anthropic SDK sends them; traced and checked too.

For each level of 1, 8 and 32 concurrent clients (each a keep-alive connection sending its
next request as soon as the last is answered) it runs for a fixed time and prints requests/s
and p50/p99 latency.

Before the levels, the time from starting ``serve`` to its listening (each worker warms first)
and its first ``/v1/ask`` are printed (the cold start). With ``--kill`` (and 2 workers or
more), one more level of 8 clients per answering route runs while one worker is killed with
SIGKILL halfway: ``reset`` counts requests whose connection dropped with it, ``hung`` those
never answered in 30 s; the traces are then checked as for any level.

The load generator is Python (httpx, asyncio) on the same machine, so on 2 cores it takes
CPU from the server: the figures are a floor for what the server does alone.

Run it from the repository root::

    .venv/bin/python -m benchmarks.speed.server_load [--seconds 8] [--levels 1,8,32] [--workers 1,2]
        [--store sqlite|postgresql] [--routes verify,ask,chat,messages] [--kill]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.speed.workload import make_answer, make_sources
from kits.pgcluster import Cluster, start_cluster
from kits.serverkit import workers_of
from quotebound.corpus import LoadedDocument
from quotebound.ingest.chunker import chunk_document
from quotebound.store import open_store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _body() -> dict[str, Any]:
    sources = make_sources(20)
    answer = make_answer(sources)
    return {
        "sources": [{"id": s.id, "text": s.text, "key": s.key, "title": s.title} for s in sources],
        "output": answer.raw,
        "format": "json",
    }


def _start(url: str, port: int, home: str, workers: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, QUOTEBOUND_HOME=home)
    command = [
        sys.executable,
        "-m",
        "quotebound",
        "serve",
        "--provider",
        "extractive",
        "--port",
        str(port),
        "--store",
        url,
        "--workers",
        str(workers),
        "--entailment",  # the service as measured in the README: code checks only
        "off",
        "--answer-check",
        "off",
        "--fallback",
        "off",
    ]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start within 30 s")


def _questions(route: str = "ask") -> list[bytes]:
    """One question per source of the verify body (its first eight words), as ``route`` takes
    it: ``/v1/ask``'s body, a chat UI's, or a Messages request with the source as a document."""
    bodies: list[dict[str, Any]] = []
    for s in make_sources(20):
        question = " ".join(s.text.split()[:8])
        if route == "chat":
            asked = [{"role": "user", "content": question}]
            bodies.append({"model": "quotebound/policies", "messages": asked})
        elif route == "messages":
            document = {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": s.text},
                "title": s.title,
                "citations": {"enabled": True},
            }
            content = [document, {"type": "text", "text": question}]
            bodies.append(
                {
                    "model": "quotebound-extractive",
                    "max_tokens": 1024,
                    "messages": [{"role": "user", "content": content}],
                }
            )
        else:
            bodies.append({"question": question})
    return [json.dumps(b).encode() for b in bodies]


# What each route is posted to; every one but verify answers with a trace
PATHS = {
    "verify": "/v1/verify",
    "ask": "/v1/ask",
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
}


def _trace_of(r: httpx.Response) -> str | None:
    """The trace id of an answer: ``/v1/ask``'s JSON, the other faces' response header."""
    header: str | None = r.headers.get("quotebound-trace-id")
    if header:
        return header
    if r.headers.get("content-type", "").startswith("application/json"):
        trace = r.json().get("trace_id")
        return trace if isinstance(trace, str) else None
    return None


async def _level(
    base: str,
    secret: str,
    payloads: list[bytes],
    clients: int,
    seconds: float,
    route: str,
    traces: list[str],
) -> dict[str, Any]:
    """``clients`` concurrent clients posting ``payloads`` in turn to ``route`` for
    ``seconds``; the trace id of every answer goes to ``traces``."""
    latencies: list[float] = []
    errors = reset = hung = 0
    turn = 0
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    client = httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30)
    async with client:

        def keep(r: httpx.Response) -> None:
            if r.status_code == 200 and route != "/v1/verify":
                trace = _trace_of(r)
                assert trace is not None, f"{route} answered without a trace"
                traces.append(trace)

        for n in range(min(clients, 4)):  # warm the connections and the server
            keep(await client.post(route, content=payloads[n % len(payloads)]))
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors, turn, reset, hung
            while time.perf_counter() < deadline:
                payload = payloads[turn % len(payloads)]
                turn += 1
                started = time.perf_counter()
                try:
                    r = await client.post(route, content=payload)
                except httpx.TimeoutException:
                    hung += 1  # no answer in 30 s
                    continue
                except httpx.TransportError:
                    reset += 1  # the connection dropped (a killed worker's request)
                    continue
                latencies.append(time.perf_counter() - started)
                errors += r.status_code != 200
                keep(r)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "clients": clients,
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "errors": errors,
        "reset": reset,
        "hung": hung,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="time per level")
    parser.add_argument("--levels", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--workers", default="1,2", help="server processes, comma-separated")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument(
        "--routes", default="verify,ask", help="of verify, ask, chat and messages, comma-separated"
    )
    parser.add_argument(
        "--kill",
        action="store_true",
        help="with 2+ workers, one more ask level of 8 clients during which a worker is "
        "killed (kill -9) halfway: every request answered or refused, none hung, no trace lost",
    )
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    cluster: Cluster | None = None
    if args.store == "postgresql":
        started = start_cluster()
        if isinstance(started, str):
            raise SystemExit(f"no PostgreSQL server could start here: {started}")
        cluster = started
    try:
        rows = [
            row
            for w in (int(n) for n in args.workers.split(","))
            for row in _run(args, levels, w, cluster)
        ]
    finally:
        if cluster is not None:
            cluster.stop()
    payload_kb = len(json.dumps(_body()).encode()) / 1024
    print(
        f"# POST /v1/verify: a {payload_kb:.1f} KB body (20 sources, 8 claims, 11 citations); "
        f"POST /v1/ask: 20 questions in turn, the extractive provider, over 20 documents; "
        f"{args.seconds:g} s per level; store {args.store}"
    )
    print(
        f"# {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; uvicorn worker processes as listed; client on the same machine"
    )
    print()
    print(
        "| route | workers | clients | requests | requests/s | p50 ms | p99 ms | errors "
        "| reset | hung |"
    )
    print("|---|--------:|--------:|---------:|-----------:|-------:|-------:|-------:|---:|---:|")
    for r in rows:
        print(
            f"| {r['route']} | {r['workers']:>7} | {r['clients']:>7} | {r['requests']:>8} | "
            f"{r['rps']:>10.0f} | {r['p50_ms']:>6.2f} | {r['p99_ms']:>6.2f} | {r['errors']:>6} "
            f"| {r['reset']} | {r['hung']} |"
        )
    print()
    for line in dict.fromkeys(r["traces"] for r in rows if r.get("traces")):
        print(line)
    for r in rows:
        if r.get("cold"):
            c = r["cold"]
            print(
                f"# cold start, {r['workers']} worker(s): `serve` to listening (warm) "
                f"{c['listening_s']:.1f} s; its first /v1/ask {c['first_ms']:.0f} ms"
            )
    return 0


def _run(
    args: argparse.Namespace, levels: list[int], workers: int, cluster: Any
) -> list[dict[str, Any]]:
    """Every level of every route against one server of ``workers`` processes."""
    body = _body()
    payload = json.dumps(body).encode()
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'bench.db'}"
        if cluster is not None:
            import psycopg

            name = f"qb_load_{workers}"
            with psycopg.connect(cluster.admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
                conn.execute(f"CREATE DATABASE {name}")
            url = cluster.url(name)
        with open_store(url) as store:
            secret = store.create_key(name="server_load")[1]
            for s in make_sources(20):  # the corpus /v1/ask answers from
                doc = LoadedDocument(f"policy-{s.id}.txt", s.text, "text/plain", title=s.title)
                store.ingest("policies", doc, chunk_document(doc))
        port = _free_port()
        began = time.perf_counter()
        proc = _start(url, port, home, workers)
        listening = time.perf_counter() - began
        base = f"http://127.0.0.1:{port}"
        try:
            first = time.perf_counter()
            first_answer = httpx.post(
                f"{base}/v1/ask",
                content=_questions()[0],
                timeout=60,
                headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
            )
            first_answer.raise_for_status()
            cold = {"listening_s": listening, "first_ms": (time.perf_counter() - first) * 1000}
            check = httpx.post(
                f"{base}/v1/verify",
                content=payload,
                timeout=30,
                headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
            )
            verdict = check.json()
            assert check.status_code == 200 and verdict["status"] == "partial", verdict
            assert verdict["counts"]["kept"] == 7 and verdict["counts"]["citations"] == 11
            rows = []
            # (the cold start's answer is one of the answers whose traces are checked)
            traces: list[str] = [first_answer.json()["trace_id"]]
            for route in routes:
                payloads = [payload] if route == "verify" else _questions(route)
                for n in levels:
                    level = _level(base, secret, payloads, n, args.seconds, PATHS[route], traces)
                    rows.append({"route": route, **asyncio.run(level)})
                if route != "verify" and args.kill and workers > 1:
                    level = _level(base, secret, payloads, 8, args.seconds, PATHS[route], traces)
                    killed = _kill_one_worker_at(proc.pid, args.seconds / 2)
                    row = asyncio.run(level)
                    rows.append({"route": f"{route}, worker {killed.result()} killed", **row})
            if any(r != "verify" for r in routes):
                reset = sum(r["reset"] for r in rows)
                rows[-1]["traces"] = _check_traces(url, traces, workers, reset)
            if rows:
                rows[-1]["cold"] = cold
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return [{"workers": workers, **r} for r in rows]


def _kill_one_worker_at(supervisor: int, after: float) -> Any:
    """Kill one worker of ``supervisor`` with SIGKILL ``after`` seconds from now, in a thread;
    the returned future gives its pid."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    def kill() -> int:
        time.sleep(after)
        victim = workers_of(supervisor)[0]
        os.kill(victim, signal.SIGKILL)
        return victim

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(kill)
    pool.shutdown(wait=False)
    return future


def _check_traces(url: str, traces: list[str], workers: int, reset: int = 0) -> str:
    """Every answer's trace id distinct and in the store, and the store holding no other but
    at most one per ``reset`` request (a worker killed after writing its trace, before its
    reply was sent: kept, the client told nothing)."""
    assert len(set(traces)) == len(traces), "a trace id was given to two answers"
    with open_store(url) as store:
        found = [
            t for i in range(0, len(traces), 500) for t in store.get_traces(traces[i : i + 500])
        ]
        stored = store._trace_count()  # type: ignore[attr-defined]
    assert len(found) == len(traces), f"{len(traces) - len(found)} answers' traces are missing"
    extra = stored - len(traces)
    assert 0 <= extra <= reset, f"{stored} traces stored for {len(traces)} answers, {reset} reset"
    unanswered = f" (and {extra} of the {reset} reset requests')" if extra else ""
    return (
        f"# answers, {workers} worker(s): {len(traces):,} answers, {stored:,} traces stored"
        f"{unanswered}, every answer's id distinct and found: nothing lost or written twice"
    )


if __name__ == "__main__":
    raise SystemExit(main())
