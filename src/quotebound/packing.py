"""Packing: ranked retrieval hits -> the WorkingSet (the one allowlist) for one request.

Invariants:
- Highest-ranked first; chunks are whole, never cut; a chunk that does not fit the remaining
  character budget is skipped (a smaller, lower-ranked one may still fit).
- Near-identical chunks are packed once: the model is never asked to choose between two ids
  for one sentence. Near-identical = the same normalised text, or overlap of word trigrams
  (Jaccard, punctuation ignored) at or above ``near_duplicate``.
- Ids are dense after trimming: S1..Sn in packed order, so an inline ``[n]`` is the n-th.
- Each Source keeps the chunk's stable key (``corpus:doc#c<ordinal>``), title, URL, date and
  page, and its text is exactly the chunk text that will be sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .corpus import Hit
from .sources import Source, WorkingSet, valid_date
from .text.normalize import normalize

DEFAULT_BUDGET_CHARS = 12_000
DEFAULT_MAX_SOURCES = 20
DEFAULT_NEAR_DUPLICATE = 0.9
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Dropped:
    hit: Hit
    reason: str  # "duplicate" | "budget" | "max_sources"
    duplicate_of: str | None = None  # the id it duplicates


@dataclass(frozen=True, slots=True)
class Pack:
    working_set: WorkingSet
    hits: tuple[Hit, ...]  # packed, in S1..Sn order
    dropped: tuple[Dropped, ...]


def chunk_key(hit: Hit) -> str:
    """The stable key of a chunk occurrence: its document key and ordinal."""
    return f"{hit.key}#c{hit.ordinal}"


def _trigrams(text: str) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text)  # punctuation and spacing do not make chunks different
    if len(words) < 3:
        return frozenset({tuple(words)})
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def _jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _select(
    texts: Sequence[str], budget_chars: int, max_sources: int, near_duplicate: float
) -> tuple[list[int], list[tuple[int, str, str | None]]]:
    """Which of ``texts`` (best first) a pack keeps, by index, and why each other one is left
    out: ``(index, reason, the id it duplicates)``."""
    kept: list[int] = []
    shapes: list[tuple[str, frozenset[tuple[str, ...]]]] = []
    left: list[tuple[int, str, str | None]] = []
    used = 0
    for i, text in enumerate(texts):
        norm = normalize(text)
        grams = _trigrams(norm)
        twin = next(
            (
                n
                for n, (other, other_grams) in enumerate(shapes)
                if other == norm or _jaccard(grams, other_grams) >= near_duplicate
            ),
            None,
        )
        if twin is not None:
            left.append((i, "duplicate", f"S{twin + 1}"))
        elif len(kept) >= max_sources:
            left.append((i, "max_sources", None))
        elif used + len(text) > budget_chars:
            left.append((i, "budget", None))
        else:
            kept.append(i)
            shapes.append((norm, grams))
            used += len(text)
    return kept, left


def pack(
    hits: Sequence[Hit],
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    max_sources: int = DEFAULT_MAX_SOURCES,
    near_duplicate: float = DEFAULT_NEAR_DUPLICATE,
) -> Pack:
    """Pack ranked hits (best first) into a WorkingSet within the budget."""
    kept, left = _select([h.text for h in hits], budget_chars, max_sources, near_duplicate)
    packed = [hits[i] for i in kept]
    dropped = [Dropped(hits[i], reason, twin) for i, reason, twin in left]
    sources = [source_of(hit, f"S{n}") for n, hit in enumerate(packed, 1)]
    return Pack(WorkingSet(sources), tuple(packed), tuple(dropped))


def source_of(hit: Hit, sid: str) -> Source:
    """A retrieved chunk as it is sent, under the id ``sid``: its text, its chunk key, title
    (else section), URL, date and first page."""
    return Source(
        id=sid,
        text=hit.text,
        key=chunk_key(hit),
        title=hit.title or hit.section,
        url=hit.url,
        updated=valid_date(hit.updated),
        kind="document",
        page=hit.page,
    )


def pack_sources(
    sources: Sequence[Source],
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    max_sources: int = DEFAULT_MAX_SOURCES,
    near_duplicate: float = DEFAULT_NEAR_DUPLICATE,
) -> WorkingSet:
    """Sources retrieved elsewhere (a framework's retriever, best first) packed as ``pack``
    packs hits: duplicates and near-duplicates out, within the budget and the number of
    sources, renumbered S1..Sn in order (each keeps its key, title, URL, date and page)."""
    kept, _ = _select([s.text for s in sources], budget_chars, max_sources, near_duplicate)
    return WorkingSet(replace(sources[i], id=f"S{n}") for n, i in enumerate(kept, 1))
