"""The scored judge on AttributionBench and WiCE: P(yes) per pair, the threshold fitted on dev.

The judge (``quotebound.entailment.judge``, scored mode) reads the log-probabilities of one
answer token; what it decides is ``P(yes) >= threshold``. This script keeps the expensive part,
one model call per pair, apart from the cheap one, so a threshold (or a cascade) is fitted
without running the model again:

    score  run the judge on a split's pairs and append each pair's P(yes) to a JSONL cache
           (resumable: pairs already in the cache are skipped). ``--sample N`` takes a
           label-balanced random sample (seed 0) instead of every row.
    fit    choose the threshold that maximises balanced accuracy on the **dev** cache (ties:
           the one nearest 0.5) and write it to ``src/quotebound/entailment/calibration.json``
           for the model. It never reads a test cache.
    report balanced accuracy, F1s and pairs/s of a cache at the package's threshold, overall and
           per AttributionBench sub-source, with 95% bootstrap intervals.

The pairs are those ``quotebound eval`` reads (``load_dataset``), so ``quotebound eval FILE
--backend judge`` decides every pair as ``report`` does here. Run from the repository root:

    .venv/bin/python -m benchmarks.training.judge_quality score --split dev --sample 240
    .venv/bin/python -m benchmarks.training.judge_quality fit
    .venv/bin/python -m benchmarks.training.judge_quality score --split dev --fast-band 0.35 0.72
    .venv/bin/python -m benchmarks.training.judge_quality score --split test
    .venv/bin/python -m benchmarks.training.judge_quality report --split test
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import CALIBRATION, RESULTS, SHARED_DATA, bootstrap, read_cache
from quotebound.entailment.judge import JUDGE_MODEL, SCORED_EXAMPLES, JudgeBackend, calibration
from quotebound.evaluation import load_dataset
from quotebound.evaluation.loaders import Kind, PairExample
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion

DATA = SHARED_DATA
FILES: dict[str, tuple[Path, Kind]] = {
    "dev": (DATA / "attributionbench" / "dev_all_subset_balanced.jsonl", "attributionbench"),
    "test": (
        DATA / "attributionbench" / "test_all_subset_balanced_sampled500.jsonl",
        "attributionbench",
    ),
    "wice": (DATA / "wice" / "claim_dev.jsonl", "wice"),
}
LABELS = ("supported", "not_supported")
# The label-balanced dev sample the judge's threshold and the cascade's band are fitted on. The
# dev cache may hold more rows (``score --fast-band``): those are not a balanced sample.
DEV_SAMPLE = 160


def pairs_of(split: str, sample: int | None = None) -> list[PairExample]:
    path, kind = FILES[split]
    pairs = list(load_dataset([path], kind).pairs)
    if sample is None or sample >= len(pairs):
        return pairs
    chosen: list[PairExample] = []
    for gold in LABELS:  # a seeded shuffle per label: a smaller sample is part of a larger one
        of_gold = [p for p in pairs if p.gold == gold]
        random.Random(0).shuffle(of_gold)
        chosen += of_gold[: sample // 2]
    return sorted(chosen, key=pairs.index)


def fast_probabilities(pairs: Sequence[PairExample]) -> list[float | None]:
    """The fast checker's P(supported) of each pair (None where it could not read one)."""
    from quotebound.entailment.learned import FastChecker

    checker = FastChecker()
    try:
        judged = []
        for i in range(0, len(pairs), 16):  # in batches, as the tier and eval call it
            judged += checker.judge_many([(p.claim, p.quote) for p in pairs[i : i + 16]])
    finally:
        checker.close()
    return [j.p_supported for j in judged]


def in_fast_band(pairs: Sequence[PairExample], low: float, high: float) -> list[PairExample]:
    """The pairs whose fast probability lies in ``[low, high)`` (or that the fast checker could
    not read): those a cascade with a band inside this one sends to the judge."""
    fast = fast_probabilities(pairs)
    return [p for p, f in zip(pairs, fast, strict=True) if f is None or low <= f < high]


def cache_path(split: str, model: str, prompt: str = "plain") -> Path:
    tag = "" if prompt == "plain" else f"-{prompt}"
    return RESULTS / f"judge-{model}{tag}-{split}.jsonl"


