"""The price of the relevance rule (``unrelated_evidence``): how many citations a careful
reader would keep does it drop, and how many unrelated sentences does it catch?

WiCE dev (``../shared/data/wice/claim_dev.jsonl``): for every claim labelled supported or
partially supported, each gold supporting sentence is a citation of that claim a reader keeps,
and each other sentence of the same evidence one that the annotators did not mark. The rule is
applied to each as if it were the claim's only quote. AttributionBench (dev and test-500):
each claim against its whole reference passage, as a quote-less format would cite it.
``--show N`` prints the first N dropped gold sentences, to be read.

Run it from the repository root (seconds)::

    .venv/bin/python -m benchmarks.studies.relevance_price [--show 200]

Recorded (a study, done, 2026-12-01): the table of docs/evaluation.md, "The relevance rule's
price (``unrelated_evidence``)": WiCE dev gold sentences dropped 145 of 1,450 (10.0%), other
sentences 26,823 of 35,880 (74.8%); AttributionBench attributable claims dropped 0 of 599 (dev)
and 1 of 250 (test-500).
"""

from __future__ import annotations

import argparse
import json

from benchmarks.common import SHARED_DATA
from quotebound.text import normalize
from quotebound.text.words import content_words

DATA = SHARED_DATA


def shares(claim: str, evidence: str) -> bool | None:
    wanted = content_words(normalize(claim))
    return None if not wanted else not wanted.isdisjoint(content_words(normalize(evidence)))


def wice(show: int) -> None:
    gold = gold_dropped = other = other_dropped = 0
    shown: list[tuple[str, str]] = []
    for line in (DATA / "wice" / "claim_dev.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["label"] not in ("supported", "partially_supported"):
            continue
        marked = {i for group in row["supporting_sentences"] for i in group}
        for i, sentence in enumerate(row["evidence"]):
            ok = shares(row["claim"], sentence)
            if ok is None:
                continue
            if i in marked:
                gold += 1
                gold_dropped += not ok
                if not ok and len(shown) < show:
                    shown.append((row["claim"], sentence))
            else:
                other += 1
                other_dropped += not ok
    print(
        f"WiCE dev, gold supporting sentences: {gold_dropped} of {gold} dropped "
        f"({gold_dropped / gold:.1%})"
    )
    print(
        f"WiCE dev, other sentences of the same evidence: {other_dropped} of {other} dropped "
        f"({other_dropped / other:.1%})"
    )
    for claim, sentence in shown:
        print(f"  - claim: {claim[:110]}\n    gold:  {sentence[:160]}")


def attributionbench() -> None:
    for name in ("dev_all_subset_balanced.jsonl", "test_all_subset_balanced_sampled500.jsonl"):
        counts = {"attributable": [0, 0], "not attributable": [0, 0]}
        for line in (DATA / "attributionbench" / name).open(encoding="utf-8"):
            row = json.loads(line)
            label = (
                "attributable"
                if row["attribution_label"] == "attributable"
                else ("not attributable")
            )
            ok = shares(row["claim"], " ".join(row["references"]))
            if ok is None:
                continue
            counts[label][0] += 1
            counts[label][1] += not ok
        cells = ", ".join(f"{k}: {d} of {n} dropped" for k, (n, d) in counts.items())
        print(f"AttributionBench {name.split('_')[0]}: {cells}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", type=int, default=0, help="print this many dropped gold rows")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs the public data sets in {DATA}")
    attributionbench()
    wice(args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
