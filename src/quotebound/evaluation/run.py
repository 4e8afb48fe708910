"""Running an evaluation: examples -> judgements and verdicts -> the JSON summary.

Two tasks (see ``loaders``):

- pairs: every (claim, quote) is judged by the entailment backend; the prediction is the
  judgement's label (three labels), or ``supported`` / ``not_supported`` for binary sets.
- answers: every example gets a first and a served verdict (our JSONL: ``verify`` of its
  output; CLAPNQ: the answer pipeline over a temporary store; traces: the verdicts stored),
  then citation validity, ALCE citation recall/precision (with the backend, when given) and
  the abstention rates are computed over them.

Invariants: the summary is one JSON-ready dict (``summary["metrics"]`` holds every value with
its interval, rounded to 4 decimals; ``summary["flat"]`` the unrounded scalar values that
``--fail-under`` compares); nothing here prints; the one random source is
``random.Random(seed)``. An answer is a provider error (counted in ``provider_errors``, left
out of the abstention and repair rates) when a model call failed and no claim was served.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..entailment.base import Backend, Judgement
from ..entailment.tier import evidence_text
from ..errors import InputError
from ..reasons import ID_SPAN_FAILURES
from ..sources import WorkingSet
from ..store import TraceRecord
from ..verdict import Citation, Verdict
from ..verify import verify
from . import metrics as m
from .loaders import BINARY_LABELS, THREE_LABELS, AnswerExample, Dataset, PairExample

Tick = Callable[[int], None]  # told how many more items are done
NEEDED_LABELS: tuple[str, ...] = ("needed", "not_needed")
DETAIL_ROWS = 25  # disagreements / unsupported claims kept for the report
# Lower-is-better rates: reported, but a ``--fail-under`` gate on them would pass as they got
# worse, so gates name their complements (value = 1 - rate).
LOWER_IS_BETTER: dict[str, str] = {
    "false_abstention_rate": "answered_when_answerable",
    "missed_abstention_rate": "abstained_when_unanswerable",
    "abstention_rate": "answer_rate",
    "repair_rate": "first_pass_rate",
}
# Answer metrics that need an entailment backend (besides the support_* / needed_* tables).
ENTAILMENT_METRICS = ("citation_recall", "citation_precision", "kept_claim_support")


def _quiet(n: int) -> None:
    return None


# --- pairs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairResult:
    example: PairExample
    judgement: Judgement
    predicted: str


def predicted_label(judgement: Judgement, labels: Sequence[str]) -> str:
    """The prediction in the dataset's labels: binary sets read ``supported`` or not."""
    if tuple(labels) == BINARY_LABELS:
        return "supported" if judgement.supported else "not_supported"
    return judgement.label


def judge_pairs(
    pairs: Sequence[PairExample],
    backend: Backend,
    labels: Sequence[str],
    tick: Tick = _quiet,
    batch: int = 16,
) -> list[PairResult]:
    """Judge every pair, in batches (backends that batch do it in ``judge_many``)."""
    out: list[PairResult] = []
    for start in range(0, len(pairs), batch):
        chunk = pairs[start : start + batch]
        judgements = backend.judge_many([(p.claim, p.quote) for p in chunk])
        if len(judgements) != len(chunk):
            raise InputError(
                f"backend {backend.name} returned {len(judgements)} judgements "
                f"for {len(chunk)} pairs"
            )
        out += (
            PairResult(p, j, predicted_label(j, labels))
            for p, j in zip(chunk, judgements, strict=True)
        )
        tick(len(chunk))
    return out


def pair_summary(
    results: Sequence[PairResult], labels: Sequence[str], seed: int, seconds: float
) -> dict[str, Any]:
    gold = [r.example.gold for r in results]
    pred = [r.predicted for r in results]
    scores = m.classification(gold, pred, labels, seed)
    groups: dict[str, list[PairResult]] = {}
    for r in results:
        if r.example.group:
            groups.setdefault(r.example.group, []).append(r)
    by_group = {
        name: m.classification(
            [r.example.gold for r in rs], [r.predicted for r in rs], labels, seed
        ).balanced_accuracy.to_dict()
        for name, rs in sorted(groups.items())
    }
    wrong = [r for r in results if r.predicted != r.example.gold]
    return {
        "entailment": scores.to_dict(),
        "by_group_balanced_accuracy": by_group,
        "judgement_errors": sum(r.judgement.error is not None for r in results),
        "pairs_per_second": len(results) / seconds if seconds > 0 else None,
        "disagreements": [
            {
                "id": r.example.id,
                "claim": r.example.claim,
                "quote": r.example.quote[:600],
                "gold": r.example.gold,
                "original": r.example.original,
                "predicted": r.predicted,
                "score": round(r.judgement.score, 4),
                "detail": r.judgement.detail,
                "error": r.judgement.error,
            }
            for r in wrong[:DETAIL_ROWS]
        ],
    }


