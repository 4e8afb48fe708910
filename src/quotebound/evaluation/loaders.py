"""Datasets for ``quotebound eval``: each file becomes typed examples of one of two tasks.

- ``PairExample`` (entailment task): a claim, the text cited for it, and a gold label.
  From AttributionBench and WiCE (binary: ``supported`` / ``not_supported``) and from the
  per-claim ``support`` labels of our own JSONL format (three labels).
- ``AnswerExample`` (answer task): a question, the sources sent, and either the model's raw
  output (our JSONL format, stored traces) or nothing (CLAPNQ: the answer pipeline makes it),
  with an optional gold ``answerable`` and per-claim / per-citation labels.

Invariants:
- A file is read as one kind, given or detected from its name, else from its first row's
  fields; a row that breaks the kind's schema is an ``InputError`` naming file and line.
- Nothing is silently dropped: a row that cannot make an example (an AttributionBench row with
  no reference text) is counted in ``Dataset.skipped`` with why.
- The WiCE quote choice is documented in docs/evaluation.md ("Loaders").
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, SourceError, unreadable
from ..parsing import FORMATS
from ..sources import Source
from ..store.base import legacy_provider_error

Kind = Literal["attributionbench", "wice", "clapnq", "quotebound"]
KINDS: tuple[Kind, ...] = ("attributionbench", "wice", "clapnq", "quotebound")
PAIR_KINDS = frozenset({"attributionbench", "wice"})
BINARY_LABELS: tuple[str, ...] = ("supported", "not_supported")
THREE_LABELS: tuple[str, ...] = ("supported", "contradicted", "unrelated")
WICE_MAX_QUOTE_CHARS = 1500
WICE_FALLBACK_SENTENCES = 3
_MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")  # AttributionBench keeps "[2]" markers
_WORD = re.compile(r"[^\W_]{3,}")
_OWN_FIELDS = frozenset(
    {"id", "question", "sources", "output", "format", "labels", "meta", "verdict", "trace"}
)


@dataclass(frozen=True, slots=True)
class PairExample:
    """One claim and the text cited for it, with the gold label."""

    id: str
    claim: str
    quote: str
    gold: str  # one of the dataset's labels (BINARY_LABELS or THREE_LABELS)
    original: str  # the dataset's own label ("partially_supported", "not attributable", ...)
    group: str | None = None  # sub-dataset (AttributionBench ``src_dataset``)


@dataclass(frozen=True, slots=True)
class ClaimLabel:
    """Gold labels for the n-th claim of a parsed output; None where not labelled."""

    support: str | None = None  # supported | contradicted | unrelated
    needed: tuple[bool | None, ...] = ()  # per citation: is it needed to support the claim


@dataclass(frozen=True, slots=True)
class AnswerExample:
    """A question with the sources sent and, when it exists, the model's raw output."""

    id: str
    question: str
    sources: tuple[Source, ...]
    output: str | None = None  # None: the answer pipeline writes it (CLAPNQ)
    format: str = "auto"
    answerable: bool | None = None
    claims: tuple[ClaimLabel, ...] | None = None  # gold per parsed claim, in order
    gold_quotes: tuple[str, ...] = ()  # CLAPNQ: sentences the annotators selected
    title: str | None = None
    error: str | None = None  # the provider error recorded instead of an output
    where: str | None = None  # "FILE line N", for messages


@dataclass
class Dataset:
    kind: Kind
    paths: list[str]
    pairs: list[PairExample] = field(default_factory=list)
    answers: list[AnswerExample] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def task(self) -> Literal["pairs", "answers"]:
        return "pairs" if self.kind in PAIR_KINDS else "answers"

    @property
    def labels(self) -> tuple[str, ...]:
        return BINARY_LABELS if self.kind in PAIR_KINDS else THREE_LABELS

    def __len__(self) -> int:
        return len(self.pairs) if self.task == "pairs" else len(self.answers)


def _rows(path: Path) -> Generator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise unreadable("dataset", path, exc) from None
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as exc:
                    raise InputError(f"{path} line {number} is not valid JSON: {exc}") from None
                if not isinstance(row, dict):
                    raise InputError(f"{path} line {number} must be a JSON object")
                yield number, row
        except UnicodeDecodeError as exc:
            raise unreadable("dataset", path, exc) from None


def detect_kind(path: Path) -> Kind:
    """The dataset kind, from the file name, else from the fields of its first row."""
    name = path.name.lower()
    if "attributionbench" in name or "subset_balanced" in name:
        return "attributionbench"
    if "wice" in name or name.startswith("claim_"):
        return "wice"
    if "clapnq" in name:
        return "clapnq"
    rows = _rows(path)
    with contextlib.closing(rows):
        row = next(rows, (0, {}))[1]
    if "attribution_label" in row:
        return "attributionbench"
    if "supporting_sentences" in row and "evidence" in row:
        return "wice"
    if "passages" in row and "input" in row:
        return "clapnq"
    if "sources" in row and "question" in row:
        return "quotebound"
    raise InputError(
        f"cannot tell what kind of dataset {path} is; give --dataset-kind ({', '.join(KINDS)})"
    )


