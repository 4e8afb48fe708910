"""The fast checker: cheap features of a (claim, evidence) pair, combined by a fitted logistic
model; the default entailment tier.

Features (``FEATURES``, in order), all computed on normalised text with the project's one
content-word definition (``text.words.content_words``: light stems, function words out):

- ``content_share``: the share of the claim's content words found anywhere in the evidence;
- ``sentence_share``: the best share found within one evidence sentence;
- ``bigram_share``: the share of the claim's consecutive content-word pairs found in the
  evidence in the same order, adjacent (phrases, not just words);
- ``missing_words``: how many of the claim's content words the evidence lacks, log-scaled;
- ``number_share``, ``has_numbers``: the share of the claim's numbers (by value) in the
  evidence, and whether the claim has any (a claim without numbers gets share 1);
- ``name_share``: the share of the claim's capitalised words (not opening a sentence) found in
  the evidence, 1 when it has none;
- ``mismatch``: 1 when the heuristic's contradiction rules fire (negation dropped or added, a
  comparative flipped, a name changed in the same role), else 0. A firing rule is also a veto:
  the pair is ``contradicted`` whatever ``p`` is, as with the heuristic (AttributionBench has
  few outright contradictions, so the model alone learns little weight for it; a verbatim
  quote that negates its claim is the blatant case the tier exists for);
- ``similarity``: the cosine of the claim to its nearest evidence sentence under the packaged
  all-MiniLM-L6-v2, among the ``SIMILARITY_SENTENCES`` sentences sharing most content words
  with it (embedding a handful of sentences, not every one, keeps the tier fast);
- ``claim_words``, ``evidence_words``: the two lengths, log-scaled.

The model is ``p = sigmoid(b + sum_i w_i * (x_i - mean_i) / scale_i)``, its weights shipped as
data (``fast_checker.json``), fitted on AttributionBench **dev** only by
``benchmarks/training/train_fast_checker.py`` (``REFIT``; a test refits it and compares). A
pair is ``supported`` when ``p >= threshold`` and no contradiction rule fired. The judgement's
score is ``p`` (or ``1 - p``), its detail the features that weighed most. A claim too long for
the encoder fails closed, as the heuristic's does.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from ..text.normalize import normalize
from ..text.sentences import sentence_spans
from ..text.tokens import numbers
from ..text.words import STOPWORDS, content_words, stem
from .base import Backend, EntailmentError, Judgement
from .heuristic import MODEL_NAME, SharesEncoder, embed, encoder_fits, load_minilm, mismatch

FEATURES: tuple[str, ...] = (
    "content_share",
    "sentence_share",
    "bigram_share",
    "missing_words",
    "number_share",
    "has_numbers",
    "name_share",
    "mismatch",
    "similarity",
    "claim_words",
    "evidence_words",
)
SIMILARITY_SENTENCES = 2  # evidence sentences embedded per pair, the most overlapping ones
MAX_SENTENCE_CHARS = 400  # a longer "sentence" is embedded by its first characters only
# How the shipped weights are fitted and written, run from the repository root.
REFIT = ".venv/bin/python -m benchmarks.training.train_fast_checker --write"
_TOKEN = re.compile(r"[^\W_]+")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]*")


@dataclass(frozen=True, slots=True)
class Weights:
    """A fitted logistic model over ``FEATURES``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    meta: dict[str, Any]

    def probability(self, x: Sequence[float]) -> float:
        z = self.intercept + sum(
            w * (v - m) / s for w, v, m, s in zip(self.coef, x, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def contributions(self, x: Sequence[float]) -> list[tuple[str, float]]:
        """Each feature's term in the sum, largest effect first."""
        terms = [
            (name, w * (v - m) / s)
            for name, w, v, m, s in zip(
                self.features, self.coef, x, self.mean, self.scale, strict=True
            )
        ]
        return sorted(terms, key=lambda t: -abs(t[1]))

    def judgement(self, x: Sequence[float], backend: str, version: str) -> Judgement:
        """``supported`` when ``x``'s probability reaches the threshold, else ``unrelated``;
        the score is the probability of the label, the detail the three largest terms."""
        p = self.probability(x)
        top = ", ".join(f"{n} {v:+.2f}" for n, v in self.contributions(x)[:3])
        detail = f"p {p:.3f} vs threshold {self.threshold:g} ({top})"
        if p >= self.threshold:
            return Judgement("supported", p, backend, version, detail=detail)
        return Judgement("unrelated", 1.0 - p, backend, version, detail=detail)

    def digest(self) -> str:
        """Eight hex digits of the model's numbers: refitted weights get another version."""
        numbers = [*self.mean, *self.scale, *self.coef, self.intercept, self.threshold]
        return hashlib.sha256(json.dumps(numbers).encode()).hexdigest()[:8]

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "threshold": self.threshold,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], features: tuple[str, ...] = FEATURES, refit: str = ""
    ) -> Weights:
        """Weights read from ``data``, refused unless they are for ``features`` (this code's;
        ``refit`` names the script that fits them)."""
        weights = cls(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
            threshold=float(data["threshold"]),
            meta=dict(data.get("meta", {})),
        )
        if weights.features != features:
            raise EntailmentError(
                f"the fast checker's weights are for features {list(weights.features)}, "
                f"this code computes {list(features)}: refit with "
                f"{refit or REFIT}"
            )
        return weights


@cache
def shipped_weights() -> Weights:
    """The weights in the package (``fast_checker.json``)."""
    raw = resources.files(__package__).joinpath("fast_checker.json").read_text("utf-8")
    return Weights.from_dict(json.loads(raw))


@dataclass(frozen=True, slots=True)
class Lexical:
    """The features that need no model, and the sentences to embed for ``similarity``."""

    values: dict[str, float]
    nearest: tuple[str, ...]
    rule: str | None  # the contradiction rule that fired, as the heuristic words it


