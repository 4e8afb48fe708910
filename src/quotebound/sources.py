"""Source and WorkingSet: the one allowlist shared by every step.

Invariants:
- A WorkingSet's ids are unique and exactly the ids a model may cite; membership is exact
  string equality (``doc_99`` is never ``doc_9``, ``s2`` is not ``S2``).
- Order is the order the sources were sent: an inline ``[n]`` marker means the n-th source
  (1-based), which is only safe because ids are dense after trimming (the packer's job).
- ``Source.text`` is exactly the text that was inserted into the prompt; spans in verdicts
  are ``[start, end)`` offsets into it.
- Normalised forms are computed lazily, once per source, and cached on the WorkingSet, so
  verifying costs nothing for sources that are never cited; ``prepare()`` does it eagerly
  (at pack time).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import SourceError
from .text._fast import TextCache
from .text.normalize import NormalizedText
from .text.tokens import Evidence

SourceKind = Literal["document", "tool", "user"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("document", "tool", "user")
_FIELDS = ("id", "text", "key", "title", "url", "updated", "kind", "page")


@dataclass(frozen=True, slots=True)
class Source:
    """One citable unit exactly as it was sent to the model."""

    id: str
    text: str
    key: str | None = None
    title: str | None = None
    url: str | None = None
    updated: str | None = None
    kind: SourceKind = "document"
    page: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise SourceError(f"source id must be a non-empty string, got {self.id!r}")
        if self.id != self.id.strip():
            raise SourceError(f"source id {self.id!r} has surrounding whitespace")
        if not isinstance(self.text, str):
            raise SourceError(f"source {self.id}: text must be a string")
        for name in ("key", "title", "url", "updated"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise SourceError(f"source {self.id}: {name} must be a string or null")
        if self.kind not in SOURCE_KINDS:
            raise SourceError(
                f"source {self.id}: kind must be one of {', '.join(SOURCE_KINDS)}, "
                f"got {self.kind!r}"
            )
        if self.page is not None and (
            isinstance(self.page, bool) or not isinstance(self.page, int) or self.page < 1
        ):
            raise SourceError(f"source {self.id}: page must be a positive integer or null")
        if self.updated is not None:
            _check_iso_date(self.id, self.updated)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Source:
        """Build a Source from its JSON form; unknown fields are an error, not ignored."""
        if not isinstance(data, Mapping):
            raise SourceError(f"a source must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise SourceError(
                f"source {data.get('id', '?')!r}: unknown field(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(_FIELDS)}"
            )
        for required in ("id", "text"):
            if required not in data:
                raise SourceError(f"source {data.get('id', '?')!r}: missing field {required!r}")
        return cls(**{k: data[k] for k in _FIELDS if k in data})

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; optional fields that are unset are left out."""
        out: dict[str, Any] = {"id": self.id, "text": self.text, "kind": self.kind}
        for name in ("key", "title", "url", "updated", "page"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def valid_date(value: str | None) -> str | None:
    """``value`` if it is a date a Source takes as ``updated`` (ISO 8601), else None: for
    dates read from elsewhere (stores, loaders, frameworks), left out rather than failing."""
    if not isinstance(value, str):
        return None
    try:
        _check_iso_date("x", value)
    except SourceError:
        return None
    return value


def _check_iso_date(sid: str, value: str) -> None:
    try:
        if "T" in value or " " in value.strip():
            _dt.datetime.fromisoformat(value)
        else:
            _dt.date.fromisoformat(value)
    except ValueError:
        raise SourceError(
            f"source {sid}: updated must be an ISO date such as 2026-01-31, got {value!r}"
        ) from None


@dataclass(slots=True)
class WorkingSet:
    """The sources sent with one request, in order: the allowlist every later step shares."""

    sources: tuple[Source, ...]
    _by_id: dict[str, int] = field(init=False, repr=False)
    _cache: TextCache = field(init=False, repr=False)

    def __init__(self, sources: Iterable[Source]) -> None:
        items = tuple(sources)
        by_id: dict[str, int] = {}
        for index, src in enumerate(items):
            if not isinstance(src, Source):
                raise SourceError(
                    f"WorkingSet takes Source objects, got {type(src).__name__} at {index}"
                )
            if src.id in by_id:
                raise SourceError(f"duplicate source id {src.id!r} in the working set")
            by_id[src.id] = index
        self.sources = items
        self._by_id = by_id
        self._cache = TextCache(items, by_id)

    @classmethod
    def from_dicts(cls, items: Iterable[Mapping[str, Any]]) -> WorkingSet:
        """A working set from the JSON form of its sources (``Source.from_dict`` each)."""
        return cls(Source.from_dict(item) for item in items)

    @classmethod
    def from_json(cls, data: Any) -> WorkingSet:
        """A working set from decoded JSON: a list of sources, or ``{"sources": [...]}``; a
        clear ``SourceError`` for anything else."""
        if isinstance(data, Mapping) and "sources" in data:
            data = data["sources"]
        if not isinstance(data, list):
            raise SourceError(f"sources must be a JSON list of objects, got {type(data).__name__}")
        return cls.from_dicts(data)

    def __len__(self) -> int:
        return len(self.sources)

    def __iter__(self) -> Iterator[Source]:
        return iter(self.sources)

    def __contains__(self, source_id: object) -> bool:
        return source_id in self._by_id

    @property
    def ids(self) -> tuple[str, ...]:
        """The allowed ids, in the order sent."""
        return tuple(self._by_id)  # (a dict keeps the order its keys were added in)

    def get(self, source_id: str) -> Source | None:
        """The source with exactly this id, or None: no fuzzy matching, ever."""
        index = self._by_id.get(source_id)
        return None if index is None else self.sources[index]

    def nth(self, n: int) -> Source | None:
        """The n-th source (1-based), for inline ``[n]`` markers; None when out of range."""
        if 1 <= n <= len(self.sources):
            return self.sources[n - 1]
        return None

    # What the verifier derives from the texts, each once: see ``text._fast.TextCache``.

    def normalized(self, source_id: str) -> NormalizedText:
        """The cached normalised text of a source (computed on first use)."""
        return self._cache.normalized(source_id)

    def markup_view(self, source_id: str) -> tuple[NormalizedText, list[int]] | None:
        """The source's normalised text without inline markup, and each of its characters'
        offset in the markup-free text's original (``text.markup``); None without markup."""
        return self._cache.markup_view(source_id)

    def locate(self, source_id: str, needle: str) -> tuple[int, int] | None:
        """Where a normalised needle occurs, on word bounds, in the source: its original
        ``[start, end)``, or None (``NormalizedText.locate``, found the fast way)."""
        return self._cache.locate(source_id, needle)

    def prime(self, source_ids: Iterable[str]) -> None:
        """Prepare, together, the sources a verdict is about to search (the cited ones)."""
        self._cache.prime(source_ids)

    def evidence(self, source_id: str) -> Evidence:
        """The cached support facts (number values) of a whole source."""
        return self._cache.evidence(source_id)

    def id_tokens(self) -> frozenset[str]:
        """The ids, normalised: a claim naming a source ("as S2 says") names no identifier."""
        return self._cache.id_tokens()

    def prepare(self) -> WorkingSet:
        """Normalise every source now (at pack time), and index their words, so that looking
        for a failed quote across the set costs time that does not grow with its size."""
        self._cache.prepare()
        return self

    def holder_of(self, needles: list[str], exclude: str) -> str | None:
        """The first other source in which a normalised needle occurs (exactly), or None."""
        return self._cache.holder_of(needles, exclude)

    def to_list(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.sources]