# --- answers ---------------------------------------------------------------------------------


@dataclass
class AnswerOutcome:
    """One answered example: its verdicts and what was served."""

    example: AnswerExample
    working_set: WorkingSet
    first: Verdict | None  # the verdict on the model's first output
    served: Verdict | None  # the verdict the answer showed
    status: str  # grounded | partial | ungrounded | abstained | unparseable | provider_error
    abstained: bool  # the answer served no claim
    error: str | None = None
    trace_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def outcome_of_output(example: AnswerExample) -> AnswerOutcome:
    """Verify an example's recorded output: quotebound serves its kept claims, or abstains.
    A recorded provider error (``example.error``) is not verified: it is a provider error."""
    if example.output is None:
        raise InputError(f"example {example.id} has no output to verify")
    ws = WorkingSet(example.sources)
    if example.error is not None:
        return AnswerOutcome(
            example, ws, None, None, "provider_error", abstained=False, error=example.error
        )
    verdict = verify(ws, example.output, example.format)
    return AnswerOutcome(
        example, ws, verdict, verdict, verdict.status, abstained=not verdict.kept_claims
    )


def provider_error_of(trace: TraceRecord) -> str | None:
    """The provider error of a trace whose answer served no claim because a model call failed
    (the first call: status ``provider_error``; or the repair turn, with nothing kept), else
    None. An answer that served claims though its repair turn failed is not one."""
    failed = trace.status == "provider_error" or (
        trace.counts.get("provider_errors", 0) > 0 and trace.status not in ("grounded", "partial")
    )
    if not failed:
        return None
    recorded = [a.error for a in trace.attempts if a.error is not None]
    return recorded[-1] if recorded else "provider_error"


def outcome_of_trace(trace: TraceRecord) -> AnswerOutcome:
    from ..traceview import served_output, served_verdict

    served = served_verdict(trace)
    stored = next((a.verdict for a in trace.attempts if a.verdict is not None), None)
    first = None if stored is None else Verdict.from_dict(stored, f"trace {trace.id}: verdict")
    status = trace.status or (served.status if served is not None else "unknown")
    output = served_output(trace)
    example = AnswerExample(
        trace.id,
        trace.question,
        tuple(s.to_source() for s in trace.sources),
        output,
        served.format if served is not None else "auto",
    )
    error = provider_error_of(trace)
    return AnswerOutcome(
        example,
        trace.working_set(),
        first,
        served,
        status,
        abstained=error is None and status == "abstained",
        error=error,
        trace_id=trace.id,
    )


def run_pipeline(
    examples: Sequence[AnswerExample], provider: Any, tick: Tick = _quiet
) -> list[AnswerOutcome]:
    """Answer each example with ``quotebound.pipeline.ask`` over a temporary SQLite store in
    which each example's passage is its own corpus (as benchmarks/quality/answer_quality.py
    does)."""
    from ..corpus import LoadedDocument
    from ..ingest import chunk_document
    from ..pipeline import AskOptions, ask
    from ..store import open_store

    out: list[AnswerOutcome] = []
    with (
        tempfile.TemporaryDirectory(prefix="quotebound-eval-") as tmp,
        open_store(f"sqlite:///{tmp}/eval.db") as store,
    ):
        for n, ex in enumerate(examples):
            text = "\n\n".join(s.text for s in ex.sources)
            doc = LoadedDocument(f"{n}.txt", text, "text/plain", title=ex.title)
            store.ingest(f"q{n}", doc, chunk_document(doc, max_chars=600, min_chars=150))
        for n, ex in enumerate(examples):
            answer = ask(
                ex.question, store, provider, AskOptions(corpora=[f"q{n}"], max_tokens=700)
            )
            trace = store.get_trace(answer.trace_id) if answer.trace_id else None
            outcome = outcome_of_trace(trace) if trace is not None else None
            if outcome is None:
                raise InputError(f"the pipeline wrote no trace for example {ex.id}")
            outcome.example = ex
            outcome.extra["repaired"] = answer.repaired
            out.append(outcome)
            tick(1)
    return out


