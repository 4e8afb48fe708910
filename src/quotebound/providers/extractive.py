"""The extractive provider: no generator at all.

It answers with the source sentences that best match the question, each a claim quoting
itself word for word, so every claim it makes verifies by construction. Deterministic, fast,
offline: useful when no model is available, and as a floor for model answers.

Scoring: each sentence whose length the request's policy accepts as a quote (4-40 words by
default) scores the summed IDF (over the working set's
sentences) of the question's content words it contains. It abstains when no sentence covers
at least ``min_coverage`` (0.35) of the question's total IDF weight: chosen on CLAPNQ dev
(0.5 abstained on 69% of answerable questions, 0.35 on 44%, while still abstaining on 84% of
unanswerable ones).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import ClassVar

from ..sources import WorkingSet
from ..text import STOPWORDS, quote_words, sentence_spans
from ..verify import DEFAULT_POLICY, Policy
from .base import Capabilities, Completion, Provider, Request

_WORD = re.compile(r"[^\W_]+")
# Besides function words, the verbs and adverbs questions are phrased with ("how long does it
# take") name no content a sentence has to cover.
_STOP = STOPWORDS | frozenset(
    "about into any all also not no yes tell get gets take takes long often need needs give "
    "know please".split()
)


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
        self, model: str = "extractive", max_claims: int = 3, min_coverage: float = 0.35
    ) -> None:
        super().__init__(model)
        self.max_claims = max_claims
        self.min_coverage = min_coverage

    def complete(self, request: Request) -> Completion:
        chosen = self.select(request.question, request.working_set, request.policy)
        if not chosen:
            answer = {
                "answerable": False,
                "claims": [],
                "missing": "no source sentence covers enough of the question",
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
        """The best sentences, best first, or none when coverage is too low; only sentences
        whose length ``policy`` accepts as a quote are offered."""
        sentences = _sentences(ws, policy)
        wanted = _terms(question)
        if not sentences or not wanted:
            return []
        df = {t: sum(t in s.terms for s in sentences) for t in wanted}
        idf = {t: math.log(1 + len(sentences) / (1 + df[t])) for t in wanted}
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


def _sentences(ws: WorkingSet, policy: Policy) -> list[_Sentence]:
    out: list[_Sentence] = []
    for src in ws:
        for start, end in sentence_spans(src.text):
            text = src.text[start:end]
            fits = policy.min_quote_words <= quote_words(text) <= policy.max_quote_words
            if fits and not text.lstrip().startswith("#"):
                out.append(_Sentence(src.id, text, frozenset(_terms(text)), len(out)))
    return out