def score(args: argparse.Namespace) -> None:
    from quotebound.providers.local import LocalProvider

    pairs = pairs_of(args.split, args.sample)
    if args.fast_band:
        pairs = in_fast_band(pairs, *args.fast_band)
    path = cache_path(args.split, args.model, args.prompt)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {row["id"] for row in read_cache(path)}
    todo = [p for p in pairs if p.id not in done]
    print(f"{args.split}: {len(pairs)} pairs, {len(done)} cached, {len(todo)} to judge", flush=True)
    examples = SCORED_EXAMPLES if args.prompt == "shots" else ()
    backend = JudgeBackend(LocalProvider(model=args.model), examples=examples)
    try:
        with path.open("a", encoding="utf-8") as out:
            for n, pair in enumerate(todo, 1):
                t0 = time.perf_counter()
                j = backend.judge(pair.claim, pair.quote)
                seconds = time.perf_counter() - t0
                p = j.p_supported
                row = {
                    "id": pair.id,
                    "gold": pair.gold,
                    "source": pair.group,
                    "p": p,
                    "error": j.error,
                    "windowed": bool(j.detail and "windowed" in j.detail),
                    "seconds": round(seconds, 3),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
                if n % 10 == 0:
                    print(f"  {n}/{len(todo)}  last {seconds:.1f} s", flush=True)
    finally:
        backend.close()


def decide(rows: Sequence[dict[str, Any]], threshold: float) -> list[str]:
    """Each row's decision: supported when P(yes) reaches the threshold; a failed check
    (p None) is not supported, as the judge fails closed."""
    return [
        "supported" if r["p"] is not None and r["p"] >= threshold else "not_supported" for r in rows
    ]


def best_threshold(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The threshold with the best balanced accuracy on ``rows`` (``common.fitting``'s
    search: midpoints of the distinct values, ties to the one nearest 0.5); a failed check
    (p None) sits below every candidate, as the judge fails closed."""
    from benchmarks.common.fitting import best_threshold as search

    threshold, bacc = search(
        [-1.0 if r["p"] is None else r["p"] for r in rows],
        [1 if r["gold"] == "supported" else 0 for r in rows],
    )
    return round(threshold, 4), bacc


def dev_sample_rows(model: str, prompt: str = "plain") -> list[dict[str, Any]]:
    """The dev cache's rows of the balanced ``DEV_SAMPLE``."""
    wanted = {p.id for p in pairs_of("dev", DEV_SAMPLE)}
    return [r for r in read_cache(cache_path("dev", model, prompt)) if r["id"] in wanted]


def fit(args: argparse.Namespace) -> None:
    rows = dev_sample_rows(args.model, args.prompt)
    if not rows:
        sys.exit("no dev cache: run `score --split dev` first")
    threshold, bacc = best_threshold(rows)
    data = json.loads(CALIBRATION.read_text("utf-8"))
    data["judge"][args.model] = {
        "threshold": threshold,
        "fitted_on": f"AttributionBench dev_all_subset_balanced.jsonl, {len(rows)} rows "
        "(label-balanced sample, seed 0), by python -m benchmarks.training.judge_quality fit",
        "dev_balanced_accuracy": round(bacc, 4),
    }
    CALIBRATION.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print(f"{args.model}: threshold {threshold} (dev balanced accuracy {bacc:.3f}, n={len(rows)})")


def report(args: argparse.Namespace) -> None:
    rows = read_cache(cache_path(args.split, args.model, args.prompt))
    entry = calibration().get(args.model)
    threshold = float(entry["threshold"]) if entry else 0.5
    print(f"{args.split}, {args.model}, threshold {threshold} ({'fitted' if entry else 'default'})")
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for r in rows:
        if r.get("source"):
            groups.setdefault(r["source"], []).append(r)
    print(f"{'rows':>22} {'n':>5} {'bal.acc':>8} {'95% interval':>16} {'errors':>7} {'pairs/s':>8}")
    for name, group in groups.items():
        gold = [r["gold"] for r in group]
        pred = decide(group, threshold)
        bacc = balanced_accuracy_of(confusion(gold, pred, LABELS))
        lo, hi = bootstrap(gold, pred)
        errors = sum(r["p"] is None for r in group)
        rate = len(group) / sum(r["seconds"] for r in group)
        print(
            f"{name:>22} {len(group):>5} {bacc:>8.3f} [{lo:.3f}, {hi:.3f}] {errors:>7} {rate:>8.2f}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("score", "fit", "report"))
    parser.add_argument("--split", choices=tuple(FILES), default="dev")
    parser.add_argument("--sample", type=int, default=None)
    parser.add_argument("--model", default=JUDGE_MODEL)
    parser.add_argument(
        "--fast-band",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="score: only the pairs whose fast-checker probability lies in [LOW, HIGH)",
    )
    parser.add_argument(
        "--prompt", choices=("plain", "shots"), default="plain", help="shots: worked examples"
    )
    args = parser.parse_args(argv)
    {"score": score, "fit": fit, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
