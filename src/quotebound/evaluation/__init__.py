"""The evaluation harness: datasets, metrics, runs and reports (``quotebound eval``).

    loaders   files -> PairExample (claim, quote, gold) / AnswerExample (question, sources,
              output, labels): AttributionBench, WiCE, CLAPNQ and our own JSONL format
    metrics   pure functions: Wilson and bootstrap intervals, per-label P/R/F1, balanced
              accuracy, citation validity, ALCE citation recall/precision, abstention rates
    run       examples -> judgements and verdicts -> one JSON-ready summary
    report    the summary as text and as a self-contained HTML report with plots
    sample    a stratified, seeded sample of recent traces for review, as JSONL
    command   the ``eval`` click command

Every metric is defined in docs/evaluation.md.
"""

from __future__ import annotations

from .loaders import (
    KINDS,
    AnswerExample,
    ClaimLabel,
    Dataset,
    PairExample,
    detect_kind,
    load_dataset,
)
from .metrics import (
    Estimate,
    citation_quality,
    citation_validity,
    classification,
    proportion,
    score_claim,
    wilson,
)
from .run import evaluate_answers, evaluate_pairs
from .sample import export_sample, sample_traces

__all__ = [
    "KINDS",
    "AnswerExample",
    "ClaimLabel",
    "Dataset",
    "Estimate",
    "PairExample",
    "citation_quality",
    "citation_validity",
    "classification",
    "detect_kind",
    "evaluate_answers",
    "evaluate_pairs",
    "export_sample",
    "load_dataset",
    "proportion",
    "sample_traces",
    "score_claim",
    "wilson",
]
