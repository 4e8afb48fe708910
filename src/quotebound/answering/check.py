"""The fast answer check: does this evidence answer this question? Cheap features of the
(question, evidence) pair combined by a fitted logistic model, as the fast checker combines a
(claim, evidence) pair's.

A verified answer can still fail to answer: on a question its documents do not answer, a
model quotes the passage on the topic faithfully, and every code check passes. What tells the
two apart, measured on CLAPNQ (whose unanswerable questions come with a passage of the same
Wikipedia page that lacks the answer), is mostly meaning: how close the evidence's best
sentence is to the question under the packaged all-MiniLM-L6-v2, how much of the question it
covers, and how much it adds. Features (``ANSWER_FEATURES``, in order), on normalised text
with the project's one content-word definition:

- ``question_share``: the share of the question's content words found in the evidence;
- ``sentence_share``: the best share found within one evidence sentence;
- ``type_missing``: 1 when the question asks for a kind of answer the evidence has none of (a
  "when" question and no year, month or century; "how many/much/long/old..." and no number;
  "who"/"where" and no capitalised name the question lacks), else 0;
- ``typed_question``: 1 when the question asks for such a kind, else 0;
- ``similarity``: the cosine of the question to the nearest of the evidence's
  ``SIMILARITY_SENTENCES`` sentences sharing most words with it, under MiniLM;
- ``new_words``: how many content words the evidence adds to the question's, log-scaled;
- ``evidence_words``: the evidence's length, log-scaled.

The weights are data (``answer_checker.json``), fitted by ``REFIT``
(``benchmarks/training/answer_check.py train-fast``) on CLAPNQ dev rows that the
answer-quality benchmark never asks (a test refits them and compares). ``supported`` means
the evidence answers the question; a pair it cannot read whole fails closed (the answer check
then refuses, as the judge's does).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from ..choices import ANSWER_CHECKS
from ..entailment.base import EntailmentError, Judgement, reads_documents
from ..entailment.heuristic import (
    MODEL_NAME,
    SharesEncoder,
    embed,
    encoder_fits,
    load_minilm,
    shared_encoder,
)
from ..entailment.judge import JUDGE_MODEL
from ..entailment.learned import MAX_SENTENCE_CHARS, Weights
from ..providers.base import Provider
from ..providers.extractive import ExtractiveProvider
from ..text.normalize import normalize
from ..text.sentences import sentence_spans
from ..text.tokens import numbers
from ..text.words import STOPWORDS, content_words

ANSWER_FEATURES: tuple[str, ...] = (
    "question_share",
    "sentence_share",
    "type_missing",
    "typed_question",
    "similarity",
    "new_words",
    "evidence_words",
)
# ``on``: the judge (older name); ``both``: the mean of the fast check's and the judge's;
# ``auto``: ``both`` when the answering model is the judge's own (no second model), else ``fast``
SIMILARITY_SENTENCES = 4  # evidence sentences embedded per check, those nearest the question
# How the shipped weights are fitted and written, run from the repository root.
REFIT = ".venv/bin/python -m benchmarks.training.answer_check train-fast"
# ``both``: the least mean of the fast check's probability and the judge's P(yes) that is an
# answer, fitted on the 1.5B's answers to 50 + 50 CLAPNQ dev questions outside the reported
# sample (``python -m benchmarks.quality.answer_replay --answer-check both --both-threshold``;
# docs/answering.md)
BOTH_THRESHOLD = 0.55
EXTRACT_CLAIMS = 2  # the most sentences the ranked fallback serves (docs/answering.md)
# ``ask --fallback`` and ``serve --fallback``: ``extractive`` (the default) ranks the sources'
# sentences by the fast answer check beside it (by the question's words beside the judge's);
# ``covering``: by the question's words beside any check; ``off``: none (docs/answering.md).

# What kind of answer a question asks for, read from its opening words (English).
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "time",
        re.compile(
            r"^(when|what (year|date|time|day|month|century|decade|era|period)"
            r"|which (year|date|century)|how long ago|since when)\b"
        ),
    ),
    (
        "number",
        re.compile(
            r"\b(how (many|much|long|old|far|tall|big|high|large|deep|fast|often)"
            r"|what (percentage|percent|number|amount|size|population))\b"
        ),
    ),
    ("name", re.compile(r"^(who|whom|whose|where)\b|\b(who|where) (is|was|are|were|did|does)\b")),
)
_TIME = re.compile(
    r"\b(1[0-9]{3}|20[0-9]{2})\b|\b(january|february|march|april|may|june|july|august"
    r"|september|october|november|december|century|centuries)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]*")
_TOKEN = re.compile(r"[^\W_]+")


def asked_kind(question: str) -> str | None:
    """``time``, ``number`` or ``name``: the kind of answer ``question`` asks for, or None."""
    low = " ".join(question.casefold().split())
    return next((kind for kind, pattern in _KINDS if pattern.search(low)), None)


def has_kind(kind: str | None, question: str, evidence: str) -> bool:
    """Whether ``evidence`` holds an answer of that kind (any evidence, for no kind)."""
    if kind == "time":
        return _TIME.search(evidence) is not None
    if kind == "number":
        return bool(numbers(normalize(evidence)))
    if kind == "name":
        asked = set(_TOKEN.findall(question.casefold()))
        names = {m.casefold() for m in _NAME.findall(evidence)} - STOPWORDS
        return any(name not in asked for name in names)
    return True


def _sentences(evidence: str) -> list[str]:
    return [evidence[a:b] for a, b in (sentence_spans(evidence) or [(0, len(evidence))])]


def answer_lexical(question: str, evidence: str) -> tuple[dict[str, float], tuple[str, ...]]:
    """Every feature of the pair but ``similarity``, and the evidence sentences to embed."""
    asked = content_words(normalize(question))
    found = content_words(normalize(evidence))
    sentences = _sentences(evidence)
    shares = [len(asked & content_words(normalize(s))) for s in sentences]
    order = sorted(range(len(sentences)), key=lambda k: (-shares[k], k))
    kind = asked_kind(question)
    values = {
        "question_share": len(asked & found) / len(asked) if asked else 1.0,
        "sentence_share": max(shares, default=0) / len(asked) if asked else 1.0,
        "type_missing": 0.0 if has_kind(kind, question, evidence) else 1.0,
        "typed_question": 0.0 if kind is None else 1.0,
        "similarity": 0.0,
        "new_words": math.log1p(len(found - asked)),
        "evidence_words": math.log1p(len(_TOKEN.findall(normalize(evidence)))),
    }
    nearest = tuple(sentences[k][:MAX_SENTENCE_CHARS] for k in order[:SIMILARITY_SENTENCES])
    return values, nearest


@cache
def shipped_answer_weights() -> Weights:
    """The answer check's weights in the package (``answer_checker.json``)."""
    raw = resources.files(__package__).joinpath("answer_checker.json").read_text("utf-8")
    return Weights.from_dict(json.loads(raw), ANSWER_FEATURES, REFIT)


