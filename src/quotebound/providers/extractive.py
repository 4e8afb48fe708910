"""The extractive provider: no generator at all.

It answers with the source sentences that best match the question, each a claim quoting
itself word for word, so every claim it makes verifies by construction. Deterministic, fast,
offline: useful when no model is available, and as a floor for model answers.

Scoring: each sentence whose length the request's policy accepts as a quote (4-40 words by
default), and that the verifier would keep as a claim (no heading, no question: ``fragment``),
scores the summed IDF (over the working set's
sentences) of the question's content words it contains. It abstains when no sentence covers
at least ``min_coverage`` (0.35) of the question's total IDF weight: chosen on CLAPNQ dev
(0.5 abstained on 69% of answerable questions, 0.35 on 44%, while still abstaining on 84% of
unanswerable ones).

Ranked (``rank``, the fallback ``ask`` runs beside an answer check): the sentences the IDF
score ranks highest (at most ``RANKED_CANDIDATES``, so the work stays bounded) are scored again
by ``rank(question, sentences)``, a probability that the sentence answers the question (the
answer check's own, ``AnswerChecker.scores``); the best sentence reaching ``min_score`` is
kept, with the next best (at most ``max_claims`` in all, each a different text) that reach it
and score within ``RANKED_MARGIN`` of the best, in the sources' order; it abstains when none
reaches it. A ranker that fails, or reads no sentence, is a ``ProviderError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..coverage import restatements
from ..fragments import fragment, leans_unasked
from ..sources import WorkingSet
from ..text import STOPWORDS, quote_words, sentence_spans
from ..verdict import DEFAULT_POLICY, Policy
from .base import Capabilities, Completion, Provider, ProviderError, Request

_WORD = re.compile(r"[^\W_]+")
# Besides function words, the verbs and adverbs questions are phrased with ("how long does it
# take") name no content a sentence has to cover.
_STOP = STOPWORDS | frozenset(
    "about into any all also not no yes tell get gets take takes long often need needs give "
    "know please".split()
)
RANKED_CANDIDATES = 32  # sentences a ranked selection scores again, the IDF score's best
RANKED_MARGIN = 0.1  # how far below the best sentence's score another kept one may be
# (question, sentences) -> a probability per sentence that it answers the question (None: unread)
Ranker = Callable[[str, Sequence[str]], Sequence[float | None]]


def _terms(text: str) -> set[str]:
    """Content words, lower-cased, with a plural s dropped (weeks ~ week)."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return out


@dataclass(frozen=True, slots=True)
class _Sentence:
    source: str
    text: str
    terms: frozenset[str]
    order: int


class ExtractiveProvider(Provider):
    name: ClassVar[str] = "extractive"
    capabilities: Capabilities = Capabilities(answers_in="json", generates=False)

    def __init__(
        self,
        model: str = "extractive",
        max_claims: int = 3,
        min_coverage: float = 0.35,
        *,
        rank: Ranker | None = None,
        min_score: float | None = None,
    ) -> None:
        if rank is not None and min_score is None:
            raise ValueError("a ranked extractive provider needs min_score")
        super().__init__(model)
        self.max_claims = max_claims
        self.min_coverage = min_coverage
        self.rank = rank
        self.min_score = min_score

    def complete(self, request: Request) -> Completion:
        chosen = self.select(request.question, request.working_set, request.policy)
        if not chosen:
            answer = {
                "answerable": False,
                "claims": [],
                "missing": "no source sentence covers enough of the question"
                if self.rank is None
                else "no source sentence answers the question well enough",
            }
        else:
            answer = {
                "answerable": True,
                "claims": [
                    {"text": s.text, "citations": [{"source": s.source, "quote": s.text}]}
                    for s in chosen
                ],
                "missing": "",
            }
        return Completion(text=json.dumps(answer), model=self.model, finish_reason="stop")

    def select(
        self, question: str, ws: WorkingSet, policy: Policy = DEFAULT_POLICY
    ) -> list[_Sentence]:
        """The best sentences in the sources' order, or none when coverage (or, ranked, every
        sentence's score) is too low; only sentences whose length ``policy`` accepts as a quote
        are offered."""
        sentences = _sentences(ws, policy, question)
        wanted = _terms(question)
        if not sentences or not wanted:
            return []
        if self.rank is not None:
            return self._ranked(question, sentences, wanted)
        idf = _idf(sentences, wanted)
        total = sum(idf.values())
        scored = sorted(
            ((sum(idf[t] for t in wanted & s.terms), -s.order, s) for s in sentences),
            key=lambda item: (item[0], item[1]),
            reverse=True,
        )
        best = scored[0][0]
        if best < self.min_coverage * total:
            return []
        keep = [s for score, _, s in scored if score >= 0.6 * best][: self.max_claims]
        return sorted(keep, key=lambda s: s.order)

    def _ranked(
        self, question: str, sentences: list[_Sentence], wanted: set[str]
    ) -> list[_Sentence]:
        assert self.rank is not None and self.min_score is not None
        idf = _idf(sentences, wanted)
        first: dict[str, _Sentence] = {}  # each text once: its first occurrence
        for sentence in sentences:
            first.setdefault(sentence.text.strip(), sentence)
        offered = sorted(
            first.values(), key=lambda s: (-sum(idf[t] for t in wanted & s.terms), s.order)
        )[:RANKED_CANDIDATES]
        try:
            scores = list(self.rank(question, [s.text for s in offered]))
        except ProviderError:
            raise
        except Exception as exc:  # a ranker is caller code: its failure is this attempt's
            raise ProviderError("bad_response", f"extractive: the ranker failed: {exc}") from exc
        if len(scores) != len(offered):
            raise ProviderError(
                "bad_response",
                f"extractive: the ranker scored {len(scores)} of {len(offered)} sentences",
            )
        if offered and all(p is None for p in scores):
            raise ProviderError("bad_response", "extractive: the ranker could read no sentence")
        passing = sorted(
            (
                (p, -k, s)
                for k, (p, s) in enumerate(zip(scores, offered, strict=True))
                if p is not None and p >= self.min_score
            ),
            key=lambda item: (item[0], item[1]),
            reverse=True,
        )
        if not passing:
            return []
        best = passing[0][0]
        keep = [s for p, _, s in passing[: self.max_claims] if p >= best - RANKED_MARGIN]
        return sorted(keep, key=lambda s: s.order)


def _idf(sentences: list[_Sentence], wanted: set[str]) -> dict[str, float]:
    df = {t: sum(t in s.terms for s in sentences) for t in wanted}
    return {t: math.log(1 + len(sentences) / (1 + df[t])) for t in wanted}


def _sentences(ws: WorkingSet, policy: Policy, question: str) -> list[_Sentence]:
    out: list[_Sentence] = []
    restates = restatements(question)
    for src in ws:
        for start, end in sentence_spans(src.text):
            text = src.text[start:end]
            fits = policy.min_quote_words <= quote_words(text) <= policy.max_quote_words
            # a sentence that would be dropped as a claim (a heading, a question, "they" for
            # what its source named before, the question's own words) is no answer
            claim = not policy.sentences or (
                fragment(text) is None and not leans_unasked(text, question) and not restates(text)
            )
            if fits and claim:
                out.append(_Sentence(src.id, text, frozenset(_terms(text)), len(out)))
    return out
