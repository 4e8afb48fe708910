"""Chunker: a ``LoadedDocument`` -> whole-sentence chunks with exact offsets.

Invariants (property-tested in tests/ingest/test_ingest.py):
- Every chunk is an exact slice, ``doc.text[c.start:c.end] == c.text``, with no leading or
  trailing whitespace.
- Chunks are in order and do not overlap, and together they cover every non-whitespace
  character of the document: only whitespace lies before, between and after them.
- A chunk is at most ``max_chars`` long, unless it is a single word longer than that (a word
  is never split).
- A chunk ends at a sentence end, except inside a sentence longer than ``max_chars``, which is
  split at line breaks first, then at whitespace.
- A chunk never spans a section start (``doc.sections``), with one exception: a section that
  is only its heading line, shorter than ``min_chars``, joins the section after it (a bare
  heading is nothing to cite). Cuts prefer paragraph boundaries (a blank line) as long as the
  chunk before the cut keeps at least ``min_chars``; a section's last chunk borrows sentences
  from the one before it to reach ``min_chars`` when both stay within bounds.
- ``c.pages == doc.pages_of(c.start, c.end)`` and ``c.section == doc.section_at(c.start)``.

Sentences are split by ``quotebound.text.sentences``, the one splitter every part shares.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ..corpus import Chunk, LoadedDocument
from ..errors import InputError
from ..text.sentences import breaks, ends_sentence, trimmed

__all__ = ["chunk_document"]

_LINE_BREAK = re.compile(r"\s*\n\s*")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class _Unit:
    """A sentence (or a piece of an over-long one): ``[start, end)``, trimmed."""

    start: int
    end: int
    paragraph: bool  # starts a paragraph (or its region), so a cut before it is preferred


def chunk_document(doc: LoadedDocument, max_chars: int = 1200, min_chars: int = 200) -> list[Chunk]:
    """Split ``doc`` into whole-sentence chunks; see the module docstring for the guarantees."""
    if max_chars < 1 or not 0 <= min_chars <= max_chars:
        raise InputError(
            f"chunk sizes need 0 <= min_chars <= max_chars and max_chars >= 1, "
            f"got min_chars={min_chars}, max_chars={max_chars}"
        )
    chunks: list[Chunk] = []
    for region_start, region_end in _regions(doc, min_chars):
        units = _units(doc.text, region_start, region_end, max_chars)
        for start, end in _pack(units, max_chars, min_chars):
            chunks.append(
                Chunk(
                    text=doc.text[start:end],
                    start=start,
                    end=end,
                    pages=doc.pages_of(start, end),
                    section=doc.section_at(start),
                )
            )
    return chunks


def _regions(doc: LoadedDocument, min_chars: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of the text split at section and page starts (so a chunk sits
    on one page, and a citation's page is the quote's page), bare headings merged on."""
    text = doc.text
    sections = {
        s.start for s in doc.sections if 0 < s.start < len(text) and text[s.start - 1].isspace()
    }
    # A page start is a cut where a sentence ends there too: a chunk then sits on one page
    # (so a citation's page is its quote's page) and no sentence is split across chunks.
    pages = {p.start for p in doc.pages if 0 < p.start < len(text) and ends_sentence(text, p.start)}
    cuts = sorted(sections | pages)
    bounds = [0, *cuts, len(text)]
    regions: list[tuple[int, int]] = []
    pending: int | None = None
    for start, end in itertools.pairwise(bounds):
        body = text[start:end].strip()
        if end < len(text) and "\n" not in body and len(body) < min_chars:
            pending = start if pending is None else pending
            continue
        regions.append((start if pending is None else pending, end))
        pending = None
    return regions


def _units(text: str, start: int, end: int, max_chars: int) -> list[_Unit]:
    """The region's sentences, over-long ones split; the first unit starts a paragraph."""
    units: list[_Unit] = []
    paragraph = True
    position = start
    gaps = [*breaks(text, start, end), (end, end, True)]
    for gap_start, gap_end, is_paragraph in gaps:
        for sentence_start, sentence_end in trimmed(text, position, gap_start):
            for i, (a, b) in enumerate(_split_long(text, sentence_start, sentence_end, max_chars)):
                units.append(_Unit(a, b, paragraph and i == 0))
            paragraph = False
        paragraph = paragraph or is_paragraph
        position = gap_end
    return units


def _split_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Split ``[start, end)`` to fit ``max_chars``: at line breaks, else at whitespace."""
    if end - start <= max_chars:
        return [(start, end)]
    for separator in (_LINE_BREAK, _WHITESPACE):
        pieces: list[tuple[int, int]] = []
        position = start
        for match in separator.finditer(text, start, end):
            pieces.append((position, match.start()))
            position = match.end()
        pieces.append((position, end))
        if len(pieces) > 1:
            break
    else:
        return [(start, end)]  # one word longer than max_chars: kept whole
    out: list[tuple[int, int]] = []
    for a, b in _greedy(pieces, max_chars):
        out.extend(_split_long(text, a, b, max_chars))
    return out


def _greedy(spans: list[tuple[int, int]], max_chars: int) -> list[tuple[int, int]]:
    """Merge consecutive spans while the merged span fits ``max_chars``."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and end - merged[-1][0] <= max_chars:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _pack(units: list[_Unit], max_chars: int, min_chars: int) -> list[tuple[int, int]]:
    """Group consecutive units into chunks of at most ``max_chars``; returns their spans."""
    groups: list[tuple[int, int]] = []  # inclusive unit index ranges
    first = 0
    while first < len(units):
        last = first
        while last + 1 < len(units) and units[last + 1].end - units[first].start <= max_chars:
            last += 1
        if last + 1 < len(units):
            last = _paragraph_cut(units, first, last, min_chars)
        groups.append((first, last))
        first = last + 1
    _rebalance_tail(units, groups, max_chars, min_chars)
    return [(units[a].start, units[b].end) for a, b in groups]


def _paragraph_cut(units: list[_Unit], first: int, last: int, min_chars: int) -> int:
    """The last unit of the chunk: the latest paragraph end keeping ``min_chars``, else ``last``."""
    for after in range(last + 1, first, -1):
        if units[after].paragraph and units[after - 1].end - units[first].start >= min_chars:
            return after - 1
    return last


def _rebalance_tail(
    units: list[_Unit], groups: list[tuple[int, int]], max_chars: int, min_chars: int
) -> None:
    """Move units from the second-to-last chunk into a last chunk shorter than ``min_chars``."""
    if len(groups) < 2:
        return
    (a, b), (c, d) = groups[-2], groups[-1]

    def size(i: int, j: int) -> int:
        return units[j].end - units[i].start

    while (
        size(c, d) < min_chars
        and b > a
        and size(c - 1, d) <= max_chars
        and size(a, b - 1) >= min_chars
    ):
        b, c = b - 1, c - 1
    groups[-2:] = [(a, b), (c, d)]