class AnswerChecker(SharesEncoder):
    """The fast answer check (``ask --answer-check fast``): ``answers(question, evidence)``,
    the ``AskOptions.answer_check`` callable. Not an entailment tier: it judges questions."""

    name: ClassVar[str] = "fast-answers"

    def __init__(
        self,
        weights: Weights | None = None,
        *,
        device: str = "cpu",
        encoder: Any = None,
        lock: threading.Lock | None = None,
    ) -> None:
        self.weights = weights or shipped_answer_weights()
        fitted = self.weights.meta.get("version", "0")
        self.version = f"answers-{fitted}.{self.weights.digest()}+{MODEL_NAME}"
        self._encoder = encoder if encoder is not None else load_minilm(device)
        # one encoder call at a time; share the lock of whoever shares the encoder
        self._lock = lock or threading.Lock()

    @classmethod
    def beside(cls, tier: object | None) -> AnswerChecker:
        """An answer check sharing the encoder of the support tier ``ask`` runs when that
        tier holds one (the fast checker, or the cascade's), so that MiniLM loads once."""
        return cls(**shared_encoder(tier))

    def features(self, question: str, evidence: str) -> list[float] | None:
        """The pair's feature vector (``ANSWER_FEATURES`` order); None when either side is
        empty or the question is too long for the encoder. Raises ``EntailmentError`` when
        the encoder fails."""
        return self.features_many([(question, evidence)])[0]

    def features_many(self, pairs: Sequence[tuple[str, str]]) -> list[list[float] | None]:
        """``features`` of each pair, every text embedded in one encoder call."""
        rows: list[tuple[dict[str, float], str, tuple[str, ...]] | None] = []
        texts: dict[str, int] = {}
        for question, evidence in pairs:
            if not _TOKEN.search(question) or not _TOKEN.search(evidence):
                rows.append(None)
                continue
            if not encoder_fits(self._encoder, question, self._lock):
                rows.append(None)
                continue
            values, nearest = answer_lexical(question, evidence)
            rows.append((values, question, nearest))
            for text in (question, *nearest):
                texts.setdefault(text, len(texts))
        vectors = embed(self._encoder, list(texts), 64, self._lock) if texts else []
        out: list[list[float] | None] = []
        for row in rows:
            if row is None:
                out.append(None)
                continue
            values, question, nearest = row
            q = vectors[texts[question]]
            values["similarity"] = max((float(q @ vectors[texts[s]]) for s in nearest), default=0.0)
            out.append([values[name] for name in ANSWER_FEATURES])
        return out

    def answers(self, question: str, evidence: str) -> Judgement:
        """Whether ``evidence`` answers ``question``: ``supported`` when the fitted
        probability reaches the shipped threshold; fails closed."""
        try:
            x = self.features(question, evidence)
        except EntailmentError as exc:
            return self.failed(str(exc))
        if x is None:
            return self.failed(
                f"an empty question or evidence, or a question too long for {MODEL_NAME}"
            )
        return self.weights.judgement(x, self.name, self.version)

    def failed(self, message: str) -> Judgement:
        """The fail-closed judgement: not an answer."""
        return Judgement("unrelated", 0.0, self.name, self.version, error=message)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
        """The fitted probability of each (question, evidence) pair, None where unreadable."""
        return [
            None if x is None else self.weights.probability(x) for x in self.features_many(pairs)
        ]

    @property
    def extract_threshold(self) -> float:
        """The least score of a sentence ``extractor`` copies: the weights' own
        ``meta.extract_threshold`` (fitted on served answers), never below their threshold (a
        copied sentence the check would then refuse is no answer)."""
        floor = float(self.weights.meta.get("extract_threshold", self.weights.threshold))
        return max(floor, self.weights.threshold)

    def scores(self, question: str, sentences: Sequence[str]) -> list[float | None]:
        """The fitted probability that each sentence alone answers ``question`` (the ranker of
        ``extractor``; None for a pair it cannot read). Raises ``EntailmentError`` when the
        encoder fails: the extractor's attempt then fails with its message."""
        return self.probabilities([(question, s) for s in sentences])

    def extractor(
        self, max_claims: int = EXTRACT_CLAIMS, min_score: float | None = None
    ) -> ExtractiveProvider:
        """The extractive provider that copies the sources' sentences this check scores as
        answering the question (the best reaching ``min_score``, ``extract_threshold`` unless
        given, and at most ``max_claims``; in the sources' order): ``ask``'s fallback beside
        this check."""
        floor = self.extract_threshold if min_score is None else min_score
        return ExtractiveProvider(
            "extractive-ranked", max_claims, rank=self.scores, min_score=floor
        )

    def close(self) -> None:
        self._encoder = None


