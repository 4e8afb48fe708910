"""The nli backend: a transformers sequence-classification model from a local directory.

Any model a user has on disk that ``AutoModelForSequenceClassification`` loads: an MNLI model
(three labels), MiniCheck (RoBERTa/DeBERTa variants, two labels) or an HHEM-style binary
checker. Nothing is downloaded (``local_files_only``, HF offline variables set). Premise =
quote, hypothesis = claim; pairs are batched and truncated to the model's length.

Labels are mapped from ``config.id2label``, case-insensitively (``-``, spaces and ``_`` alike):

- entailment, entailed, supported, support, consistent, attributable -> ``supported``;
- contradiction, contradicted, refuted -> ``contradicted``;
- neutral, not_entailment, unrelated, not supported, inconsistent, hallucinated -> ``unrelated``;
- a two-label model with generic labels (``LABEL_0``/``LABEL_1``, ``0``/``1``): label 1 is
  ``supported``, label 0 ``unrelated`` (MiniCheck and HHEM put the positive class at 1).

``label_map`` overrides or completes this (keys: label names or ids; values: our labels). A
label that cannot be mapped is an ``EntailmentError`` at load, naming the model's labels. The
probabilities of the model's labels are summed per our label; the largest wins, its sum is the
score. Models that need ``trust_remote_code`` (the original HHEM) are not loaded.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from .base import LABELS, Backend, EntailmentError, Judgement, Label
from .heuristic import offline, quiet_transformers, require

_NAMES: dict[str, Label] = {
    **dict.fromkeys(
        [
            "entailment",
            "entailed",
            "entails",
            "supported",
            "support",
            "supports",
            "consistent",
            "attributable",
            "factual",
        ],
        "supported",
    ),
    **dict.fromkeys(
        ["contradiction", "contradicted", "contradicts", "refuted", "refutes"], "contradicted"
    ),
    **dict.fromkeys(
        [
            "neutral",
            "not entailment",
            "non entailment",
            "unrelated",
            "not supported",
            "unsupported",
            "inconsistent",
            "hallucinated",
            "hallucination",
            "not attributable",
        ],
        "unrelated",
    ),
}
_GENERIC_BINARY = ({"label_0", "label_1"}, {"0", "1"})


def _norm(label: str) -> str:
    return " ".join(label.lower().replace("_", " ").replace("-", " ").split())


def map_labels(
    id2label: Mapping[int, str], label_map: Mapping[str | int, Label] | None = None
) -> dict[int, Label]:
    """Our label for each of the model's class ids; EntailmentError if one cannot be mapped."""
    overrides: dict[str | int, Label] = {}
    for key, value in (label_map or {}).items():
        if value not in LABELS:
            raise EntailmentError(f"label_map value {value!r} is not one of {', '.join(LABELS)}")
        overrides[key if isinstance(key, int) else _norm(key)] = value
    names = {int(i): str(name) for i, name in id2label.items()}
    generic = len(names) == 2 and {n.lower() for n in names.values()} in _GENERIC_BINARY
    mapped: dict[int, Label] = {}
    unmapped = []
    for i, name in sorted(names.items()):
        label = overrides.get(i) or overrides.get(_norm(name)) or _NAMES.get(_norm(name))
        if label is None and generic and set(names) == {0, 1}:
            label = "supported" if i == 1 else "unrelated"
        if label is None:
            unmapped.append(f"{i}: {name!r}")
        else:
            mapped[i] = label
    if unmapped:
        shown = ", ".join(f"{i}: {n!r}" for i, n in sorted(names.items()))
        raise EntailmentError(
            f"cannot map the model's label(s) {', '.join(unmapped)} to supported/contradicted/"
            f"unrelated (its labels: {shown}); pass label_map"
        )
    if "supported" not in mapped.values():
        raise EntailmentError(f"no label of the model means supported (its labels: {names})")
    return mapped


class NLIBackend(Backend):
    name: ClassVar[str] = "nli"

    def __init__(
        self,
        model_path: str | Path,
        *,
        label_map: Mapping[str | int, Label] | None = None,
        device: str = "cpu",
        batch_size: int = 16,
        max_length: int = 512,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise EntailmentError(f"no model directory at {path}")
        offline()
        torch = require("torch")
        transformers = require("transformers")
        quiet_transformers()
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                str(path), local_files_only=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise EntailmentError(f"cannot load a classification model from {path}: {exc}") from exc
        self.labels = map_labels(model.config.id2label, label_map)
        self.version = f"nli-1+{path.resolve().name}"
        self.batch_size = batch_size
        self.max_length = min(max_length, _model_max(tokenizer, model))
        self._torch = torch
        self._tokenizer = tokenizer
        self._model = model.to(device).eval()
        self._device = device
        self._lock = threading.Lock()

    def judge(self, claim: str, quote: str) -> Judgement:
        return self.judge_many([(claim, quote)])[0]

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        with self._lock:  # one batch at a time: the tokenizer and model are shared
            return self._judge_all(pairs)

    def _judge_all(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        out: list[Judgement] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start : start + self.batch_size]
            try:
                out += self._batch(batch)
            except (RuntimeError, ValueError, IndexError, AttributeError) as exc:
                out += [self.failed(f"nli model failed: {exc}") for _ in batch]
        return out

    def _batch(self, batch: Sequence[tuple[str, str]]) -> list[Judgement]:
        # Only the quote (the premise) is ever cut to fit; a claim that does not fit whole
        # with room for some premise is not judged at all: judging half a claim could pass it.
        fits = [self._claim_fits(claim) for claim, _ in batch]
        todo = [pair for pair, ok in zip(batch, fits, strict=True) if ok]
        judged = iter(self._classify(todo) if todo else [])
        return [
            next(judged) if ok else self.failed("the claim is too long for the nli model")
            for ok in fits
        ]

    def _claim_fits(self, claim: str) -> bool:
        ids = self._tokenizer(claim, add_special_tokens=False)["input_ids"]
        return len(ids) + 16 <= self.max_length  # room for special tokens and some premise

    def _classify(self, batch: Sequence[tuple[str, str]]) -> list[Judgement]:
        torch = self._torch
        enc = self._tokenizer(
            [quote for _, quote in batch],
            [claim for claim, _ in batch],
            truncation="only_first",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        enc = {k: v.to(self._device) for k, v in enc.items()}
        with torch.inference_mode():
            probs = torch.softmax(self._model(**enc).logits.float(), dim=-1).cpu().tolist()
        return [self._judgement(row) for row in probs]

    def _judgement(self, row: Sequence[float]) -> Judgement:
        per: dict[Label, float] = dict.fromkeys(LABELS, 0.0)
        for i, p in enumerate(row):
            if not math.isfinite(p):  # a broken model never passes a claim
                return self.failed("the nli model gave a non-finite probability")
            per[self.labels[i]] += p
        # Ties break away from "supported": only a strictly larger probability passes.
        label = max(reversed(LABELS), key=lambda lab: per[lab])
        shown = ", ".join(f"{lab} {per[lab]:.3f}" for lab in LABELS)
        return Judgement(label, per[label], self.name, self.version, detail=shown)

    def close(self) -> None:
        self._model = None


def _model_max(tokenizer: Any, model: Any) -> int:
    limits = [
        getattr(model.config, "max_position_embeddings", None),
        getattr(tokenizer, "model_max_length", None),
    ]
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min(usable) if usable else 512
