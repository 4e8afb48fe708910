"""Entailment backends on AttributionBench: balanced accuracy, F1, pairs per second.

It uses the same pair construction and the same metrics as ``quotebound eval``: the file is
read by ``quotebound.evaluation.load_dataset`` (each row's claim with its inline ``[n]`` markers
removed, against its references joined by blank lines; a row with no reference text is skipped
and counted) and scored by ``quotebound.evaluation.evaluate_pairs`` (``attributable`` =
supported, ``not attributable`` = not; a backend says "supported" only when its judgement is
``supported`` with no error, so ``contradicted``, ``unrelated`` and failed checks all count as
"not supported"). So ``quotebound eval FILE --backend B`` and this script give the same numbers
on the same rows. Reported per backend, each with its 95% interval where it has one:

- balanced accuracy: the mean of recall on attributable and on not-attributable rows;
- F1 of the supported class, and macro F1 over the two classes;
- failed checks (judge: provider errors and unparseable output);
- pairs per second: the pairs over the wall time of ``judge_many`` (a model the backend loads
  on its first call counts; making the backend does not, and is reported as ``load_s``).

Thresholds of the heuristic are chosen on the dev file only (``--split dev --sweep``, on the
same pairs); the test file is the 500-row in-distribution sample. Run from the repository root:

    .venv/bin/python -m benchmarks.quality.entailment_quality         # heuristic, test
    .venv/bin/python -m benchmarks.quality.entailment_quality --backends heuristic judge \\
        --judge-limit 100
    .venv/bin/python -m benchmarks.quality.entailment_quality --split dev --sweep  # thresholds
    .venv/bin/python -m benchmarks.quality.entailment_quality --backends nli --model-path DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED_DATA
from quotebound.entailment import make_backend
from quotebound.evaluation import Dataset, load_dataset
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion
from quotebound.evaluation.run import evaluate_pairs

DATA = SHARED_DATA / "attributionbench"
FILES = {
    "dev": "dev_all_subset_balanced.jsonl",
    "test": "test_all_subset_balanced_sampled500.jsonl",
}
LABELS = ("supported", "not_supported")


def load(split: str, data_dir: Path, limit: int | None = None) -> Dataset:
    """The split as ``quotebound eval`` reads it (the first ``limit`` rows)."""
    return load_dataset([data_dir / FILES[split]], "attributionbench", limit)


def run(name: str, dataset: Dataset, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    backend = make_backend(name, model_path=args.model_path)
    load_s = time.perf_counter() - t0
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        print(f"\r  {name}: {done}/{len(dataset.pairs)}", end="", file=sys.stderr)

    try:
        summary = evaluate_pairs(dataset, backend, args.seed, tick)
    finally:
        backend.close()
    print(file=sys.stderr)
    flat = summary["flat"]
    f1s = [flat["f1_supported"], flat["f1_not_supported"]]
    return {
        "backend": name,
        "version": backend.version,
        "rows": summary["examples"],
        "skipped": summary["dataset"]["skipped"],
        "bacc": flat["balanced_accuracy"],
        "f1": flat["f1_supported"],
        "macro_f1": None if None in f1s else sum(f1s) / 2,
        "bacc_interval": [
            summary["metrics"]["entailment"]["balanced_accuracy"][k] for k in ("low", "high")
        ],
        "failed": summary["metrics"]["judgement_errors"],
        "pairs_per_s": flat["pairs_per_second"],
        "load_s": load_s,
    }


def sweep(dataset: Dataset) -> None:
    """Heuristic thresholds on the given pairs: similarity cut-off, and the rules' coverage."""
    from quotebound.entailment.heuristic import OVERLAP, HeuristicBackend, mismatch

    pairs = [(p.claim, p.quote) for p in dataset.pairs]
    gold = [p.gold for p in dataset.pairs]

    def matrix(pred: Sequence[bool]) -> list[list[int]]:  # the harness's, no bootstrap
        return confusion(gold, ["supported" if x else "not_supported" for x in pred], LABELS)

    def bacc(pred: Sequence[bool]) -> float:
        return balanced_accuracy_of(matrix(pred)) or 0.0

    def f1(pred: Sequence[bool]) -> float:
        (tp, fn), (fp, _) = matrix(pred)
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    backend = HeuristicBackend()
    t0 = time.perf_counter()
    sims = backend.similarities(pairs)
    print(f"similarities of {len(pairs)} pairs in {time.perf_counter() - t0:.1f}s")
    print("similarity  bacc    f1      (similarity alone)")
    best = (0.0, 0.0)
    for step in range(30, 81):
        cut = step / 100
        pred = [x >= cut for x in sims]
        best = max(best, (bacc(pred), cut))
        if step % 5 == 0:
            print(f"{cut:10.2f}  {bacc(pred):.4f}  {f1(pred):.4f}")
    print(f"best similarity cut-off {best[1]:.2f}: balanced accuracy {best[0]:.4f}")
    print("overlap  fired  of them not attributable  bacc(with best cut-off)")
    for overlap in (0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        fired = [mismatch(c, q, overlap) is not None for c, q in pairs]
        bad = sum(f and g != "supported" for f, g in zip(fired, gold, strict=True))
        pred = [x >= best[1] and not f for x, f in zip(sims, fired, strict=True)]
        mark = " (default)" if overlap == OVERLAP else ""
        print(f"{overlap:7.1f}  {sum(fired):5d}  {bad:5d}  {bacc(pred):.4f}{mark}")


def _num(x: float | None, width: int, places: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.{places}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--split", choices=sorted(FILES), default="test")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--backends", nargs="+", default=["heuristic"])
    parser.add_argument("--limit", type=int, default=None, help="first N rows for every backend")
    parser.add_argument("--judge-limit", type=int, default=100, help="first N pairs for judge")
    parser.add_argument("--model-path", default=None, help="the NLI model directory")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    parser.add_argument("--sweep", action="store_true", help="heuristic threshold sweep")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    dataset = load(args.split, args.data, args.limit)
    if dataset.skipped:
        print(f"skipped rows: {dataset.skipped}", file=sys.stderr)
    if args.sweep:
        sweep(dataset)
        return
    results = []
    for name in args.backends:
        subset = dataset
        if name == "judge":
            subset = replace(dataset, pairs=dataset.pairs[: args.judge_limit])
        results.append(run(name, subset, args))
    print(f"AttributionBench {FILES[args.split]}")
    print(
        f"{'backend':10} {'rows':>5} {'bal.acc':>8} {'[95% CI]':>15} {'F1':>7} "
        f"{'macroF1':>8} {'pairs/s':>8} {'failed':>6}  version"
    )
    for r in results:
        low, high = r["bacc_interval"]
        ci = f"[{_num(low, 0, 3)}, {_num(high, 0, 3)}]"
        print(
            f"{r['backend']!s:10} {r['rows']:>5} {_num(r['bacc'], 8, 3)} {ci:>15} "
            f"{_num(r['f1'], 7, 3)} {_num(r['macro_f1'], 8, 3)} "
            f"{_num(r['pairs_per_s'], 8, 2)} {r['failed']:>6}  {r['version']}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
