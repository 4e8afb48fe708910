"""What one ask is given: its options (``AskOptions``: the working set's size, the policy,
the support tier, the answer check, the reranker, the fallback), the clock its stages are
timed on, and who is told of its progress. The pipeline's entry points take these; the run
(``run.Run``) carries them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .answering.rerank import Reranked
from .budget import Budget
from .corpus import Hit
from .entailment.base import Backend, Judgement
from .packing import DEFAULT_BUDGET_CHARS
from .providers.base import Provider
from .verdict import Policy

AnswerCheck = Callable[[str, str], Judgement]


class Reranker(Protocol):
    """What ``AskOptions.rerank`` is: ``rerank(question, hits)`` re-orders the store's first
    ``depth`` hits (``answering.rerank.DenseReranker``)."""

    depth: int

    def rerank(self, question: str, hits: Sequence[Hit]) -> Reranked: ...


@dataclass(frozen=True, slots=True)
class AskOptions:
    corpora: Sequence[str] | None = None
    groups: Sequence[str] = ()
    format: str = "json"
    limit: int = 20
    budget_chars: int = DEFAULT_BUDGET_CHARS
    max_tokens: int = 1024
    policy: Policy = field(default_factory=Policy)
    owner: str | None = None
    entailment: Backend | None = None  # the optional entailment tier, run after the code checks
    work: Budget | None = None  # what verifying one attempt may cost (None: no limit)
    # Do the kept claims' verified quotes answer the question? ``check(question, evidence)``
    # (``JudgeBackend.answers``), also sent ``documents=`` (the cited sources' titles) when it
    # takes that keyword; an answer it refuses becomes an abstention. None: not run.
    answer_check: AnswerCheck | None = None
    # Re-cite a claim whose quotes did not carry it to the sentence of the sources that does
    # (``reanchor.reanchor``); the entailment tier then judges that sentence. False: the model's
    # own citations only.
    reanchor: bool = True
    # Serve a claim the entailment tier alone dropped (its quote verbatim, on its words, and
    # the tier did not follow the model's paraphrase), and a kept one that says words of the
    # question its quoted sentence lacks, as the cited source's own sentence
    # (``reanchor.quoted_sentences``; the answer check then judges it like any claim). False:
    # the first is dropped, the second served as the model wrote it.
    source_sentences: bool = True
    # When the answer would be an abstention (nothing verified, the model's own abstention, or
    # the answer check refused it), ask this provider the first request once more: the
    # extractive one answers with the sources' own sentences. Its answer is verified, support-
    # checked and answer-checked like the model's and served only if it passes (traced as one
    # more attempt: ``counts.fallback_asked``, and ``fallback_attempt`` when served). Never
    # asked when it is the answering provider's own kind. None: no fallback.
    fallback: Provider | None = None
    # Re-order the store's hits before packing (``answering.rerank.DenseReranker``: BM25's
    # first ``depth`` fused with MiniLM's cosine to the question); the store is asked for at
    # least ``depth`` hits, the first ``limit`` of the new order are packed. A reranker that
    # fails leaves BM25's order (``counts.reranked`` 0). None: BM25's order.
    rerank: Reranker | None = None
    # Put first the chunks of the documents the question names (``coverage.named_documents``:
    # "... for Northwind Health Plus?" names Northwind_Health_Plus_Benefits_Details.pdf and not
    # Northwind_Standard_Benefits_Details.pdf), among the store's first ``NAMED_DEPTH`` hits,
    # each part in the order it had (``counts.named_documents``). False: no such order.
    named_first: bool = True


class Clock:
    """The run's timings: each stage's milliseconds, added up under its name."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.timings: dict[str, float] = {}

    def lap(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + (now - since) * 1000, 3)
        return now


Progress = Callable[[str, dict[str, Any]], None]


def silent(stage: str, data: dict[str, Any]) -> None:
    return None
