"""The same model answers verified again under other settings: both abstention rates per setting.

``python -m benchmarks.quality.answer_quality --store FILE --json RUN`` keeps every answer's
trace (what the model wrote, both attempts, and the sources exactly as sent). This script
re-verifies each of those traces with ``quotebound.pipeline.reverify`` under each combination
asked for, a support tier (``--entailment``) and an answer check (``--answer-check``), and
prints, per combination, what ``answer_quality.py`` reports of abstention: correct abstention on
unanswerable questions, false abstention on answerable ones (95% Wilson intervals), with the
fragments and decorative citations served. No model answers again, so the settings are compared
on the very same model outputs; the one thing not replayed is the repair turn's *prompt*: the
model's repair answered the failures that the traced run's settings named.

    .venv/bin/python -m benchmarks.quality.answer_quality --providers local-1.5b --per-split 100 \\
        --json /tmp/run.json --store /tmp/run.db
    .venv/bin/python -m benchmarks.quality.answer_replay /tmp/run.json /tmp/run.db \\
        --entailment fast cascade --answer-check off fast judge
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import served_claims
from quotebound.entailment import make_backend
from quotebound.entailment.base import Backend
from quotebound.evaluation.metrics import wilson
from quotebound.fragments import answer_fragments
from quotebound.pipeline import Answer, AskOptions, reverify
from quotebound.providers import ExtractiveProvider
from quotebound.store import open_store
from quotebound.text import normalize
from quotebound.text.words import content_words


def _rate(num: int, den: int) -> str:
    if not den:
        return "-"
    lo, hi = wilson(num, den)
    return f"{100 * num / den:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def answer_checks(
    names: Sequence[str], tier: Backend | None, both_thresholds: Sequence[float] = ()
) -> dict[str, Any]:
    """The answer checks asked for, by name (``off``: None); the fast one shares the fast
    tier's encoder when there is one; ``both`` once per threshold asked (the shipped one
    unless given), all on one judge that reads each pair once."""
    out: dict[str, Any] = {}
    judge: Any = None
    for name in names:
        if name == "off":
            out[name] = None
        elif name == "fast":
            from quotebound.answering.check import AnswerChecker

            out[name] = AnswerChecker.beside(tier)
        elif name in ("judge", "both"):
            from quotebound.entailment.judge import JUDGE_MODEL, JudgeBackend
            from quotebound.providers.local import LocalProvider

            judge = judge or _Memo(JudgeBackend(LocalProvider(JUDGE_MODEL)))
            if name == "judge":
                out[name] = judge
            else:
                from quotebound.answering.check import AnswerChecker, BothAnswerCheck

                fast = AnswerChecker.beside(tier)
                thresholds: Sequence[float | None] = both_thresholds if both_thresholds else [None]
                for threshold in thresholds:
                    label = "both" if threshold is None else f"both@{threshold:g}"
                    made = BothAnswerCheck(fast, judge)
                    if threshold is not None:
                        made.threshold = threshold
                    out[label] = made
        else:
            sys.exit(f"unknown answer check {name!r}: off, fast, judge or both")
    return out


class _Memo:
    """A judge that reads each (question, evidence) once: the settings compared share it."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge
        self.seen: dict[tuple[str, str, tuple[str, ...]], Any] = {}
        self.provider, self.version = judge.provider, judge.version

    def answers(self, question: str, evidence: str, documents: Sequence[str] = ()) -> Any:
        key = (question, evidence, tuple(documents))
        if key not in self.seen:
            self.seen[key] = self.judge.answers(question, evidence, documents=documents)
        return self.seen[key]

    def close(self) -> None:
        self.judge.close()


def fallback_of(name: str, ranker: Any, floor: float | None, claims: int | None) -> Any:
    """The fallback provider by name: ``ranked`` by the fast answer check ``ranker`` (``floor``
    and ``claims`` as asked, else the shipped ones), ``extractive`` by the question's words,
    ``off``: None."""
    if name == "extractive":
        return ExtractiveProvider()
    if name == "ranked":
        from quotebound.answering.check import EXTRACT_CLAIMS

        return ranker.extractor(claims or EXTRACT_CLAIMS, floor)
    return None


def served_flaws(answer: Answer) -> tuple[int, int]:
    """Fragments and decorative citations (no content word shared with the claim) served."""
    fragments = decorative = 0
    served = served_claims(answer)
    fragments += sum(why is not None for why in answer_fragments([c.text for c in served]))
    for claim in served:
        words = content_words(normalize(claim.text))
        for cite in claim.citations:
            if cite.valid and words:
                decorative += words.isdisjoint(content_words(normalize(cite.quote or "")))
    return fragments, decorative