def citation_evidence(citation: Citation, ws: WorkingSet) -> str | None:
    """The text a citation was checked against, as the entailment tier reads it
    (``evidence_text``); None when the citation failed the id or span check."""
    sid = citation.source
    if citation.reason in ID_SPAN_FAILURES or not sid:
        return None
    return evidence_text(ws, sid, citation.quote, citation.parts)


def _count_citations(verdicts: Sequence[Verdict | None]) -> tuple[int, int, int]:
    """(citations that passed the id and span checks, citations that passed every check,
    citations)."""
    id_span = valid = total = 0
    for v in verdicts:
        for claim in v.claims if v is not None else ():
            for c in claim.citations:
                total += 1
                id_span += c.reason not in ID_SPAN_FAILURES
                valid += c.valid
    return id_span, valid, total


def check_labels(outcomes: Sequence[AnswerOutcome]) -> None:
    """Gold claim labels must line up with the parsed claims and their citations (an
    InputError naming the file and line otherwise), whatever the backend."""
    for o in outcomes:
        labels = o.example.claims
        if labels is None or o.error is not None:
            continue
        where = o.example.where or f"example {o.example.id}"
        claims = o.served.claims if o.served is not None else ()
        if len(labels) != len(claims):
            raise InputError(
                f"{where}: labels.claims has {len(labels)} entries but the output parses "
                f"into {len(claims)} claims; label each claim, in order"
            )
        for n, (label, claim) in enumerate(zip(labels, claims, strict=True), 1):
            cits = len(claim.citations)
            if label.needed and len(label.needed) != cits:
                raise InputError(
                    f"{where}: labels.claims[{n}].citations has {len(label.needed)} entries "
                    f"but claim {n} has {cits} citations; label each citation, in order"
                )


