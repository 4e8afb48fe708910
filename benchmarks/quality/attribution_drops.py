"""What the code checks alone drop from real models' claims that people labelled.

AttributionBench (``../shared/data/attributionbench``: claims written by GPT-3.5, GPT-4 and
Bing-style systems, each with the references it cites, labelled attributable or not by human
annotators) read as ``quotebound eval`` reads it (``evaluation.loaders``: the claim with its
markers taken out, its references joined as the one source it cites), and verified with the
code checks only (no entailment tier), as an answer in the ``cites`` format: the whole claim is
one claim citing that source, which is its evidence (no quote).

Per file and sub-source it prints the share of **attributable** claims dropped (each one is a
grounded claim the checker would take from a user), by reason, and the share of **not
attributable** claims dropped (what the code checks catch without a model), once with the
default policy (writing faults are notes: ``Policy.strict`` off) and once under
``Policy(strict=True)``, which is what ``verify`` did by default before writing faults became
notes. Nothing is fitted here: the sets are only read.

    .venv/bin/python -m benchmarks.quality.attribution_drops
    .venv/bin/python -m benchmarks.quality.attribution_drops --examples 5  # and dropped claims
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import SHARED_DATA, wilson
from quotebound import Policy, Source, WorkingSet, verify
from quotebound.evaluation import load_dataset
from quotebound.evaluation.loaders import PairExample

DATA = SHARED_DATA / "attributionbench"
FILES = ("dev_all_subset_balanced.jsonl", "test_all_subset_balanced_sampled500.jsonl")
WRITING = frozenset({"claim_fragment"})


def reason_of(pair: PairExample, policy: Policy) -> str | None:
    """Why the code checks drop the claim (its reason, or its first citation's), or None."""
    ws = WorkingSet([Source("S1", pair.quote)])
    verdict = verify(ws, json.dumps({"answer": pair.claim, "cites": ["S1"]}), "cites", policy)
    if not verdict.claims:
        return verdict.status
    claim = verdict.claims[0]
    if claim.kept:
        return None
    cited = [c.reason for c in claim.citations if c.reason]
    if claim.reason == "no_valid_citation" and cited:
        return cited[0]
    return claim.reason


def _pct(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the attributionbench folder")
    parser.add_argument("--examples", type=int, default=0, help="dropped attributable claims shown")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"needs the public data set in {args.data}")
    try:
        policies = {"default": Policy(), "strict": Policy(strict=True)}
    except TypeError:  # a build before ``strict`` (run with PYTHONPATH=its src): its default
        policies = {"default": Policy()}
    for name in FILES:
        pairs = load_dataset([args.data / name], "attributionbench").pairs
        print(f"\n## {name} ({len(pairs)} claims)\n")
        print(
            "| sub-source | policy | attributable n | attributable dropped | by reason | "
            "not attributable n | not attributable dropped |"
        )
        print("|---|---|---:|---|---|---:|---|")
        groups: dict[str, list[PairExample]] = defaultdict(list)
        for pair in pairs:
            groups[pair.group or "?"].append(pair)
        groups["all"] = list(pairs)
        shown: list[tuple[str, str]] = []
        for group, members in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
            for label, policy in policies.items():
                good = [p for p in members if p.gold == "supported"]
                bad = [p for p in members if p.gold != "supported"]
                reasons = Counter(r for p in good if (r := reason_of(p, policy)) is not None)
                caught = sum(reason_of(p, policy) is not None for p in bad)
                dropped = sum(reasons.values())
                writing = sum(v for k, v in reasons.items() if k in WRITING)
                by = ", ".join(f"{k} {v}" for k, v in reasons.most_common())
                print(
                    f"| {group} | {label} | {len(good)} | {_pct(dropped, len(good))} "
                    f"(writing {_pct(writing, len(good))}) | {by or '-'} | {len(bad)} | "
                    f"{_pct(caught, len(bad))} |"
                )
                if group == "all" and label == "default" and args.examples:
                    for p in good:
                        r = reason_of(p, policy)
                        if r is not None and len(shown) < args.examples:
                            shown.append((r, p.claim))
        for reason, claim in shown:
            print(f"- {reason}: {' '.join(claim.split())[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