def replay(
    rows: list[dict[str, Any]],
    store_url: str,
    tier: Backend | None,
    check: Callable[[str, str], Any] | None,
    fallback: Any = None,
) -> dict[str, Any]:
    abstained = {True: 0, False: 0}
    asked = {True: 0, False: 0}
    fragments = decorative = fallbacks = 0
    changed: list[str] = []
    with open_store(store_url) as store:
        for row in rows:
            yes = bool(row["answerable"])
            asked[yes] += 1
            if not row.get("trace_id"):
                abstained[yes] += row["status"] == "abstained"
                continue
            trace = store.get_trace(row["trace_id"])
            options = AskOptions(entailment=tier, answer_check=check, fallback=fallback)
            answer = reverify(trace, options)
            fallbacks += bool(answer.counts.get("fallback_attempt"))
            abstained[yes] += answer.status == "abstained"
            f, d = served_flaws(answer)
            fragments += f
            decorative += d
            if (answer.status == "abstained") != (row["status"] == "abstained"):
                changed.append(f"{'A' if yes else 'U'} {answer.status:>9}: {row['question']}")
    return {
        "correct": _rate(abstained[False], asked[False]),
        "false": _rate(abstained[True], asked[True]),
        "fragments": fragments,
        "decorative": decorative,
        "fallbacks": fallbacks,
        "changed": changed,
        "n": (asked[True], asked[False]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "run", type=Path, help="the --json FILE of benchmarks.quality.answer_quality"
    )
    parser.add_argument(
        "store", type=Path, help="the --store FILE of benchmarks.quality.answer_quality"
    )
    parser.add_argument("--provider", default="local-1.5b")
    parser.add_argument("--entailment", nargs="+", default=["fast"], help="tiers (off: none)")
    parser.add_argument("--answer-check", nargs="+", default=["off", "fast"])
    parser.add_argument(
        "--fallback",
        nargs="+",
        default=["off"],
        choices=("off", "extractive", "ranked"),
        help="AskOptions.fallback: the sources' own sentences that pass verification and the "
        "answer check when the answer would be an abstention; extractive: those covering the "
        "question best; ranked: those the fast answer check scores as answering (ask's default "
        "beside the fast check)",
    )
    parser.add_argument(
        "--extract-threshold",
        nargs="+",
        type=float,
        default=[None],
        help="ranked: the least score of a copied sentence (default: the shipped "
        "meta.extract_threshold); several to compare",
    )
    parser.add_argument(
        "--extract-claims", nargs="+", type=int, default=[None], help="ranked: most sentences"
    )
    parser.add_argument(
        "--both-threshold",
        nargs="+",
        type=float,
        default=[],
        help="both: the least mean of the fast probability and the judge's P(yes) that is an "
        "answer (default: the shipped BOTH_THRESHOLD); several to compare",
    )
    parser.add_argument("--changes", action="store_true", help="list the questions that changed")
    args = parser.parse_args(argv)
    data = json.loads(args.run.read_text("utf-8"))
    if args.provider not in data:
        sys.exit(f"{args.run} has no run of {args.provider}: {', '.join(data)}")
    rows = data[args.provider]["rows"]
    url = f"sqlite:///{args.store}"
    print(
        f"{args.provider}: {sum(r['answerable'] for r in rows)} answerable + "
        f"{sum(not r['answerable'] for r in rows)} unanswerable questions, the traced "
        "answers verified again"
    )
    print(
        f"{'support tier':>12}  {'answer check':>12}  {'abstains when unanswerable':>27}  "
        f"{'false abstention':>22}  fragments  decorative  fallback  served by it"
    )
    for name in args.entailment:
        tier = None if name == "off" else make_backend(name)
        checks = answer_checks(args.answer_check, tier, args.both_threshold)
        ranker = None
        if "ranked" in args.fallback:
            from quotebound.answering.check import AnswerChecker

            ranker = next(
                (c for c in checks.values() if isinstance(c, AnswerChecker)), None
            ) or AnswerChecker.beside(tier)
        falls = [
            (fall, floor, claims)
            for fall in args.fallback
            for floor in (args.extract_threshold if fall == "ranked" else [None])
            for claims in (args.extract_claims if fall == "ranked" else [None])
        ]
        try:
            for (check_name, checker), (fall, floor, claims) in itertools.product(
                checks.items(), falls
            ):
                extract = fallback_of(fall, ranker, floor, claims)
                check = None if checker is None else checker.answers
                result = replay(rows, url, tier, check, extract)
                label = (
                    fall
                    if fall != "ranked"
                    else f"ranked@{extract.min_score:g}x{extract.max_claims}"
                )
                print(
                    f"{name:>12}  {check_name:>12}  {result['correct']:>27}  "
                    f"{result['false']:>22}  {result['fragments']:>9}  {result['decorative']:>10}"
                    f"  {label:>8}  {result['fallbacks']:>11}"
                )
                if args.changes:
                    for line in result["changed"]:
                        print(f"      {line}")
        finally:
            for checker in [*checks.values(), ranker]:
                if checker is not None:
                    checker.close()
            if tier is not None:
                tier.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
