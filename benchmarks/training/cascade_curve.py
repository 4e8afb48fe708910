"""The cascade's accuracy/speed curve: how many pairs go to the judge, and what that buys.

The fast checker's probability is computed for every pair the judge cache holds
(``python -m benchmarks.training.judge_quality score``); the judge's P(yes) is read from that
cache. For a band
``[low, high)`` around the fast checker's threshold, a pair inside the band is decided by the
judge at its fitted threshold, one outside by the fast checker, exactly as
``quotebound.entailment.cascade.CascadeBackend`` does. Per band: balanced accuracy, the share
sent to the judge, and the pairs/s that implies (``1 / (1/fast + share * judge seconds)``, the
two rates measured on the cache's own rows).

    fit     choose the band on the **dev** cache: the best balanced accuracy among the bands
            that send at most ``--max-judged`` of the pairs to the judge (ties: the narrower),
            and write it to ``calibration.json`` (``cascade``)
    curve   print the curve of a split's cache (``--split test`` reads the test cache; it
            never writes anything)

    .venv/bin/python -m benchmarks.training.cascade_curve fit
    .venv/bin/python -m benchmarks.training.cascade_curve curve --split test
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import CALIBRATION, bootstrap, read_cache
from benchmarks.training.judge_quality import DEV_SAMPLE, cache_path, pairs_of
from quotebound.entailment.judge import JUDGE_MODEL, fitted_threshold
from quotebound.entailment.learned import FastChecker
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion

LABELS = ("supported", "not_supported")
WIDTHS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)


def rows_with_fast(
    split: str, model: str, prompt: str = "plain"
) -> tuple[list[dict[str, Any]], float, float]:
    """The judge cache of ``split`` with each row's fast probability, and the fast checker's
    and the judge's pairs/s on those rows."""
    rows = {r["id"]: r for r in read_cache(cache_path(split, model, prompt))}
    sample = DEV_SAMPLE if split == "dev" else None
    pairs = [p for p in pairs_of(split, sample) if p.id in rows]
    checker = FastChecker()
    try:
        checker.judge_many([(pairs[0].claim, pairs[0].quote)])  # the encoder's first call
        started = time.perf_counter()
        judged = []
        for i in range(0, len(pairs), 16):  # in batches, as the tier and eval call it
            judged += checker.judge_many([(p.claim, p.quote) for p in pairs[i : i + 16]])
        fast_rate = len(pairs) / (time.perf_counter() - started)
    finally:
        checker.close()
    out = []
    for pair, j in zip(pairs, judged, strict=True):
        row = dict(rows[pair.id])
        row["fast"] = j.p_supported
        row["fast_label"] = j.label
        out.append(row)
    judge_rate = len(out) / sum(r["seconds"] for r in out)
    return out, fast_rate, judge_rate


def decide(
    rows: Sequence[dict[str, Any]], low: float, high: float, judge_t: float
) -> tuple[list[str], int]:
    preds, judged = [], 0
    for r in rows:
        f = r["fast"]
        if f is not None and (f >= high or f < low):
            ok = r["fast_label"] == "supported"
        else:
            judged += 1
            ok = r["p"] is not None and r["p"] >= judge_t
        preds.append("supported" if ok else "not_supported")
    return preds, judged


