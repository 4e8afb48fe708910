"""Quotes in parts: elisions (``...``, ``…``, ``[...]``) and editorial brackets (``[PROT-X]``).

An honest writer shortens a quote with an ellipsis and clarifies it with a bracketed insertion.
Neither is verbatim text, so the verifier reads such a quote in parts, and only when the quote
as written is not found (a source may itself hold ``...`` or ``[3]``):

- ``split_quote(normalized)`` cuts a trimmed, normalised quote into *parts* at its elisions,
  each part a run of verbatim *pieces* cut at its bracketed insertions. None when the quote has
  neither inside it.
- ``locate_parts(nt, parts)`` finds the parts in one normalised text: in order, not
  overlapping, each on word bounds, and within a part each piece no more than
  ``BRACKET_GAP_WORDS`` words after the one before (a bracket adds a word or stands for a few:
  ``[the protein] binds`` for ``it binds``). It returns one span per part (or says which part
  it could not place).

The text an insertion adds is not part of the match; the verifier checks it like claim
content (its numbers and identifiers must be in the cited source). Work is bounded: at most
``MAX_PARTS`` parts and ``MAX_PIECES`` pieces, and each (piece, position) is tried once.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from .normalize import NormalizedText
from .words import on_word_bounds

MAX_PARTS = 6
MAX_PIECES = 12
BRACKET_GAP_WORDS = 3
MAX_INSERTION_CHARS = 80

# In normalised text "…" is "..." (NFKC). An elision: three or more dots (spaced or not), or
# one inside square or round brackets; an insertion: other text in square brackets.
_MARKER = re.compile(
    r"\s*(?:(?P<elision>\[\s*(?:\.\s?){3,}\]|\(\s*(?:\.\s?){3,}\)|\.(?:\s?\.){2,})"
    rf"|\[(?P<insertion>[^\[\]]{{1,{MAX_INSERTION_CHARS}}})\])\s*"
)
_GAP_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class QuoteParts:
    """A quote read in parts: ``parts[i]`` is the tuple of verbatim pieces of the i-th part
    (normalised, in order); ``insertions`` the bracketed texts, normalised, in order."""

    parts: tuple[tuple[str, ...], ...]
    insertions: tuple[str, ...]

    @property
    def elided(self) -> bool:
        return len(self.parts) > 1


def split_quote(normalized: str) -> QuoteParts | None:
    """The parts of a trimmed, normalised quote, or None when it has no elision or insertion
    inside it, or more parts or pieces than the bounds allow (then it is read as written)."""
    if "[" not in normalized and ".." not in normalized and ". ." not in normalized:
        return None
    parts: list[list[str]] = [[]]
    insertions: list[str] = []
    at = 0
    for m in _MARKER.finditer(normalized):
        piece = normalized[at : m.start()].strip(" ")
        if piece:
            parts[-1].append(piece)
        if m.group("elision") is not None:
            if parts[-1]:
                parts.append([])
        else:
            insertions.append(m.group("insertion").strip(" "))
        at = m.end()
    tail = normalized[at:].strip(" ")
    if tail:
        parts[-1].append(tail)
    cut = [tuple(p) for p in parts if p]
    if not cut or (len(cut) == 1 and not insertions):
        return None
    if len(cut) > MAX_PARTS or sum(len(p) for p in cut) > MAX_PIECES:
        return None
    return QuoteParts(tuple(cut), tuple(insertions))


def _occurrences(hay: str, needle: str) -> list[int]:
    """Normalised starts of ``needle`` in ``hay`` on word bounds."""
    check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
    out, size = [], len(needle)
    i = hay.find(needle)
    while i >= 0:
        if on_word_bounds(hay, i, i + size, check_left, check_right):
            out.append(i)
        i = hay.find(needle, i + 1)
    return out


def _close_enough(hay: str, end: int, start: int) -> bool:
    """Whether at most ``BRACKET_GAP_WORDS`` words lie between ``end`` and ``start``."""
    return len(_GAP_WORD.findall(hay, end, start)) <= BRACKET_GAP_WORDS


def _place_part(nt: NormalizedText, pieces: tuple[str, ...], after: int) -> tuple[int, int] | None:
    """The earliest normalised ``[start, end)`` of one part at or after ``after``: its pieces in
    order, each within ``BRACKET_GAP_WORDS`` words of the one before, both ends on a boundary
    of the offset map. Each (piece, start) pair is tried once."""
    hay = nt.text
    found = [_occurrences(hay, p) for p in pieces]
    failed: set[tuple[int, int]] = set()

    def rest(k: int, start: int) -> int | None:
        """The end of pieces k.. with piece k at ``start``, or None."""
        end = start + len(pieces[k])
        if k == len(pieces) - 1:
            return end
        following = found[k + 1]
        for j in range(bisect_left(following, end), len(following)):
            nxt = following[j]
            if not _close_enough(hay, end, nxt):
                break
            if (k + 1, nxt) in failed:
                continue
            done = rest(k + 1, nxt)
            if done is not None:
                return done
            failed.add((k + 1, nxt))
        return None

    for j in range(bisect_left(found[0], after), len(found[0])):
        first = found[0][j]
        end = rest(0, first)
        if end is not None and nt.span(first, end) is not None:
            return first, end
    return None


def locate_parts(nt: NormalizedText, quote: QuoteParts) -> tuple[list[tuple[int, int]], int | None]:
    """The original ``[start, end)`` of each part of ``quote`` in ``nt``, in order and not
    overlapping, each placed at its earliest start after the one before; and the 0-based index
    of the first part that could not be placed (None when every part was)."""
    spans: list[tuple[int, int]] = []
    after = 0
    for i, pieces in enumerate(quote.parts):
        placed = _place_part(nt, pieces, after)
        span = None if placed is None else nt.span(*placed)
        if placed is None or span is None:
            return spans, i
        spans.append(span)
        after = placed[1]
    return spans, None
