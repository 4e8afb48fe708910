"""Is verification linear in the answer? ``verify`` on 10 KB, 100 KB and 1 MB answers of each
output format, timed, with the cost per KB and the 1 MB / 10 KB ratio (100 is linear; a
quadratic parser would show 10,000).

Each answer is ordinary cited text made by repeating one paragraph of a few claims, in the
format's own shape, against a working set of three sources:

- ``json``: the JSON claims contract (a claim with a quote per citation);
- ``inline``: prose with ``[S1]`` markers and no blank line anywhere (one paragraph: the case
  that was quadratic before the one sentence splitter);
- ``evidence``: ``<evidence>`` blocks, then the answer with markers;
- ``cites``: sentences with a ``cites: [...]`` field.

Plus two hostile shapes: one 1 MB word with a stop at its end (``inline``), and 1 MB of
sentence stops with no letter between them. Each figure is the best of three runs (the first
call's caches are what a real answer meets too, so every run verifies a fresh working set).

Run it from the repository root (about a minute on two cores)::

    .venv/bin/python -m benchmarks.speed.parse_speed
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable

from quotebound import Source, WorkingSet, verify

SOURCES = [
    Source(
        "S1",
        "Employees are entitled to 16 weeks of paid parental leave unless local law provides more.",
    ),
    Source(
        "S2",
        "In Germany, the company tops up statutory parental allowance to full salary "
        "for the first 14 weeks.",
    ),
    Source("S3", "Contractors are not eligible for company-paid parental leave."),
]
SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}


def _json(size: int) -> str:
    claim = {
        "text": "Employees get 16 weeks of paid parental leave.",
        "citations": [{"source": "S1", "quote": "entitled to 16 weeks of paid parental leave"}],
    }
    one = len(json.dumps(claim)) + 2
    return json.dumps({"answerable": True, "claims": [claim] * max(1, size // one)})


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def _inline(size: int) -> str:
    unit = (
        "Employees get 16 weeks of paid parental leave [S1]. In Germany the company tops up "
        "pay for the first 14 weeks [S2]. Contractors are not eligible [S3]. "
    )
    return _repeat(unit, size)


def _evidence(size: int) -> str:
    unit = "<evidence>[S1] Employees are entitled to 16 weeks of paid parental leave</evidence>\n"
    return _repeat(unit, size, tail="Employees get 16 weeks of paid parental leave [S1].")


def _cites(size: int) -> str:
    unit = "Employees get 16 weeks of paid parental leave.\ncites: [S1]\n"
    return _repeat(unit, size)


SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "json": ("json", _json),
    "inline, one paragraph": ("inline", _inline),
    "evidence": ("evidence", _evidence),
    "cites": ("cites", _cites),
    "inline, one long word": ("inline", lambda n: "a" * n + " x. [S1]"),
    "auto, stops only": ("auto", lambda n: ". " * (n // 2)),
}


def _best(raw: str, fmt: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        ws = WorkingSet(SOURCES)
        started = time.perf_counter()
        verify(ws, raw, fmt)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    print("quotebound: verify time by answer size and format (best of 3)")
    print(f"python {platform.python_version()} on {platform.machine()}")
    print()
    header = (
        f"{'answer':<24}"
        + "".join(f"{s:>12}" for s in SIZES)
        + f"{'µs/KB 1MB':>12}{'1MB/10KB':>10}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, (fmt, make) in SHAPES.items():
        seconds = [_best(make(n), fmt) for n in SIZES.values()]
        ratio = seconds[-1] / seconds[0]
        worst = max(worst, ratio)
        cells = "".join(f"{s * 1000:>10.1f}ms" for s in seconds)
        print(f"{name:<24}{cells}{seconds[-1] * 1e6 / 1000:>12.1f}{ratio:>10.0f}")
    print()
    print(f"largest 1 MB / 10 KB ratio: {worst:.0f} (linear: 100; quadratic: 10,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