def _share(found: int, total: int) -> float:
    return found / total if total else 1.0


def _bigrams(words: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(words))


def _content_sequence(normalized: str) -> list[str]:
    """The content words of a text in order (stems; function words out), for bigrams."""
    return [
        stem(t)
        for t in _TOKEN.findall(normalized)
        if t.isdigit() or (len(t) >= 2 and t not in STOPWORDS)
    ]


def _names(text: str) -> set[str]:
    return {m.lower() for m in _NAME.findall(text) if m.lower() not in STOPWORDS}


def lexical(claim: str, evidence: str) -> Lexical:
    """Every feature of the pair but ``similarity``, and its nearest sentences."""
    c_norm, e_norm = normalize(claim), normalize(evidence)
    wanted = content_words(c_norm)
    found = content_words(e_norm)
    spans = sentence_spans(evidence) or [(0, len(evidence))]
    sentences = [evidence[a:b] for a, b in spans]
    shares = [len(wanted & content_words(normalize(s))) for s in sentences]
    order = sorted(range(len(sentences)), key=lambda k: (-shares[k], k))
    c_seq = _content_sequence(c_norm)
    c_bigrams = _bigrams(c_seq)
    e_bigrams = _bigrams(_content_sequence(e_norm))
    c_numbers = numbers(c_norm)
    e_numbers = numbers(e_norm)
    c_names = _names(claim)
    found_rule = mismatch(claim, evidence)
    values = {
        "content_share": _share(len(wanted & found), len(wanted)),
        "sentence_share": _share(max(shares, default=0), len(wanted)),
        "bigram_share": _share(len(c_bigrams & e_bigrams), len(c_bigrams)),
        "missing_words": math.log1p(len(wanted - found)),
        "number_share": _share(len(c_numbers & e_numbers), len(c_numbers)),
        "has_numbers": 1.0 if c_numbers else 0.0,
        "name_share": _share(sum(n in e_norm for n in c_names), len(c_names)),
        "mismatch": 1.0 if found_rule is not None else 0.0,
        "similarity": 0.0,
        "claim_words": math.log1p(len(_TOKEN.findall(c_norm))),
        "evidence_words": math.log1p(len(_TOKEN.findall(e_norm))),
    }
    nearest = tuple(sentences[k][:MAX_SENTENCE_CHARS] for k in order[:SIMILARITY_SENTENCES])
    return Lexical(values, nearest, found_rule[0] if found_rule else None)


class FastChecker(SharesEncoder, Backend):
    """The ``fast`` backend: ``lexical`` features plus one MiniLM similarity, fitted weights."""

    name: ClassVar[str] = "fast"

    def __init__(
        self,
        weights: Weights | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Any = None,
    ) -> None:
        self.weights = weights or shipped_weights()
        self.batch_size = batch_size
        fitted = self.weights.meta.get("version", "0")
        self.version = f"fast-{fitted}.{self.weights.digest()}+{MODEL_NAME}"
        self._encoder = encoder if encoder is not None else load_minilm(device)
        self._lock = threading.Lock()  # one encoder call at a time (its tokenizer is not shared)

    def judge(self, claim: str, quote: str) -> Judgement:
        return self.judge_many([(claim, quote)])[0]

    def features_many(self, pairs: Sequence[tuple[str, str]]) -> list[list[float] | None]:
        """Each pair's feature vector (``FEATURES`` order), None for a pair it cannot read
        whole (an empty side, a claim too long for the encoder). Raises ``EntailmentError``
        when the encoder fails."""
        return [row[0] if row else None for row in self._read(pairs)]

    def _read(
        self, pairs: Sequence[tuple[str, str]]
    ) -> list[tuple[list[float], str | None] | None]:
        out: list[tuple[list[float], str | None] | None] = []
        rows: list[tuple[Lexical, str] | None] = []
        texts: dict[str, int] = {}
        for claim, quote in pairs:
            if not _TOKEN.search(claim) or not _TOKEN.search(quote) or not self._fits(claim):
                rows.append(None)
                continue
            lex = lexical(claim, quote)
            rows.append((lex, claim))
            for text in (claim, *lex.nearest):
                texts.setdefault(text, len(texts))
        vectors = self._embed(list(texts)) if texts else []
        for row in rows:
            if row is None:
                out.append(None)
                continue
            lex, claim = row
            c = vectors[texts[claim]]
            sim = max((float(c @ vectors[texts[s]]) for s in lex.nearest), default=0.0)
            values = dict(lex.values, similarity=sim)
            out.append(([values[name] for name in FEATURES], lex.rule))
        return out

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        try:
            rows = self._read(pairs)
        except EntailmentError as exc:  # fail closed: never pass what was not checked
            return [self.failed(str(exc)) for _ in pairs]
        return [self._judgement(*row) if row else self._judgement(None, None) for row in rows]

    def probability(self, x: Sequence[float]) -> float:
        return self.weights.probability(x)

    def _judgement(self, x: list[float] | None, rule: str | None) -> Judgement:
        if x is None:
            return self.failed(f"empty claim or evidence, or a claim too long for {MODEL_NAME}")
        if rule is not None:  # a veto: a verbatim quote that negates or flips its claim
            p = self.weights.probability(x)
            return Judgement("contradicted", max(p, 1.0 - p), self.name, self.version, detail=rule)
        return self.weights.judgement(x, self.name, self.version)

    def _fits(self, claim: str) -> bool:
        return encoder_fits(self._encoder, claim, self._lock)

    def _embed(self, texts: list[str]) -> Any:
        return embed(self._encoder, texts, self.batch_size, self._lock)

    def close(self) -> None:
        self._encoder = None
