"""What ``quotebound mcp`` adds to a tool call over stdio, on top of the library call it makes.

On the example handbook (ingested into a throwaway SQLite store), the same ``search`` and
``verify`` calls are timed two ways in one run: the library's own call
(``quotebound.mcp.conversation.Conversation``, what the tool runs), and a call through the
official SDK's client (``ClientSession`` over stdio) to a ``quotebound mcp`` subprocess. The
table prints p50 and p95 of each in milliseconds and the overhead (p50 through MCP less p50 of
the library); every call's answer is checked before it counts (a search returns passages; the
answer's one claim is kept).

    .venv/bin/python -m benchmarks.speed.mcp_overhead            # --calls 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from benchmarks.common import ROOT
from quotebound.mcp.conversation import Conversation
from quotebound.store import open_store
from quotebound.store.pool import OneStore

QUERY = "parental leave weeks"
LEAVE = "Employees are entitled to 16 weeks of paid parental leave"


def _answer(sid: str) -> str:
    claim = {
        "text": "Employees get 16 weeks of paid parental leave.",
        "citations": [{"source": sid, "quote": LEAVE}],
    }
    return json.dumps({"claims": [claim]})


def _quantiles(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def library(url: str, calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"search": [], "verify": []}
    with open_store(url) as store:
        conversation = Conversation(OneStore(store))
        found = conversation.search(QUERY)
        sid = next(p["id"] for p in found["passages"] if LEAVE in p["text"])
        for _ in range(calls):
            at = time.perf_counter()
            assert conversation.search(QUERY)["passages"]
            times["search"].append((time.perf_counter() - at) * 1000)
            at = time.perf_counter()
            assert conversation.verify(_answer(sid))["kept"] == 1
            times["verify"].append((time.perf_counter() - at) * 1000)
    return times


def through_mcp(url: str, calls: int) -> dict[str, list[float]]:
    qb = str(Path(sys.executable).with_name("quotebound"))
    params = StdioServerParameters(command=qb, args=["mcp", "--store", url, "--no-ask"])
    times: dict[str, list[float]] = {"search": [], "verify": []}

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            found = await s.call_tool("search", {"query": QUERY})
            passages: list[dict[str, Any]] = (found.structured_content or {})["passages"]
            sid = next(p["id"] for p in passages if LEAVE in p["text"])
            for _ in range(calls):
                at = time.perf_counter()
                res = await s.call_tool("search", {"query": QUERY})
                assert not res.is_error
                times["search"].append((time.perf_counter() - at) * 1000)
                at = time.perf_counter()
                res = await s.call_tool("verify", {"answer": _answer(sid)})
                assert (res.structured_content or {})["kept"] == 1
                times["verify"].append((time.perf_counter() - at) * 1000)

    anyio.run(main)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each tool, each way")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qb-mcp-") as tmp:
        url = f"sqlite:///{tmp}/q.db"
        subprocess.run(
            [
                str(Path(sys.executable).with_name("quotebound")),
                "ingest",
                str(ROOT / "examples" / "handbook"),
                "--corpus",
                "handbook",
                "--store",
                url,
            ],
            check=True,
            capture_output=True,
        )
        lib = library(url, args.calls)
        mcp = through_mcp(url, args.calls)
    print(f"n = {args.calls} calls of each tool, each way (ms)\n")
    print("| tool | library p50 | library p95 | over MCP stdio p50 | p95 | overhead (p50) |")
    print("|---|---:|---:|---:|---:|---:|")
    for tool in ("search", "verify"):
        a50, a95 = _quantiles(lib[tool])
        b50, b95 = _quantiles(mcp[tool])
        print(f"| {tool} | {a50:.2f} | {a95:.2f} | {b50:.2f} | {b95:.2f} | {b50 - a50:+.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
