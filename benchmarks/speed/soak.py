"""A bounded soak of the service, with a worker killed in the middle.

What it does: ingests ``examples/handbook`` into a temporary SQLite store, starts ``quotebound
serve --workers 2 --provider extractive`` on a free loopback port, and runs ``--clients``
concurrent clients for ``--seconds`` (default 120): each request is, at random (seeded), a
``POST /v1/verify`` (60%), a ``POST /v1/ask`` (30%; each writes a trace) or a trace read
(10%: the list, then one trace). Halfway through, one worker gets ``kill -9``; uvicorn's
supervisor starts another. Afterwards every trace that an answer named before the kill is read
back, over HTTP and from the store.

It prints, per request kind: requests, errors, p50 and p99; the errors in the second after the
kill (connections the killed worker held) apart from the rest; the server's resident memory
(supervisor and workers together) after warm-up and at the end; and the traces checked.
Traffic goes to 127.0.0.1 only, and the run stops by itself.

Run it from the repository root (two cores: about --seconds plus 20 s)::

    .venv/bin/python -m benchmarks.speed.soak [--seconds 120] [--clients 8] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import ROOT

QUESTIONS = [
    "Are contractors eligible for parental leave?",
    "Who can contractors ask about benefits?",
    "Do contractors get paid leave?",
    "What benefits do contractors have?",
]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    kill_window_errors: int = 0
    traces_before_kill: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _workers(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return sorted(found)


def _server_rss(pid: int) -> int:
    return _rss_kb(pid) + sum(_rss_kb(w) for w in _workers(pid))


def _quotebound(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "quotebound", *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"quotebound {args[0]} failed: {done.stderr}")
    return done.stdout


def _verify_body() -> bytes:
    text = (ROOT / "examples" / "handbook" / "contractors.txt").read_text(encoding="utf-8")
    sources = [{"id": "S1", "text": text}]
    sentence = text.split(".")[0].strip()
    output = {
        "answerable": True,
        "claims": [{"text": sentence + ".", "citations": [{"source": "S1", "quote": sentence}]}],
    }
    return json.dumps({"sources": sources, "output": json.dumps(output)}).encode()


async def _client(
    n: int, base: str, key: str, until: float, kill_at: list[float], tally: Tally, seed: int
) -> None:
    rng = random.Random(seed * 1000 + n)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    verify = _verify_body()
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        while time.monotonic() < until:
            roll = rng.random()
            kind = "verify" if roll < 0.6 else "ask" if roll < 0.9 else "trace"
            started = time.monotonic()
            ok = False
            try:
                if kind == "verify":
                    r = await client.post("/v1/verify", content=verify)
                elif kind == "ask":
                    body = {"question": rng.choice(QUESTIONS)}
                    r = await client.post("/v1/ask", content=json.dumps(body))
                    answered = r.status_code == 200 and r.json().get("trace_id")
                    if answered and (not kill_at or started < kill_at[0]):
                        tally.traces_before_kill.append(r.json()["trace_id"])
                else:
                    r = await client.get("/v1/traces")
                    listed = r.json().get("traces", []) if r.status_code == 200 else []
                    if listed:
                        r = await client.get(f"/v1/traces/{listed[0]['id']}")
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            took = time.monotonic() - started
            tally.latencies.setdefault(kind, []).append(took)
            if not ok:
                if kill_at and kill_at[0] - 0.1 <= started <= kill_at[0] + 1.0:
                    tally.kill_window_errors += 1
                else:
                    tally.errors[kind] = tally.errors.get(kind, 0) + 1


async def _load(args: argparse.Namespace, base: str, key: str, server: int) -> dict[str, Any]:
    tally = Tally()
    kill_at: list[float] = []
    start = time.monotonic()
    until = start + args.seconds

    async def killer() -> None:
        await asyncio.sleep(args.seconds / 2)
        victim = _workers(server)[0]
        kill_at.append(time.monotonic())
        os.kill(victim, signal.SIGKILL)
        kill_at.append(victim)

    clients = [_client(n, base, key, until, kill_at, tally, args.seed) for n in range(args.clients)]
    await asyncio.gather(killer(), *clients)
    return {"tally": tally, "victim": kill_at[1] if len(kill_at) > 1 else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(home) / 'soak.db'}"
        env = dict(os.environ, QUOTEBOUND_HOME=home)
        _quotebound(
            "ingest", str(ROOT / "examples" / "handbook"), "--corpus", "hr", "--store", url, env=env
        )
        key = json.loads(_quotebound("keys", "create", "--store", url, "--json", env=env))
        secret = key["secret"]
        port = _free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "quotebound",
                "serve",
                "--provider",
                "extractive",
                "--store",
                url,
                "--port",
                str(port),
                "--workers",
                "2",
                "--entailment",  # the service as measured in the README: code checks only
                "off",
                "--answer-check",
                "off",
                "--fallback",
                "off",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while len(_workers(server.pid)) < 2 or not _up(base):
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start within 30 s")
                time.sleep(0.2)
            rss_start = _server_rss(server.pid)
            result = asyncio.run(_load(args, base, secret, server.pid))
            rss_end = _server_rss(server.pid)
            tally: Tally = result["tally"]
            headers = {"Authorization": f"Bearer {secret}"}
            over_http = sum(
                httpx.get(f"{base}/v1/traces/{t}", headers=headers, timeout=30).status_code == 200
                for t in tally.traces_before_kill
            )
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        from quotebound.store import open_store

        with open_store(url) as store:
            in_store = len(store.get_traces(tally.traces_before_kill, owner=key["id"]))
    _report(args, tally, rss_start, rss_end, over_http, in_store, result["victim"])
    return 0


def _up(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _report(
    args: argparse.Namespace,
    tally: Tally,
    rss_start: int,
    rss_end: int,
    over_http: int,
    in_store: int,
    victim: Any,
) -> None:
    print(
        f"# soak: {args.seconds:g} s, {args.clients} clients, 2 workers, worker {victim} "
        f"killed (-9) at {args.seconds / 2:g} s; loopback, extractive provider, SQLite"
    )
    print()
    print("| requests | count | errors | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for kind, values in sorted(tally.latencies.items()):
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(
            f"| {kind} | {len(values)} | {tally.errors.get(kind, 0)} | "
            f"{statistics.median(values) * 1000:.1f} | {p99 * 1000:.1f} |"
        )
    print()
    print(
        f"errors in the second after the kill (the killed worker's connections): "
        f"{tally.kill_window_errors}"
    )
    print(
        f"server memory (supervisor + workers, RSS): {rss_start / 1024:.0f} MB after warm-up, "
        f"{rss_end / 1024:.0f} MB at the end"
    )
    n = len(tally.traces_before_kill)
    print(
        f"traces answered before the kill: {n}; read back over HTTP {over_http}, "
        f"from the store {in_store}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