class BothAnswerCheck:
    """``ask --answer-check both``: the fast answer check and the judge's read together, the
    mean of the fast check's probability and the judge's P(yes) against ``BOTH_THRESHOLD``.
    Either failing fails closed (not an answer). The fallback it stands beside ranks sentences
    by the fast check alone (``extractor``); ``fast`` shares its MiniLM with a reranker."""

    name: ClassVar[str] = "fast+judge"

    def __init__(
        self,
        fast: AnswerChecker,
        judge: Any,
        threshold: float = BOTH_THRESHOLD,
        *,
        owns_judge: bool = True,
    ) -> None:
        self.fast = fast
        self.judge = judge  # a JudgeBackend: ``answers(question, evidence)``, ``provider``
        self.threshold = threshold
        # False: the judge runs on a model its caller closes (the one ``serve`` answers with)
        self.owns_judge = owns_judge
        self.version = f"both-{threshold:g}:{fast.version}|{judge.version}"

    @property
    def provider(self) -> Any:
        """The judge's provider (the CLI closes the check unless it is the answering one)."""
        return self.judge.provider

    def answers(self, question: str, evidence: str, documents: Sequence[str] = ()) -> Judgement:
        """Whether ``evidence`` answers ``question``: ``supported`` when the mean of the two
        reaches the threshold; the detail gives both. ``documents`` (the titles of the
        documents the evidence is quoted from) go to the judge alone, when it takes them: the
        fast check's features are fitted on the quotes."""
        try:
            fast = self.fast.probabilities([(question, evidence)])[0]
        except EntailmentError as exc:
            return self.failed(str(exc))
        if fast is None:
            return self.failed(
                f"an empty question or evidence, or a question too long for {MODEL_NAME}"
            )
        judged = (
            self.judge.answers(question, evidence, documents=documents)
            if documents and reads_documents(self.judge.answers)
            else self.judge.answers(question, evidence)
        )
        yes = judged.p_supported
        if yes is None:
            return self.failed(f"the judge: {judged.error}")
        mean = (fast + yes) / 2
        detail = (
            f"mean {mean:.3f} vs threshold {self.threshold:g} "
            f"(fast p {fast:.3f}, judge P(yes) {yes:.3f})"
        )
        if mean >= self.threshold:
            return Judgement("supported", mean, self.name, self.version, detail=detail)
        return Judgement("unrelated", 1.0 - mean, self.name, self.version, detail=detail)

    def failed(self, message: str) -> Judgement:
        """The fail-closed judgement: not an answer."""
        return Judgement("unrelated", 0.0, self.name, self.version, error=message)

    def extractor(self) -> ExtractiveProvider:
        """The fallback beside this check: the fast check's ranked sentences."""
        return self.fast.extractor()

    def close(self) -> None:
        self.fast.close()
        if self.owns_judge:
            self.judge.close()


def judges_itself(provider: Provider) -> bool:
    """Whether ``provider`` is the packaged judge model itself (the local Qwen2.5-Coder-1.5B),
    so that the judge's half of the answer check needs no second model."""
    return provider.name == "local" and provider.model.removesuffix(".gguf") == JUDGE_MODEL


def chosen_check(choice: str, provider: Provider) -> str:
    """The answer check that ``choice`` (one of ``ANSWER_CHECKS``) runs beside the answering
    ``provider``: ``auto`` is ``both`` when the provider is the packaged 1.5B and returns
    log-probabilities (the judge runs on the model already loaded), else ``fast``; ``on`` is
    ``judge``; any other choice is itself."""
    if choice not in ANSWER_CHECKS:
        raise EntailmentError(f"unknown answer check {choice!r}; known: {', '.join(ANSWER_CHECKS)}")
    if choice == "auto":
        return "both" if judges_itself(provider) and provider.capabilities.logprobs else "fast"
    return "judge" if choice == "on" else choice
