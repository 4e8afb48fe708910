"""How many ``POST /v1/verify`` requests the service answers, and how fast, under load.

What it does: starts ``quotebound serve`` (``--workers`` 1, then 2 processes, the extractive
provider, SQLite in a temporary directory) on a free loopback port, creates an API key, and
sends the same realistic verify request over and over: the working set and answer of
``benchmarks/verify_speed.py`` (20 sources of about 1.5 KB, 8 claims, 11 citations, two of
which fail), about 33 KB of JSON. For each level of 1, 8 and 32 concurrent clients (each a
keep-alive connection sending its next request as soon as the last is answered) it runs for a
fixed time and prints requests/s and p50/p99 latency. The verdict is checked before timing.

The load generator is Python (httpx, asyncio) on the same machine, so on 2 cores it takes
CPU from the server: the figures are a floor for what the server does alone.

Run it from the repository root::

    .venv/bin/python benchmarks/server_load.py [--seconds 8] [--levels 1,8,32] [--workers 1,2]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quotebound.store import open_store
from verify_speed import make_answer, make_sources


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


async def _level(
    base: str, secret: str, payload: bytes, clients: int, seconds: float
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    client = httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30)
    async with client:
        for _ in range(min(clients, 4)):  # warm the connections and the server
            await client.post("/v1/verify", content=payload)
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                r = await client.post("/v1/verify", content=payload)
                latencies.append(time.perf_counter() - started)
                errors += r.status_code != 200

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
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="time per level")
    parser.add_argument("--levels", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--workers", default="1,2", help="server processes, comma-separated")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    rows = [row for w in (int(n) for n in args.workers.split(",")) for row in _run(args, levels, w)]
    payload_kb = len(json.dumps(_body()).encode()) / 1024
    print(
        f"# POST /v1/verify, {payload_kb:.1f} KB body (20 sources, 8 claims, 11 "
        f"citations); {args.seconds:g} s per level"
    )
    print(
        f"# {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; uvicorn worker processes as listed; client on the same machine"
    )
    print()
    print("| workers | clients | requests | requests/s | p50 ms | p99 ms | errors |")
    print("|--------:|--------:|---------:|-----------:|-------:|-------:|-------:|")
    for r in rows:
        print(
            f"| {r['workers']:>7} | {r['clients']:>7} | {r['requests']:>8} | {r['rps']:>10.0f} | "
            f"{r['p50_ms']:>6.2f} | {r['p99_ms']:>6.2f} | {r['errors']:>6} |"
        )
    return 0


def _run(args: argparse.Namespace, levels: list[int], workers: int) -> list[dict[str, Any]]:
    """Every level against one server of ``workers`` processes."""
    body = _body()
    payload = json.dumps(body).encode()
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'bench.db'}"
        with open_store(url) as store:
            secret = store.create_key(name="server_load")[1]
        port = _free_port()
        proc = _start(url, port, home, workers)
        base = f"http://127.0.0.1:{port}"
        try:
            check = httpx.post(
                f"{base}/v1/verify",
                content=payload,
                timeout=30,
                headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
            )
            verdict = check.json()
            assert check.status_code == 200 and verdict["status"] == "partial", verdict
            assert verdict["counts"]["kept"] == 7 and verdict["counts"]["citations"] == 11
            rows = [asyncio.run(_level(base, secret, payload, n, args.seconds)) for n in levels]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return [{"workers": workers, **r} for r in rows]


if __name__ == "__main__":
    raise SystemExit(main())