class _CachedJudge:
    """Judgements memoised by (claim, evidence): ALCE asks the same pair more than once."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.cache: dict[tuple[str, str], Judgement] = {}
        self.errors = 0

    def judge(self, claim: str, evidence: str) -> Judgement:
        key = (claim, evidence)
        if key not in self.cache:
            j = self.cache[key] = self.backend.judge(claim, evidence)
            self.errors += j.error is not None
        return self.cache[key]

    def entails(self, claim: str, evidence: str) -> bool:
        return self.judge(claim, evidence).supported


def answer_summary(
    outcomes: Sequence[AnswerOutcome], backend: Backend | None, seed: int, tick: Tick = _quiet
) -> dict[str, Any]:
    check_labels(outcomes)
    answered = [o for o in outcomes if o.error is None]
    first_ok, first_valid, first_total = _count_citations([o.first for o in outcomes])
    served_ok, served_valid, served_total = _count_citations([o.served for o in outcomes])
    gold = [
        (bool(o.example.answerable), o.abstained)
        for o in answered
        if o.example.answerable is not None
    ]
    summary: dict[str, Any] = {
        "statuses": _tally(o.status for o in outcomes),
        "provider_errors": len(outcomes) - len(answered),
        "citation_validity": m.citation_validity(first_ok, first_total).to_dict(),
        "served_citation_validity": m.citation_validity(served_ok, served_total).to_dict(),
        "citation_checks_passed": m.proportion(first_valid, first_total).to_dict(),
        "served_citation_checks_passed": m.proportion(served_valid, served_total).to_dict(),
        "abstention_rate": m.proportion(
            sum(o.abstained for o in answered), len(answered)
        ).to_dict(),
        **m.abstention(gold).to_dict(),
    }
    repaired = [o.extra["repaired"] for o in answered if "repaired" in o.extra]
    if repaired:
        summary["repair_rate"] = m.proportion(sum(repaired), len(repaired)).to_dict()
    if backend is not None:
        summary.update(_alce_summary(outcomes, _CachedJudge(backend), seed, tick))
    return summary


def _tally(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items()))


def _alce_summary(
    outcomes: Sequence[AnswerOutcome], judge: _CachedJudge, seed: int, tick: Tick
) -> dict[str, Any]:
    scores: list[m.ClaimCitationScore] = []
    kept: list[bool] = []
    support_gold: list[str] = []
    support_pred: list[str] = []
    needed_gold: list[str] = []
    needed_pred: list[str] = []
    unsupported: list[dict[str, Any]] = []
    for o in outcomes:
        claims = o.served.claims if o.served is not None else ()
        labels = o.example.claims  # lengths checked by check_labels
        for n, claim in enumerate(claims):
            cits = claim.citations
            cited = m.CitedClaim(
                claim.text, tuple(citation_evidence(c, o.working_set) for c in cits)
            )
            score = m.score_claim(cited, judge.entails)
            scores.append(score)
            if claim.kept:
                kept.append(score.supported)
            if not score.supported and len(unsupported) < DETAIL_ROWS:
                unsupported.append(
                    {
                        "example": o.example.id,
                        "claim": claim.text,
                        "kept": claim.kept,
                        "evidence": (m.join_evidence(cited.evidence) or "")[:600],
                    }
                )
            gold = labels[n] if labels is not None else None
            if gold is None:
                continue
            union = m.join_evidence(cited.evidence)
            if gold.support is not None:
                support_gold.append(gold.support)
                support_pred.append(
                    judge.judge(claim.text, union).label if union is not None else "unrelated"
                )
            for i, needed in enumerate(gold.needed):
                if needed is None:
                    continue
                needed_gold.append("needed" if needed else "not_needed")
                precise = score.supported and i not in score.irrelevant
                needed_pred.append("needed" if precise else "not_needed")
        tick(1)
    quality = m.citation_quality(scores)
    out: dict[str, Any] = {
        "citation_recall": quality.recall.to_dict(),
        "citation_precision": quality.precision.to_dict(),
        "kept_claim_support": m.proportion(sum(kept), len(kept)).to_dict(),
        "judgement_errors": judge.errors,
        "unsupported_claims": unsupported,
    }
    if support_gold:
        out["claim_support"] = m.classification(
            support_gold, support_pred, THREE_LABELS, seed
        ).to_dict()
    if needed_gold:
        out["citation_needed"] = m.classification(
            needed_gold, needed_pred, NEEDED_LABELS, seed
        ).to_dict()
    return out


# --- the summary -----------------------------------------------------------------------------


def base_summary(
    dataset: Dataset | None, backend: Backend | None, seed: int, source: str
) -> dict[str, Any]:
    return {
        "dataset": {
            "source": source,
            "kind": dataset.kind if dataset else "traces",
            "paths": dataset.paths if dataset else [],
            "task": dataset.task if dataset else "answers",
            "skipped": dataset.skipped if dataset else {},
        },
        "backend": None if backend is None else {"name": backend.name, "version": backend.version},
        "seed": seed,
    }


def evaluate_pairs(
    dataset: Dataset, backend: Backend, seed: int, tick: Tick = _quiet
) -> dict[str, Any]:
    started = time.perf_counter()
    results = judge_pairs(dataset.pairs, backend, dataset.labels, tick)
    seconds = time.perf_counter() - started
    summary = base_summary(dataset, backend, seed, "dataset")
    summary["examples"] = len(results)
    summary["metrics"] = pair_summary(results, dataset.labels, seed, seconds)
    summary["seconds"] = round(seconds, 3)
    summary["flat"] = flat_metrics(summary)
    return summary


def evaluate_answers(
    dataset: Dataset | None,
    outcomes: Sequence[AnswerOutcome],
    backend: Backend | None,
    seed: int,
    seconds: float,
    tick: Tick = _quiet,
    source: str = "dataset",
) -> dict[str, Any]:
    started = time.perf_counter()
    summary = base_summary(dataset, backend, seed, source)
    summary["examples"] = len(outcomes)
    summary["metrics"] = answer_summary(outcomes, backend, seed, tick)
    summary["seconds"] = round(seconds + time.perf_counter() - started, 3)
    summary["flat"] = flat_metrics(summary)
    return summary


def _value(entry: Any) -> float | None:
    """The unrounded value of a metric entry: ``hits / n`` for a proportion (its ``value`` is
    rounded for display), else its ``value``."""
    if not isinstance(entry, dict) or entry.get("value") is None:
        return None
    hits, n = entry.get("hits"), entry.get("n")
    if isinstance(hits, int) and isinstance(n, int) and n > 0:
        return hits / n
    return float(entry["value"])


ANSWER_METRICS = (
    "citation_validity",
    "served_citation_validity",
    "citation_checks_passed",
    "served_citation_checks_passed",
    "citation_recall",
    "citation_precision",
    "kept_claim_support",
    "abstention_rate",
    "false_abstention_rate",
    "missed_abstention_rate",
    "repair_rate",
)


def flat_metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """Every scalar metric by one name, unrounded: what ``--fail-under`` compares and the
    tables read."""
    metrics = summary["metrics"]
    flat: dict[str, float | None] = {}
    if summary["dataset"]["task"] == "pairs":
        flat.update(_classification_flat(metrics["entailment"], ""))
        pps = metrics.get("pairs_per_second")
        flat["pairs_per_second"] = None if pps is None else float(pps)
        return flat
    for name in ANSWER_METRICS:
        if name in metrics:
            flat[name] = _value(metrics[name])
    for rate, complement in LOWER_IS_BETTER.items():
        if rate in flat:
            v = flat[rate]
            flat[complement] = None if v is None else 1 - v
    if "claim_support" in metrics:
        flat.update(_classification_flat(metrics["claim_support"], "support_"))
    if "citation_needed" in metrics:
        flat.update(_classification_flat(metrics["citation_needed"], "needed_"))
    return flat


def _classification_flat(entry: dict[str, Any], prefix: str) -> dict[str, float | None]:
    """Accuracy, balanced accuracy and per-label precision/recall/F1, recomputed unrounded
    from the counts (F1 = 2TP / (support + predicted))."""
    recalls: list[float] = []
    flat = {f"{prefix}accuracy": _value(entry["accuracy"])}
    per_label: dict[str, float | None] = {}
    for label, s in entry["per_label"].items():
        tp = s["recall"].get("hits") or 0
        recall = _value(s["recall"])
        if recall is not None:
            recalls.append(recall)
        total = s["support"] + s["predicted"]
        per_label[f"{prefix}precision_{label}"] = _value(s["precision"])
        per_label[f"{prefix}recall_{label}"] = recall
        per_label[f"{prefix}f1_{label}"] = 2 * tp / total if total else None
    flat[f"{prefix}balanced_accuracy"] = sum(recalls) / len(recalls) if recalls else None
    flat.update(per_label)
    return flat


def metric_names(task: str, labels: Sequence[str]) -> list[str]:
    """Every name ``--fail-under`` may use for a task (some have no value on some data); the
    lower-is-better rates (``LOWER_IS_BETTER``) are not among them."""
    if task == "pairs":
        names = ["accuracy", "balanced_accuracy", "pairs_per_second"]
        names += [f"{w}_{label}" for label in labels for w in ("precision", "recall", "f1")]
        return names
    names = [n for n in ANSWER_METRICS if n not in LOWER_IS_BETTER]
    names += list(LOWER_IS_BETTER.values())
    for prefix, labs in (("support_", THREE_LABELS), ("needed_", NEEDED_LABELS)):
        names += [f"{prefix}accuracy", f"{prefix}balanced_accuracy"]
        names += [f"{prefix}{w}_{lab}" for lab in labs for w in ("precision", "recall", "f1")]
    return names


def unmeasurable(dataset: Dataset | None, with_backend: bool) -> dict[str, str]:
    """Answer-task names that cannot have a value on this data with this backend, each with
    why: known before running, so a gate on one stops before the run (exit 2)."""
    if dataset is not None and dataset.task == "pairs":
        return {}
    out: dict[str, str] = {}
    names = metric_names("answers", ())
    answers = dataset.answers if dataset is not None else []
    what = "stored traces" if dataset is None else f"this {dataset.kind} data"
    claim_labels = [c for a in answers for c in a.claims or ()]
    gold = {a.answerable for a in answers}
    lacking = {
        "support_": "has no labels.claims[].support"
        if not any(c.support is not None for c in claim_labels)
        else None,
        "needed_": "has no labels.claims[].citations[].needed"
        if not any(v is not None for c in claim_labels for v in c.needed)
        else None,
    }
    for name in names:
        prefix = next((p for p in lacking if name.startswith(p)), None)
        if not with_backend and (name in ENTAILMENT_METRICS or prefix is not None):
            out[name] = "needs an entailment backend (not --backend none)"
        elif prefix is not None and lacking[prefix] is not None:
            out[name] = f"{what} {lacking[prefix]}"
    if True not in gold:
        out["answered_when_answerable"] = f"{what} has no answerable example (labels.answerable)"
    if False not in gold:
        out["abstained_when_unanswerable"] = (
            f"{what} has no unanswerable example (labels.answerable)"
        )
    if dataset is None or dataset.kind != "clapnq":
        out["first_pass_rate"] = "only a CLAPNQ run (the answer pipeline) has a repair turn"
    return out
