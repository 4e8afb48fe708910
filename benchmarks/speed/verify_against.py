"""``verify``'s time per answer on this build against another build, in the same run.

The workload is ``verify_speed.py``'s (20 policy-like sources, one JSON answer of 8 claims and
11 citations, two of them failing), verified warm against a prepared working set
(``WorkingSet(...).prepare()``), ``re``'s cache cleared before each call. Each build runs in
its own process (a build is a ``src`` folder on ``PYTHONPATH``: another checkout, or a
``git worktree`` of an older commit), the two alternating ``--rounds`` times so that the
machine's noise falls on both; each round prints the median µs per answer of that process.
The table gives each build's median over the rounds and the ratio other / this, with its range
over the paired rounds.

    git worktree add /tmp/before <commit>
    .venv/bin/python -m benchmarks.speed.verify_against /tmp/before/src
    .venv/bin/python -m benchmarks.speed.verify_against /tmp/before/src --format inline
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.common import ROOT

# Run in the build's own process: prints the median seconds of one warm verify of the answer.
_CHILD = """
import json, re, sys
sys.path.insert(0, {root!r})
import benchmarks.speed.workload as vs
from quotebound import WorkingSet, verify
sources = vs.make_sources(vs.BASE_SOURCES)
raw = vs.make_answer(sources).raw
fmt = {fmt!r}
if fmt == "inline":  # the same claims, each with markers to its sources (no quotes)
    data = json.loads(raw)
    ids = [s.id for s in sources]
    raw = " ".join(
        c["text"].rstrip(".") + " " + "".join(f"[{{x['source']}}]" for x in c["citations"]) + "."
        for c in data["claims"]
    )
ws = WorkingSet(sources).prepare()
print(vs.median_seconds(vs.unseen(lambda: verify(ws, raw, fmt))))
"""


def run_once(src: Path, fmt: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = _CHILD.format(root=str(ROOT), fmt=fmt)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the other build's src folder")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--format", default="json", choices=("json", "inline"))
    args = parser.parse_args()
    mine_src = ROOT / "src"
    mine: list[float] = []
    other: list[float] = []
    for k in range(args.rounds):
        order = [(mine_src, mine), (args.other, other)]
        for src, into in order if k % 2 == 0 else reversed(order):
            into.append(run_once(src, args.format) * 1e6)
        print(f"round {k + 1}: this {mine[-1]:.0f} µs, other {other[-1]:.0f} µs", flush=True)
    ratios = sorted(o / m for m, o in zip(mine, other, strict=True))
    print(f"\n| build | µs per answer (median of {args.rounds}) |\n|---|---:|")
    print(f"| this ({mine_src}) | {statistics.median(mine):.0f} |")
    print(f"| other ({args.other}) | {statistics.median(other):.0f} |")
    print(
        f"\nother / this: {statistics.median(ratios):.2f}x "
        f"(paired rounds {ratios[0]:.2f}-{ratios[-1]:.2f}), format {args.format}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
