"""Chunker: a ``LoadedDocument`` -> whole-sentence chunks with exact offsets.

Invariants (property-tested in tests/test_ingest.py):
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

Sentence ends are ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by
whitespace and a character that is not a lowercase letter; a blank line always ends one. A
period does not end a sentence after a known abbreviation (``e.g.``, ``Dr.``), a dotted
acronym (``U.S.``), a single capital initial, or ``No.``/``p.``/``Fig.`` before a number;
a decimal such as ``2.5`` has no whitespace after its period, so it never ends one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..corpus import Chunk, LoadedDocument
from ..errors import InputError

__all__ = ["chunk_document", "sentence_spans"]

# A blank line (a paragraph break), or whitespace after a possible sentence end.
_BREAK = re.compile(r"\s*\n[^\S\n]*\n\s*|(?<=[.!?\"'\u2019\u201d)\]])\s+")
_CLOSERS = frozenset("\"')]\u2019\u201d")
_OPENERS = "\"'([{\u2018\u201c"
_LINE_BREAK = re.compile(r"\s*\n\s*")
_WHITESPACE = re.compile(r"\s+")
_DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "cf", "al", "approx", "ca"}
    | {"e.g", "i.e", "viz", "resp", "incl", "dept", "est"}
)
# Abbreviations only before a number: "No. 3" goes on, "The answer is no. Then" ends.
_NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "nr", "p", "pp", "vol", "vols", "fig", "figs", "eq", "eqs", "art", "sec"}
    | {"ch", "para", "ref", "refs", "ex", "jan", "feb", "mar", "apr", "jun", "jul", "aug"}
    | {"sep", "sept", "oct", "nov", "dec"}
)


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


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each sentence in ``text[start:end]``, trimmed of whitespace."""
    stop = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    position = start
    for gap_start, gap_end, _ in _breaks(text, start, stop):
        spans.extend(_trimmed(text, position, gap_start))
        position = gap_end
    spans.extend(_trimmed(text, position, stop))
    return spans


def _regions(doc: LoadedDocument, min_chars: int) -> list[tuple[int, int]]:
    """``[start, end)`` pieces of the text split at section and page starts (so a chunk sits
    on one page, and a citation's page is the quote's page), bare headings merged on."""
    text = doc.text
    sections = {
        s.start for s in doc.sections if 0 < s.start < len(text) and text[s.start - 1].isspace()
    }
    # A page start is a cut where a sentence ends there too: a chunk then sits on one page
    # (so a citation's page is its quote's page) and no sentence is split across chunks.
    pages = {
        p.start for p in doc.pages if 0 < p.start < len(text) and _ends_sentence(text, p.start)
    }
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


def _ends_sentence(text: str, at: int) -> bool:
    """Whether a line break before ``at`` is also a sentence boundary, by the same rule the
    chunker splits sentences with."""
    gap_start = len(text[:at].rstrip())
    gap_end = len(text) - len(text[at:].lstrip())
    return text[at - 1] == "\n" and _is_sentence_end(text, gap_start, gap_end, len(text))


def _breaks(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """Whitespace runs between sentences: ``(gap_start, gap_end, is_paragraph_break)``."""
    for match in _BREAK.finditer(text, start, end):
        gap_start, gap_end = match.span()
        if match.group().count("\n") >= 2:
            yield gap_start, gap_end, True
        elif _is_sentence_end(text, gap_start, gap_end, end):
            yield gap_start, gap_end, False


def _is_sentence_end(text: str, gap_start: int, gap_end: int, end: int) -> bool:
    following = text[gap_end] if gap_end < end else ""
    if following.islower():
        return False
    mark = gap_start
    while mark > 0 and text[mark - 1] in _CLOSERS:
        mark -= 1
    if mark == 0 or text[mark - 1] not in ".!?":
        return False
    if text[mark - 1] != ".":
        return True
    return not _is_abbreviation(_word_before(text, mark - 1), following)


def _word_before(text: str, dot: int) -> str:
    start = dot
    while start > 0 and not text[start - 1].isspace() and dot - start < 40:
        start -= 1
    return text[start:dot].lstrip(_OPENERS)


def _is_abbreviation(word: str, following: str) -> bool:
    lower = word.lower()
    if lower in _ABBREVIATIONS or _DOTTED.fullmatch(word):
        return True
    if len(word) == 1 and word.isupper():  # an initial: "J. Smith"
        return True
    return lower in _NUMBER_ABBREVIATIONS and following.isdigit()


def _trimmed(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` without surrounding whitespace, or nothing if it is all whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return [(start, end)] if start < end else []


def _units(text: str, start: int, end: int, max_chars: int) -> list[_Unit]:
    """The region's sentences, over-long ones split; the first unit starts a paragraph."""
    units: list[_Unit] = []
    paragraph = True
    position = start
    gaps = [*_breaks(text, start, end), (end, end, True)]
    for gap_start, gap_end, is_paragraph in gaps:
        for sentence_start, sentence_end in _trimmed(text, position, gap_start):
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