def curve(
    rows: Sequence[dict[str, Any]], fast_rate: float, judge_rate: float
) -> list[dict[str, Any]]:
    from quotebound.entailment.learned import shipped_weights

    fast_t = shipped_weights().threshold
    judge_t = fitted_threshold(JUDGE_MODEL) or 0.5
    gold = [r["gold"] for r in rows]
    out = []
    for w in WIDTHS:
        low, high = max(0.0, fast_t - w), min(1.0, fast_t + w)
        if w == 0.0:
            low = high = fast_t
        preds, judged = decide(rows, low, high, judge_t)
        share = judged / len(rows)
        rate = 1.0 / (1.0 / fast_rate + share / judge_rate)
        bacc = balanced_accuracy_of(confusion(gold, preds, LABELS))
        out.append(
            {
                "width": w,
                "low": round(low, 4),
                "high": round(high, 4),
                "share": share,
                "balanced_accuracy": bacc,
                "pairs_per_second": rate,
            }
        )
    judge_only = [
        "supported" if r["p"] is not None and r["p"] >= judge_t else "not_supported" for r in rows
    ]
    out.append(
        {
            "width": None,
            "low": 0.0,
            "high": 1.01,
            "share": 1.0,
            "balanced_accuracy": balanced_accuracy_of(confusion(gold, judge_only, LABELS)),
            "pairs_per_second": 1.0 / (1.0 / fast_rate + 1.0 / judge_rate),
        }
    )
    return out


def show(points: Sequence[dict[str, Any]], n: int) -> None:
    print(f"n={n}")
    print(f"{'band':>16} {'to judge':>9} {'bal.acc':>8} {'pairs/s':>8}")
    for p in points:
        band = "judge only" if p["width"] is None else f"[{p['low']:.3f}, {p['high']:.3f})"
        print(
            f"{band:>16} {p['share']:>9.1%} {p['balanced_accuracy']:>8.3f} "
            f"{p['pairs_per_second']:>8.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("fit", "curve"))
    parser.add_argument("--split", choices=("dev", "test", "wice"), default="dev")
    parser.add_argument("--model", default=JUDGE_MODEL)
    parser.add_argument("--max-judged", type=float, default=0.5)
    parser.add_argument("--prompt", choices=("plain", "shots"), default="plain")
    args = parser.parse_args()
    split = "dev" if args.command == "fit" else args.split
    rows, fast_rate, judge_rate = rows_with_fast(split, args.model, args.prompt)
    points = curve(rows, fast_rate, judge_rate)
    print(f"{split}: fast {fast_rate:.1f} pairs/s, judge {judge_rate:.2f} pairs/s on these rows")
    show(points, len(rows))
    if args.command == "curve":  # the shipped band, with its interval and per sub-source
        from quotebound.entailment.cascade import shipped_band

        low, high = shipped_band()
        judge_t = fitted_threshold(args.model) or 0.5
        groups: dict[str, list[dict[str, Any]]] = {"all": rows}
        for r in rows:
            if r.get("source"):
                groups.setdefault(r["source"], []).append(r)
        print(f"shipped band [{low}, {high}):")
        for name, group in groups.items():
            preds, judged = decide(group, low, high, judge_t)
            gold = [r["gold"] for r in group]
            bacc = balanced_accuracy_of(confusion(gold, preds, LABELS))
            lo, hi = bootstrap(gold, preds)
            print(
                f"{name:>22} n={len(group):>4} balanced accuracy {bacc:.3f} [{lo:.3f}, {hi:.3f}]"
                f"  to judge {judged / len(group):.1%}"
            )
    if args.command == "fit":
        allowed = [p for p in points if p["width"] is not None and p["share"] <= args.max_judged]
        best = max(allowed, key=lambda p: (p["balanced_accuracy"], -p["width"]))
        data = json.loads(Path(CALIBRATION).read_text("utf-8"))
        data["cascade"] = {
            "low": best["low"],
            "high": best["high"],
            "fitted_on": f"AttributionBench dev, the {len(rows)} rows of the judge's dev "
            "sample, by python -m benchmarks.training.cascade_curve fit "
            f"(at most {args.max_judged:.0%} sent to the judge)",
            "dev_balanced_accuracy": round(best["balanced_accuracy"], 4),
            "dev_share_judged": round(best["share"], 4),
        }
        Path(CALIBRATION).write_text(json.dumps(data, indent=2) + "\n", "utf-8")
        print(f"band [{best['low']}, {best['high']}) written to {CALIBRATION}")


if __name__ == "__main__":
    main()
