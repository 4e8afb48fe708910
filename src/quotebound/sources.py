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
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Literal

from .errors import SourceError
from .normalize import (
    NormalizedText,
    ascii_lowered,
    inert_text,
    locate_inert,
    normalize,
    normalize_regular,
)
from .support import Evidence

SourceKind = Literal["document", "tool", "user"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("document", "tool", "user")
_FIELDS = ("id", "text", "key", "title", "url", "updated", "kind", "page")
_ASCII_WORD = re.compile(r"[a-z0-9]{2,}")
_ASCII_DIGITS = re.compile(r"[0-9]+")
_ASCII_ALNUM = re.compile(r"[a-z0-9]+")


_ALNUM_BYTE = re.compile(rb"[a-z0-9]")


def _may_hold(low: bytes, runs: list[bytes], k: int) -> bool:
    """False only when an *inert* text, ASCII lower-cased as ``low``, surely cannot hold a
    normalised needle whose runs of ASCII letters and digits are ``runs``.

    In an inert text (``inert_text``) every ASCII letter or digit of the normalised text is
    the same ASCII character of the original, lower-cased, with nothing removed between; and
    what normalises to neither is anything but an ASCII letter or digit, or a reference (an
    ``&`` and a name). So an occurrence's runs are runs of ``low`` in order, each after a gap
    with no letter or digit outside a reference: where a gap has no ``&``, the next run starts
    at the first letter or digit after it. Run ``k`` (the longest) is found, then its
    neighbours checked outwards; a gap with an ``&`` ends the check (it may hold anything). No
    pattern is compiled: a needle is new with every answer, and compiling costs far more.
    """
    start = low.find(runs[k])
    while start >= 0:
        if _runs_fit(low, runs, k, start):
            return True
        start = low.find(runs[k], start + 1)
    return False


def _runs_fit(low: bytes, runs: list[bytes], k: int, start: int) -> bool:
    """Whether ``runs`` may stand around ``runs[k]`` found at ``start`` (see ``_may_hold``)."""
    end = start + len(runs[k])
    for run in runs[k + 1 :]:  # onwards: the next letter or digit starts the next run
        found = _ALNUM_BYTE.search(low, end)
        nxt = found.start() if found is not None else len(low)
        if low.find(b"&", end, nxt) >= 0:
            break
        if nxt == end or not low.startswith(run, nxt):
            return False
        end = nxt + len(run)
    for run in reversed(runs[:k]):  # backwards: the last one found before must end the gap
        prev = low.rfind(run, 0, start)
        if prev < 0:
            return False
        if _in_reference(low, prev):
            break  # the run may be found before the reference instead: it may hold anything
        gap_start = prev + len(run)
        if low.find(b"&", gap_start, start) >= 0:
            break
        if gap_start == start or _ALNUM_BYTE.search(low, gap_start, start) is not None:
            return False
        start = prev
    return True


def _in_reference(low: bytes, i: int) -> bool:
    """Whether ``low[i]`` may be part of a character reference: an ``&`` comes before it with
    only ASCII letters and digits between (after a ``#``)."""
    amp = low.rfind(b"&", 0, i)
    return amp >= 0 and low[amp + 1 : i + 1].lstrip(b"#").isalnum()


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
    _normalized: dict[str, NormalizedText] = field(init=False, repr=False)
    _evidence: dict[str, Evidence] = field(init=False, repr=False)
    _id_tokens: frozenset[str] | None = field(init=False, repr=False)
    _index: dict[str, set[int]] | None = field(init=False, repr=False)
    _light: dict[str, str | None] = field(init=False, repr=False)
    _inert: dict[str, bool] = field(init=False, repr=False)
    _low: dict[str, bytes] = field(init=False, repr=False)
    _joined: tuple[str, list[int]] | None = field(init=False, repr=False)
    _joined_low: bytes | None = field(init=False, repr=False)
    _mixed: list[int] = field(init=False, repr=False)

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
        self._normalized = {}
        self._evidence = {}
        self._id_tokens = None
        self._index = None
        self._light = {}
        self._inert = {}
        self._low = {}
        self._joined = None
        self._joined_low = None
        self._mixed = []

    @classmethod
    def from_dicts(cls, items: Iterable[Mapping[str, Any]]) -> WorkingSet:
        return cls(Source.from_dict(item) for item in items)

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

    def normalized(self, source_id: str) -> NormalizedText:
        """The cached normalised text of a source (computed on first use)."""
        cached = self._normalized.get(source_id)
        if cached is None:
            src = self.sources[self._by_id[source_id]]
            cached = NormalizedText(src.text)
            self._normalized[source_id] = cached
        return cached

    def locate(self, source_id: str, needle: str) -> tuple[int, int] | None:
        """``self.normalized(source_id).locate(needle)``, the same answer; for a source not
        normalised yet and *inert* (``inert_text``), found by normalising only windows around
        the needle's anchor word (``locate_inert``) instead of the whole source."""
        cached = self._normalized.get(source_id)
        if cached is None:
            src = self.sources[self._by_id[source_id]]
            if self._is_inert(src):
                done, span = locate_inert(src.text, self._lowered(src), needle)
                if done:
                    return span
        return self.normalized(source_id).locate(needle)

    def _is_inert(self, src: Source) -> bool:
        inert = self._inert.get(src.id)
        if inert is None:
            inert = self._inert[src.id] = inert_text(src.text)
        return inert

    def _lowered(self, src: Source) -> bytes:
        low = self._low.get(src.id)
        if low is None:
            if self._joined_low is not None and self._joined is not None:
                start = self._joined[1][self._by_id[src.id]]  # a slice of the joined scan's
                low = self._joined_low[start : start + len(src.text)]
            else:
                low = ascii_lowered(src.text)
            self._low[src.id] = low
        return low

    def prime(self, source_ids: Iterable[str]) -> None:
        """Judge inert (``inert_text``) and lower-case (``ascii_lowered``) together, in one
        call each over their texts joined, the sources not normalised yet that a verdict is
        about to search: the cited ones. The same flags and bytes as one by one, for less.
        Sources judged not inert together are left to be judged one by one."""
        if len(self._normalized) == len(self.sources):
            return  # (prepared: every source is normalised already)
        todo = [
            self.sources[self._by_id[sid]]
            for sid in dict.fromkeys(source_ids)
            if sid in self._by_id and sid not in self._normalized and sid not in self._low
        ]
        if len(todo) < 2:
            return
        texts = [s.text for s in todo]
        joined = "\x00".join(texts)
        if any(s.id not in self._inert for s in todo) and inert_text(joined):
            self._inert.update(dict.fromkeys((s.id for s in todo), True))
        low, at = ascii_lowered(joined), 0
        for src, text in zip(todo, texts, strict=True):
            self._low[src.id] = low[at : at + len(text)]
            at += len(text) + 1

    def evidence(self, source_id: str) -> Evidence:
        """The cached support facts (number values) of a whole source."""
        cached = self._evidence.get(source_id)
        if cached is None:
            cached = Evidence(self.normalized(source_id).text)
            self._evidence[source_id] = cached
        return cached

    def id_tokens(self) -> frozenset[str]:
        """The ids, normalised: a claim naming a source ("as S2 says") names no identifier."""
        if self._id_tokens is None:
            self._id_tokens = frozenset(
                # an ASCII id without '&' normalises by lower case and spacing alone
                " ".join(sid.lower().split()) if sid.isascii() and "&" not in sid
                else normalize(sid)
                for sid in self._by_id
            )  # fmt: skip
        return self._id_tokens

    def prepare(self) -> WorkingSet:
        """Normalise every source now (at pack time), and index their words.

        The word index lets ``holder_of`` look for a failed quote across the whole set in
        time that does not grow with the number of sources.
        """
        index: dict[str, set[int]] = {}
        for position, src in enumerate(self.sources):
            for word in set(_ASCII_WORD.findall(self.normalized(src.id).text)):
                index.setdefault(word, set()).add(position)
        self._index = index
        return self

    def holder_of(self, needles: list[str], exclude: str) -> str | None:
        """The first other source in which a normalised needle occurs (exactly), or None.

        With the word index (``prepare()``) only sources holding every word of the needle are
        searched. Without it (three sources or more), only sources whose text holds one run of
        the needle's ASCII letters and digits (``_holding``), and those not inert, are looked
        at; an inert one is then ruled out where it lacks the needle's runs in order
        (``_may_hold``), else searched by windows (``locate``). A source not inert is searched
        by its normalised text computed without the offset map where that is possible.
        """
        last = needles[-1]
        positions: Iterable[int] = range(len(self.sources))
        if self._index is not None:
            indexed = self._indexed(last)
            if indexed is not None:
                positions = indexed
        elif len(self.sources) > 2 and (words := _ASCII_ALNUM.findall(last)):
            digits = _ASCII_DIGITS.findall(last)
            key = max(digits or words, key=len)
            positions = sorted(self._holding(key, bool(digits)).union(self._mixed))
        runs: list[bytes] | None = None  # the needle's ASCII runs, read when first needed
        longest = 0
        for position in positions:
            src = self.sources[position]
            if src.id == exclude:
                continue
            if src.id not in self._normalized:
                if self._is_inert(src):
                    if runs is None:
                        runs = [w.encode() for w in _ASCII_ALNUM.findall(last)]
                        longest = max(range(len(runs)), key=lambda i: len(runs[i])) if runs else 0
                    if runs and not _may_hold(self._lowered(src), runs, longest):
                        continue
                    if any(self.locate(src.id, n) is not None for n in needles):
                        return src.id
                    continue
                if src.id not in self._light:
                    self._light[src.id] = normalize_regular(src.text)
                light = self._light[src.id]
                if light is not None and not any(n in light for n in needles):
                    continue
            if any(self.normalized(src.id).locate(n) is not None for n in needles):
                return src.id
        return None

    def _indexed(self, needle: str) -> list[int] | None:
        """Positions, in order, of the sources whose indexed words include every word of
        ``needle`` of two ASCII letters or digits or more; None when it has no such word (no
        source is ruled out). A word that no source has ends the look-up at once."""
        assert self._index is not None
        postings: list[set[int]] = []
        for key in _ASCII_WORD.findall(needle):
            posting = self._index.get(key)
            if posting is None:
                return []
            postings.append(posting)
        if not postings:
            return None
        return sorted(min(postings, key=len).intersection(*postings))

    def _holding(self, run: str, digits: bool) -> set[int]:
        """Positions of the sources whose text holds ``run`` (a run of ASCII digits, as it is;
        else of ASCII letters and digits, ASCII lower-cased): one scan of all the texts joined.

        The first call also judges the sources inert together (the joined text is inert exactly
        when each of them is: the separator joins nothing) and lists those that are not
        (``_mixed``), so that an inert source without the run is ruled out at the cost of a set
        lookup. Digits are found in the texts as they are: nothing is lower-cased for them.
        """
        if self._joined is None:
            texts = [s.text for s in self.sources]
            starts = list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
            self._joined = ("\x00".join(texts), starts)
            unknown = [s for s in self.sources if s.id not in self._inert]
            if 8 * (len(self.sources) - len(unknown)) < len(self.sources):
                together = self._joined[0]  # few known: judge them all, no second join
            else:
                together = "\x00".join(s.text for s in unknown)
            if unknown and inert_text(together):
                self._inert.update(dict.fromkeys((s.id for s in unknown), True))
            self._mixed = [p for p, s in enumerate(self.sources) if not self._is_inert(s)]
        joined, starts = self._joined
        hay: str | bytes = joined
        key: str | bytes = run
        if not digits:
            if self._joined_low is None:
                self._joined_low = ascii_lowered(joined)
            hay, key = self._joined_low, run.encode()
        found: set[int] = set()
        p = hay.find(key)  # type: ignore[arg-type]
        while p >= 0:
            position = bisect_right(starts, p) - 1
            found.add(position)
            if position + 1 == len(starts):
                break
            p = hay.find(key, starts[position + 1])  # type: ignore[arg-type]
        return found

    def to_list(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.sources]
