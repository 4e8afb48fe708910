"""``quotebound mcp --http`` under load: concurrent MCP sessions calling its tools, as
``server_load`` loads ``serve``'s faces.

What it does: ingests the example handbook into a throwaway SQLite store, creates an API key,
starts ``quotebound mcp --http`` (one process: streamable HTTP, the extractive provider behind
``ask``) on a free loopback port, then for each level of ``--levels`` concurrent clients (each
its own MCP session through the official SDK's client, ``ClientSession`` over streamable HTTP,
calling its next tool as soon as the last answered) runs for ``--seconds`` per tool and prints
calls/s and p50/p99. Tools: ``verify`` (an answer with one claim, checked kept) and ``ask`` (a
question from the handbook, answered and traced: afterwards every answer's trace id is checked,
all distinct and each in the store). One ``ask`` is made before the levels: the first loads
``ask``'s parts (MiniLM), which the levels would otherwise time.

The load generator shares the machine's cores with the server: a floor for the server alone.

    .venv/bin/python -m benchmarks.speed.mcp_load [--seconds 8] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from benchmarks.common import ROOT, p95
from benchmarks.speed.mcp_overhead import LEAVE, QUERY, _answer
from kits.serverkit import free_port, listening_url
from quotebound.store import open_store

QUESTIONS = (
    "How many weeks of paid parental leave do employees get?",
    "What is the hotel cap in tier 1 cities?",
    "How soon must receipts be uploaded?",
)


async def _level(
    url: str, key: str, clients: int, seconds: float, tool: str
) -> list[dict[str, Any]]:
    """``clients`` MCP sessions calling ``tool`` for ``seconds`` (``mixed``: half of them
    ``ask``, half ``verify``); a row per tool called, with latencies and trace ids."""
    import httpx2  # the MCP SDK's HTTP client

    latencies: dict[str, list[float]] = {}
    traces: list[str] = []
    errors: dict[str, int] = {}
    deadline = 0.0

    async def client(n: int) -> None:
        mine = tool if tool != "mixed" else ("ask" if n % 2 == 0 else "verify")
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            found = await session.call_tool("search", {"query": QUERY})
            passages = (found.structured_content or {})["passages"]
            sid = next(p["id"] for p in passages if LEAVE in p["text"])
            turn = n
            while True:  # (at least one call: a level of 0 s is one call a session)
                if mine == "verify":
                    arguments = {"answer": _answer(sid)}
                else:
                    arguments = {"question": QUESTIONS[turn % len(QUESTIONS)]}
                turn += 1
                at = time.perf_counter()
                result = await session.call_tool(mine, arguments)
                latencies.setdefault(mine, []).append(time.perf_counter() - at)
                data = result.structured_content or {}
                failed = result.is_error or (
                    data.get("kept") != 1 if mine == "verify" else not data.get("trace_id")
                )
                errors[mine] = errors.get(mine, 0) + failed
                if not failed and mine == "ask":
                    traces.append(data["trace_id"])
                if time.perf_counter() >= deadline:
                    break

    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(clients):
            group.start_soon(client, n)
    elapsed = time.perf_counter() - began
    rows = []
    for name, taken in sorted(latencies.items()):
        ms = sorted(x * 1000 for x in taken)
        beside = " (beside ask)" if tool == "mixed" and name == "verify" else ""
        rows.append(
            {
                "tool": name + (" (beside verify)" if tool == "mixed" and not beside else beside),
                "clients": clients if tool != "mixed" else len(range(name == "verify", clients, 2)),
                "calls": len(ms),
                "rate": len(ms) / elapsed,
                "p50": ms[len(ms) // 2] if ms else 0.0,
                "p95": p95(ms),
                "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else 0.0,
                "errors": errors.get(name, 0),
                "traces": traces if name == "ask" else [],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="time per level")
    parser.add_argument("--levels", default="1,8,32", help="concurrent sessions, comma-separated")
    parser.add_argument(
        "--tools",
        default="verify,ask,mixed",
        help="verify, ask and/or mixed (half the sessions ask while the other half verify)",
    )
    args = parser.parse_args(argv)
    qb = str(Path(sys.executable).with_name("quotebound"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="qb-mcp-load-") as tmp:
        url = f"sqlite:///{tmp}/q.db"
        env = {"QUOTEBOUND_HOME": tmp}
        run = {"check": True, "capture_output": True, "text": True}
        subprocess.run(
            [qb, "ingest", str(ROOT / "examples" / "handbook"), "--corpus", "hr", "--store", url],
            **run,  # type: ignore[call-overload]
        )
        made = subprocess.run(
            [qb, "keys", "create", "--name", "load", "--store", url, "--json"],
            **run,  # type: ignore[call-overload]
        )
        key = json.loads(made.stdout)["secret"]
        port = free_port()
        command = [qb, "mcp", "--http", f"127.0.0.1:{port}", "--store", url]
        command += ["--provider", "extractive", "--json"]
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**__import__("os").environ, **env},
        )
        try:
            endpoint = listening_url(proc)
            anyio.run(_level, endpoint, key, 1, 0.0, "ask")  # (ask's parts loaded first)
            for tool in args.tools.split(","):
                for clients in (int(n) for n in args.levels.split(",")):
                    rows += anyio.run(_level, endpoint, key, clients, args.seconds, tool.strip())
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        traces = [t for r in rows for t in r["traces"]]
        with open_store(url) as store:
            found = [
                t for i in range(0, len(traces), 500) for t in store.get_traces(traces[i : i + 500])
            ]
            stored = store._trace_count()  # type: ignore[attr-defined]
    print(
        f"# quotebound mcp --http (one process, the extractive provider behind ask), "
        f"{args.seconds:g} s per level; client sessions on the same machine\n"
    )
    print("| tool | sessions | calls | calls/s | p50 ms | p95 ms | p99 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['tool']} | {r['clients']} | {r['calls']} | {r['rate']:.0f} | "
            f"{r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | {r['errors']} |"
        )
    distinct = len(set(traces)) == len(traces)
    print(
        f"\n# ask: {len(traces):,} answers, {len(found):,} of their traces found, ids "
        f"{'all distinct' if distinct else 'REPEATED'} ({stored:,} traces stored in all: each "
        "search and verify call is traced too)"
    )
    return 0 if distinct and len(found) == len(traces) else 1


if __name__ == "__main__":
    raise SystemExit(main())
