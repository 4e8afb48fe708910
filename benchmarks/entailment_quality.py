"""Entailment backends on AttributionBench: balanced accuracy, F1, pairs per second.

Each row is one (claim, quote) pair: the row's ``claim`` against its ``references`` joined by a
space; the gold label is binary (``attributable`` = supported, anything else = not). A backend
counts as saying "supported" when its judgement is ``supported`` with no error; ``contradicted``,
``unrelated`` and failed checks all count as "not supported". Reported per backend:

- balanced accuracy: the mean of recall on attributable and on not-attributable rows;
- F1 of the supported class, and macro F1 over the two classes;
- the label counts and failed checks (judge: provider errors and unparseable output);
- pairs per second: the pairs over the wall time of ``judge_many`` (model loading excluded).

Thresholds of the heuristic were chosen on the dev file only (``--split dev --sweep``); the test
file is the 500-row in-distribution sample. Run from the repository root:

    .venv/bin/python benchmarks/entailment_quality.py                      # heuristic, test
    .venv/bin/python benchmarks/entailment_quality.py --backends heuristic judge --judge-limit 100
    .venv/bin/python benchmarks/entailment_quality.py --split dev --sweep  # threshold sweep
    .venv/bin/python benchmarks/entailment_quality.py --backends nli --model-path DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from quotebound.entailment import Judgement, make_backend

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "attributionbench"
FILES = {
    "dev": "dev_all_subset_balanced.jsonl",
    "test": "test_all_subset_balanced_sampled500.jsonl",
}


def load(split: str, data_dir: Path) -> list[tuple[str, str, bool]]:
    rows = []
    with open(data_dir / FILES[split], encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            quote = " ".join(row["references"])
            rows.append((row["claim"], quote, row["attribution_label"] == "attributable"))
    return rows


def scores(gold: Sequence[bool], pred: Sequence[bool]) -> dict[str, float]:
    tp = sum(g and p for g, p in zip(gold, pred, strict=True))
    tn = sum(not g and not p for g, p in zip(gold, pred, strict=True))
    fp = sum(not g and p for g, p in zip(gold, pred, strict=True))
    fn = sum(g and not p for g, p in zip(gold, pred, strict=True))

    def f1(t: int, false_pos: int, false_neg: int) -> float:
        return 2 * t / (2 * t + false_pos + false_neg) if t else 0.0

    pos, neg = tp + fn, tn + fp
    bacc = ((tp / pos if pos else 0.0) + (tn / neg if neg else 0.0)) / 2
    f1_pos, f1_neg = f1(tp, fp, fn), f1(tn, fn, fp)
    return {"bacc": bacc, "f1": f1_pos, "macro_f1": (f1_pos + f1_neg) / 2}


def run(
    name: str, rows: Sequence[tuple[str, str, bool]], args: argparse.Namespace
) -> dict[str, object]:
    t0 = time.perf_counter()
    backend = make_backend(name, model_path=args.model_path)
    load_s = time.perf_counter() - t0
    pairs = [(claim, quote) for claim, quote, _ in rows]
    t0 = time.perf_counter()
    judgements: list[Judgement] = []
    for start in range(0, len(pairs), args.batch):
        judgements += backend.judge_many(pairs[start : start + args.batch])
        print(f"\r  {name}: {len(judgements)}/{len(pairs)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    elapsed = time.perf_counter() - t0
    backend.close()
    gold = [g for _, _, g in rows]
    result: dict[str, object] = {
        "backend": name, "version": backend.version, "rows": len(rows),
        **scores(gold, [j.supported for j in judgements]),
        "labels": dict(Counter(j.label for j in judgements)),
        "failed": sum(j.error is not None for j in judgements),
        "pairs_per_s": len(pairs) / elapsed, "load_s": load_s,
    }  # fmt: skip
    return result


def sweep(rows: Sequence[tuple[str, str, bool]]) -> None:
    """Heuristic thresholds on the given rows: similarity cut-off, and the rules' coverage."""
    from quotebound.entailment.heuristic import OVERLAP, HeuristicBackend, mismatch

    backend = HeuristicBackend()
    gold = [g for _, _, g in rows]
    t0 = time.perf_counter()
    sims = backend.similarities([(c, q) for c, q, _ in rows])
    print(f"similarities of {len(rows)} pairs in {time.perf_counter() - t0:.1f}s")
    print("similarity  bacc    f1      (similarity alone)")
    best = (0.0, 0.0)
    for step in range(30, 81):
        cut = step / 100
        s = scores(gold, [x >= cut for x in sims])
        best = max(best, (s["bacc"], cut))
        if step % 5 == 0:
            print(f"{cut:10.2f}  {s['bacc']:.4f}  {s['f1']:.4f}")
    print(f"best similarity cut-off {best[1]:.2f}: balanced accuracy {best[0]:.4f}")
    print("overlap  fired  of them not attributable  bacc(with best cut-off)")
    for overlap in (0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        fired = [mismatch(c, q, overlap) is not None for c, q, _ in rows]
        bad = sum(f and not g for f, g in zip(fired, gold, strict=True))
        pred = [x >= best[1] and not f for x, f in zip(sims, fired, strict=True)]
        mark = " (default)" if overlap == OVERLAP else ""
        print(f"{overlap:7.1f}  {sum(fired):5d}  {bad:5d}  {scores(gold, pred)['bacc']:.4f}{mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", choices=sorted(FILES), default="test")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--backends", nargs="+", default=["heuristic"])
    parser.add_argument("--limit", type=int, default=None, help="first N rows for every backend")
    parser.add_argument("--judge-limit", type=int, default=100, help="first N rows for judge")
    parser.add_argument("--model-path", default=None, help="the NLI model directory")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sweep", action="store_true", help="heuristic threshold sweep")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    rows = load(args.split, args.data)[: args.limit]
    if args.sweep:
        sweep(rows)
        return
    results = []
    for name in args.backends:
        subset = rows[: args.judge_limit] if name == "judge" else rows
        results.append(run(name, subset, args))
    print(f"AttributionBench {FILES[args.split]}")
    print(f"{'backend':10} {'rows':>5} {'bal.acc':>8} {'F1':>7} {'macroF1':>8} "
          f"{'pairs/s':>8} {'failed':>6}  labels / version")  # fmt: skip
    for r in results:
        print(
            f"{r['backend']!s:10} {r['rows']:>5} {r['bacc']:>8.3f} {r['f1']:>7.3f} "
            f"{r['macro_f1']:>8.3f} {r['pairs_per_s']:>8.2f} {r['failed']:>6}  "
            f"{r['labels']} {r['version']}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
