"""The answer check on CLAPNQ: does the evidence answer the question? P(yes), fitted on rows
the answer-quality benchmark never asks.

``quotebound.entailment.judge.JudgeBackend.answers`` asks the packaged Qwen2.5-Coder-1.5B
whether a text answers a question and reads P(yes) from one token's log-probabilities. Here
the text is each CLAPNQ question's passage (windowed to the sentences nearest the question, as
the check windows an answer's quotes); CLAPNQ's unanswerable questions come with a passage on
their topic that lacks the answer, which is what the check must tell apart.

The rows are CLAPNQ dev's, **less** the ones ``benchmarks/answer_quality.py --per-split 100``
asks (so the end-to-end benchmark reports on questions the threshold never saw), split by a
seeded shuffle into a fit half and a held-out half:

    score  P(yes) for ``--per-split`` rows of each half and label (answerable, unanswerable),
           appended to a JSONL cache in benchmarks/results/ (resumable)
    fit    the threshold with the best balanced accuracy on the fit half, written to
           ``src/quotebound/entailment/calibration.json`` (``answers``); then the held-out
           half's accuracy at that threshold, with its 95% interval

    .venv/bin/python benchmarks/answer_check.py score --per-split 60
    .venv/bin/python benchmarks/answer_check.py fit

The pipeline sends the check an answer's verified quotes, not the passage. ``fit-served FILE``
fits the threshold on exactly that: FILE is ``answer_quality.py --skip 100 --answer-check
shadow --json FILE`` (questions outside every reported sample, each served answer's P(yes)
with its verified quotes as the evidence); the label is whether the question is answerable,
the threshold the best balanced accuracy over the served answers, written as ``answers``.

    .venv/bin/python benchmarks/answer_quality.py --providers local-1.5b --skip 100 \
        --per-split 40 --json /tmp/fit.json
    .venv/bin/python benchmarks/answer_check.py fit-served /tmp/fit.json
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

from answer_quality import DATA, SEED, load
from judge_quality import CALIBRATION, bootstrap, read_cache
from quotebound.entailment.judge import JUDGE_MODEL, JudgeBackend
from quotebound.evaluation.metrics import balanced_accuracy_of, confusion
from train_fast_checker import best_threshold

ROOT = Path(__file__).resolve().parents[1]
LABELS = ("supported", "not_supported")
REPORTED = (
    100  # answer_quality.py's samples up to this size (each starts the next): never fitted on
)


def rows_of(name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / f"clapnq_dev_{name}.jsonl").open()]
    asked = {item.id for item in load(REPORTED, SEED)}
    rest = [r for r in rows if r["id"] not in asked]
    random.Random(SEED + 1).shuffle(rest)
    return rest


def halves(per_split: int) -> dict[str, list[dict[str, Any]]]:
    """``fit`` and ``held_out``: ``per_split`` rows of each label in each."""
    out: dict[str, list[dict[str, Any]]] = {"fit": [], "held_out": []}
    for name in ("answerable", "unanswerable"):
        rows = rows_of(name)
        half = len(rows) // 2
        for part, chosen in (("fit", rows[:half]), ("held_out", rows[half:])):
            for row in chosen[:per_split]:
                out[part].append(dict(row, answerable=name == "answerable"))
    return out


def cache_path(model: str) -> Path:
    return ROOT / "benchmarks" / "results" / f"answers-{model}-clapnq.jsonl"


def score(args: argparse.Namespace) -> None:
    from quotebound.providers.local import LocalProvider

    path = cache_path(args.model)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {r["id"] for r in read_cache(path)}
    todo = [(part, r) for part, rows in halves(args.per_split).items() for r in rows]
    # both labels alternate, so that an interrupted run is still balanced
    seen: dict[tuple[str, bool], int] = {}
    rank: dict[str, int] = {}
    for part, row in todo:
        key = (part, row["answerable"])
        rank[row["id"]] = seen[key] = seen.get(key, -1) + 1
    todo.sort(key=lambda pr: (pr[0], rank[pr[1]["id"]]))
    todo = [(part, r) for part, r in todo if r["id"] not in done]
    print(f"{len(done)} cached, {len(todo)} to check", flush=True)
    backend = JudgeBackend(LocalProvider(model=args.model))
    try:
        with path.open("a", encoding="utf-8") as out:
            for n, (part, row) in enumerate(todo, 1):
                t0 = time.perf_counter()
                j = backend.answers(row["input"], row["passages"][0]["text"])
                seconds = time.perf_counter() - t0
                p = None if j.error else (j.score if j.supported else 1.0 - j.score)
                record = {
                    "id": row["id"],
                    "part": part,
                    "answerable": row["answerable"],
                    "p": p,
                    "error": j.error,
                    "seconds": round(seconds, 3),
                }
                out.write(json.dumps(record) + "\n")
                out.flush()
                if n % 10 == 0:
                    print(f"  {n}/{len(todo)}  last {seconds:.1f} s", flush=True)
    finally:
        backend.close()


def _gold(rows: Sequence[dict[str, Any]]) -> list[str]:
    return ["supported" if r["answerable"] else "not_supported" for r in rows]


def _decide(rows: Sequence[dict[str, Any]], t: float) -> list[str]:
    return ["supported" if r["p"] is not None and r["p"] >= t else "not_supported" for r in rows]


def fit(args: argparse.Namespace) -> None:
    rows = read_cache(cache_path(args.model))
    fit_rows = [r for r in rows if r["part"] == "fit"]
    held = [r for r in rows if r["part"] == "held_out"]
    if not fit_rows:
        sys.exit("no cache: run `score` first")
    t, bacc = best_threshold(
        [-1.0 if r["p"] is None else r["p"] for r in fit_rows],
        [int(r["answerable"]) for r in fit_rows],
    )
    t = round(t, 4)
    data = json.loads(CALIBRATION.read_text("utf-8"))
    data.setdefault("answers", {})[args.model] = {
        "threshold": t,
        "fitted_on": f"CLAPNQ dev, {len(fit_rows)} rows outside answer_quality.py's sample "
        "(the fit half), passage as evidence, by benchmarks/answer_check.py fit",
        "fit_balanced_accuracy": round(bacc, 4),
    }
    CALIBRATION.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print(f"threshold {t} (fit half: balanced accuracy {bacc:.3f}, n={len(fit_rows)})")
    for name, group in (("fit", fit_rows), ("held_out", held)):
        if not group:
            continue
        gold, pred = _gold(group), _decide(group, t)
        matrix = confusion(gold, pred, LABELS)
        lo, hi = bootstrap(gold, pred)
        answerable = [r for r in group if r["answerable"]]
        unanswerable = [r for r in group if not r["answerable"]]
        passed = sum(p == "supported" for p, r in zip(pred, group, strict=True) if r["answerable"])
        refused = sum(
            p == "not_supported" for p, r in zip(pred, group, strict=True) if not r["answerable"]
        )
        rate = len(group) / sum(r["seconds"] for r in group)
        print(
            f"{name:>9}: n={len(group)} balanced accuracy {balanced_accuracy_of(matrix):.3f} "
            f"[{lo:.3f}, {hi:.3f}]; answerable passed {passed}/{len(answerable)}, "
            f"unanswerable refused {refused}/{len(unanswerable)}; {rate:.2f} checks/s"
        )


def fit_served(args: argparse.Namespace) -> None:
    """The threshold fitted on served answers' verified quotes (see the module's notes)."""
    if args.file is None:
        sys.exit("fit-served needs the JSON file of an answer_quality.py --skip run")
    data = json.loads(Path(args.file).read_text("utf-8"))
    rows = [
        {"answerable": r["answerable"], "p": r["shadow"]["quotes"]}
        for tally in data.values()
        for r in tally["rows"]
        if r.get("shadow")
    ]
    reported = {item.id for item in load(REPORTED, SEED)}
    if any(r["id"] in reported for tally in data.values() for r in tally["rows"]):
        sys.exit("this file holds questions of a reported sample: run answer_quality.py --skip 100")
    if not rows:
        sys.exit("no served answer with a shadow check in this file")
    t, bacc = best_threshold(
        [-1.0 if r["p"] is None else r["p"] for r in rows], [int(r["answerable"]) for r in rows]
    )
    t = round(t, 4)
    kept = sum(r["answerable"] and r["p"] is not None and r["p"] >= t for r in rows)
    refused = sum(not r["answerable"] and (r["p"] is None or r["p"] < t) for r in rows)
    yes = sum(r["answerable"] for r in rows)
    data = json.loads(CALIBRATION.read_text("utf-8"))
    data.setdefault("answers", {})[args.model] = {
        "threshold": t,
        "fitted_on": f"CLAPNQ dev, {len(rows)} served answers to questions outside "
        "answer_quality.py's samples (--skip 100), their verified quotes as evidence, by "
        "benchmarks/answer_check.py fit-served",
        "fit_balanced_accuracy": round(bacc, 4),
    }
    CALIBRATION.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    print(
        f"threshold {t}: balanced accuracy {bacc:.3f} on {len(rows)} served answers; kept "
        f"{kept}/{yes} answers to answerable questions, refused {refused}/{len(rows) - yes} "
        "to unanswerable ones"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("command", choices=("score", "fit", "fit-served"))
    parser.add_argument("file", nargs="?", help="fit-served: an answer_quality.py --json file")
    parser.add_argument("--per-split", type=int, default=60)
    parser.add_argument("--model", default=JUDGE_MODEL)
    args = parser.parse_args(argv)
    {"score": score, "fit": fit, "fit-served": fit_served}[args.command](args)


if __name__ == "__main__":
    main()