def load_dataset(
    paths: Sequence[Path], kind: Kind | None = None, limit: int | None = None
) -> Dataset:
    """Read DATASET files (all of one kind); ``limit`` keeps the first N rows of each file."""
    if not paths:
        raise InputError("give at least one DATASET file")
    kinds = [kind or detect_kind(p) for p in paths]
    if len(set(kinds)) > 1:
        named = ", ".join(f"{p.name} ({k})" for p, k in zip(paths, kinds, strict=True))
        raise InputError(f"the DATASET files are of different kinds: {named}; give one kind")
    dataset = Dataset(kinds[0], [str(p) for p in paths])
    for path in paths:
        rows = _limited(_rows(path), limit)
        if dataset.kind == "attributionbench":
            _load_attributionbench(dataset, path, rows)
        elif dataset.kind == "wice":
            dataset.pairs += (_wice_pair(path, n, row) for n, row in rows)
        elif dataset.kind == "clapnq":
            dataset.answers += (_clapnq_example(path, n, row) for n, row in rows)
        else:
            dataset.answers += (own_example(row, f"{path} line {n}", n) for n, row in rows)
    if not len(dataset):
        raise InputError(f"no examples in {', '.join(dataset.paths)}")
    return dataset


def _limited(
    rows: Generator[tuple[int, dict[str, Any]]], limit: int | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        for count, item in enumerate(rows):
            if limit is not None and count >= limit:
                return
            yield item
    finally:
        rows.close()  # the file is closed now, not when the generator is collected


def _need(row: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in row:
        raise InputError(f"{where}: missing field {name!r}")
    value = row[name]
    if not isinstance(value, kind):
        raise InputError(f"{where}: field {name!r} must be a {kind.__name__}")
    return value


# --- AttributionBench --------------------------------------------------------------------


def _load_attributionbench(
    dataset: Dataset, path: Path, rows: Iterator[tuple[int, dict[str, Any]]]
) -> None:
    for number, row in rows:
        where = f"{path} line {number}"
        claim = _MARKER.sub("", _need(row, "claim", str, where)).strip()
        refs = _need(row, "references", list, where)
        label = _need(row, "attribution_label", str, where)
        if label not in ("attributable", "not attributable"):
            raise InputError(
                f"{where}: attribution_label must be 'attributable' or "
                f"'not attributable', got {label!r}"
            )
        quote = "\n\n".join(r.strip() for r in refs if isinstance(r, str) and r.strip())
        if not quote or not claim:
            key = "no_reference_text" if not quote else "empty_claim"
            dataset.skipped[key] = dataset.skipped.get(key, 0) + 1
            continue
        gold = "supported" if label == "attributable" else "not_supported"
        dataset.pairs.append(
            PairExample(
                str(row.get("id", f"{path.name}:{number}")),
                claim,
                quote,
                gold,
                label,
                row.get("src_dataset"),
            )
        )


# --- WiCE ----------------------------------------------------------------------------------


def _wice_pair(path: Path, number: int, row: dict[str, Any]) -> PairExample:
    where = f"{path} line {number}"
    claim = _need(row, "claim", str, where)
    evidence = _need(row, "evidence", list, where)
    sets = _need(row, "supporting_sentences", list, where)
    label = _need(row, "label", str, where)
    if label not in ("supported", "partially_supported", "not_supported"):
        raise InputError(
            f"{where}: label must be supported, partially_supported or not_supported, got {label!r}"
        )
    meta = row.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    quote = wice_quote(claim, [str(s) for s in evidence], sets)
    gold = "supported" if label == "supported" else "not_supported"
    return PairExample(str(meta.get("id", f"{path.name}:{number}")), claim, quote, gold, label)


def wice_quote(claim: str, evidence: Sequence[str], sets: Sequence[Any]) -> str:
    """The text a WiCE claim is checked against.

    The first annotator's support set (sentence indices, in document order) when it is not
    empty, else the first non-empty set of another annotator; when every set is empty (most
    ``not_supported`` claims), the (at most) ``WICE_FALLBACK_SENTENCES`` evidence sentences
    sharing most words (of 3+ letters) with the claim, ties to the earlier, in document order:
    what a retriever would have cited, a hard negative (the first sentences of a page are mostly
    navigation, an easy one); the first sentences only when no sentence shares a word. Cut at
    ``WICE_MAX_QUOTE_CHARS`` characters.
    """
    chosen: list[int] = []
    for annotator in sets:
        if isinstance(annotator, list):
            chosen = [i for i in annotator if isinstance(i, int) and 0 <= i < len(evidence)]
        if chosen:
            break
    if not chosen:
        words = {w.lower() for w in _WORD.findall(claim)}
        # (shared words, -position): the most shared first, the earliest among equals
        ranked = sorted(
            (
                (len(words & {w.lower() for w in _WORD.findall(s)}), -i)
                for i, s in enumerate(evidence)
            ),
            reverse=True,
        )
        chosen = [-neg for shared, neg in ranked[:WICE_FALLBACK_SENTENCES] if shared]
        chosen = chosen or list(range(min(WICE_FALLBACK_SENTENCES, len(evidence))))
    text = " ".join(evidence[i].strip() for i in sorted(set(chosen)))
    return text[:WICE_MAX_QUOTE_CHARS]


# --- CLAPNQ --------------------------------------------------------------------------------


def _clapnq_example(path: Path, number: int, row: dict[str, Any]) -> AnswerExample:
    where = f"{path} line {number}"
    question = _need(row, "input", str, where)
    passages = _need(row, "passages", list, where)
    if not passages or not isinstance(passages[0], dict) or "text" not in passages[0]:
        raise InputError(f"{where}: passages must hold one {{title, text}} object")
    outputs = row.get("output") or []
    answers = [o for o in outputs if isinstance(o, dict)]
    # Unanswerable rows have only empty answers (README.txt); the file name is not needed.
    answerable = any(str(o.get("answer") or "").strip() for o in answers)
    gold = tuple(s for o in answers for s in o.get("selected_sentences") or [] if s)
    passage = passages[0]
    title = str(passage.get("title") or "") or None
    source = Source("S1", str(passage["text"]), title=title)
    return AnswerExample(
        str(row.get("id", f"{path.name}:{number}")),
        question,
        (source,),
        answerable=answerable,
        gold_quotes=gold,
        title=title,
    )


# --- our own format --------------------------------------------------------------------------


def own_example(row: Mapping[str, Any], where: str, number: int = 0) -> AnswerExample:
    """One line of the quotebound evaluation JSONL format (docs/evaluation.md)."""
    unknown = sorted(set(row) - _OWN_FIELDS)
    if unknown:
        raise InputError(
            f"{where}: unknown field(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(_OWN_FIELDS))}"
        )
    question = _need(row, "question", str, where)
    raw_sources = _need(row, "sources", list, where)
    output = _need(row, "output", str, where)
    fmt = row.get("format", "auto")
    if fmt not in FORMATS:
        raise InputError(f"{where}: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        sources = tuple(Source.from_dict(s) for s in raw_sources)
    except SourceError as exc:
        raise InputError(f"{where}: {exc}") from None
    labels = row.get("labels") or {}
    if not isinstance(labels, dict):
        raise InputError(f"{where}: labels must be a JSON object")
    answerable = labels.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        raise InputError(f"{where}: labels.answerable must be true, false or null")
    claims = labels.get("claims")
    parsed = None if claims is None else _claim_labels(claims, where)
    trace = row.get("trace")
    failed = isinstance(trace, dict) and trace.get("status") == "provider_error"
    error = output if failed or legacy_provider_error(output) else None
    return AnswerExample(
        str(row.get("id") or f"line-{number}"),
        question,
        sources,
        output,
        fmt,
        answerable,
        parsed,
        error=error,
        where=where,
    )


def _claim_labels(claims: Any, where: str) -> tuple[ClaimLabel, ...]:
    if not isinstance(claims, list):
        raise InputError(f"{where}: labels.claims must be a list (one object per claim)")
    out = []
    for n, item in enumerate(claims, 1):
        if not isinstance(item, dict):
            raise InputError(f"{where}: labels.claims[{n}] must be a JSON object")
        support = item.get("support")
        if support is not None and support not in THREE_LABELS:
            raise InputError(
                f"{where}: labels.claims[{n}].support must be one of "
                f"{', '.join(THREE_LABELS)} or null, got {support!r}"
            )
        cits = item.get("citations") or []
        if not isinstance(cits, list):
            raise InputError(f"{where}: labels.claims[{n}].citations must be a list")
        needed: list[bool | None] = []
        for m, cit in enumerate(cits, 1):
            value = cit.get("needed") if isinstance(cit, dict) else cit
            if value is not None and not isinstance(value, bool):
                raise InputError(
                    f"{where}: labels.claims[{n}].citations[{m}].needed must be true, false or null"
                )
            needed.append(value)
        out.append(ClaimLabel(support, tuple(needed)))
    return tuple(out)
