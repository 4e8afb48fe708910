"""Quotes in parts: elisions (``...``, ``…``, ``[...]``) and editorial brackets (``[PROT-7]``).

An honest writer shortens a quote with an ellipsis and clarifies it with a bracketed insertion.
Neither is verbatim text, so the verifier reads such a quote in parts, and only when the quote
as written is not found (a source may itself hold ``...`` or ``[3]``):

- ``split_quote(normalized)`` cuts a trimmed, normalised quote into *parts* at its elisions,
  each part a run of verbatim *pieces* cut at its bracketed insertions. A bracket glued to a
  word (``[T]he``, ``employee[s]``) edits that word: its brackets are dropped and the word must
  then stand in the source as written. None when the quote has neither inside it.
- ``locate_parts(nt, parts)`` finds the parts in one normalised text: in order, not
  overlapping, each on word bounds. Within a part each piece follows the one before with at
  most ``BRACKET_GAP_WORDS`` source words between (a bracket adds a word or stands for a
  reference such as "it"), and those words hold no digit and no negation or quantifier: a
  bracket never stands for a fact. An elision may cross a sentence of the source only where
  the part before it ends its sentence or the part after it begins one: two half-sentences
  are never spliced into a statement the source does not make.

What an insertion says is not evidence: the verifier checks it like claim content (its numbers
and identifiers must be in the cited source, and it may not negate or quantify), and the
claim's own facts must be in the verbatim pieces. Work is bounded: at most ``MAX_PARTS`` parts
and ``MAX_PIECES`` pieces, a gap scan stops after ``BRACKET_GAP_WORDS`` + 1 words, and each
occurrence of a piece is looked at once (each part placed at the earliest end it can have).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .normalize import NormalizedText
from .sentences import sentence_spans
from .words import on_word_bounds

MAX_PARTS = 6
MAX_PIECES = 12
BRACKET_GAP_WORDS = 3
MAX_INSERTION_CHARS = 80
_GAP_CHARS = 80  # three source words never take more than this between two pieces

# In normalised text "…" is "..." (NFKC). An elision: three or more dots (spaced or not), or
# one inside square or round brackets; an insertion: other text in square brackets.
_MARKER = re.compile(
    r"(?P<elision>\[\s*(?:\.\s?){3,}\]|\(\s*(?:\.\s?){3,}\)|\.(?:\s?\.){2,})"
    rf"|\[(?P<insertion>[^\[\]]{{1,{MAX_INSERTION_CHARS}}})\]"
)
_GAP_WORD = re.compile(r"[^\W_]+")
# Words that turn a statement around or change how much of something it says: a bracket may
# not add them, nor stand for source words among them.
POLARITY = frozenset(
    "not no never none nor neither nobody nothing nowhere without cannot cant wont dont "
    "doesnt isnt arent wasnt werent hasnt havent hadnt shouldnt wouldnt couldnt mustnt n't "
    "only except all every always any some most least more less fewer few many".split()
)


@dataclass(frozen=True, slots=True)
class QuoteParts:
    """A quote read in parts: ``parts[i]`` is the tuple of verbatim pieces of the i-th part
    (normalised, in order); ``insertions`` the bracketed texts, normalised, in order."""

    parts: tuple[tuple[str, ...], ...]
    insertions: tuple[str, ...]

    @property
    def elided(self) -> bool:
        return len(self.parts) > 1

    @property
    def verbatim(self) -> str:
        """The verbatim pieces, parts joined by ``...``: what the quote offers as evidence."""
        return " ... ".join(" ".join(pieces) for pieces in self.parts)


def split_quote(normalized: str) -> QuoteParts | None:
    """The parts of a trimmed, normalised quote, or None when it has no elision or insertion
    inside it, or more parts or pieces than the bounds allow (then it is read as written)."""
    if "[" not in normalized and ".." not in normalized and ". ." not in normalized:
        return None
    parts: list[list[str]] = [[]]
    insertions: list[str] = []
    piece: list[str] = []
    at, glued_any = 0, False

    def cut() -> None:
        text = " ".join("".join(piece).split())
        piece.clear()
        if text:
            parts[-1].append(text)

    for m in _MARKER.finditer(normalized):
        piece.append(normalized[at : m.start()])
        at = m.end()
        inserted = m.group("insertion")
        if inserted is not None and _glued(normalized, m.start(), m.end()):
            piece.append(inserted)  # "[T]he", "employee[s]": an edit of the word itself
            glued_any = True
            continue
        cut()
        if inserted is None:
            if parts[-1]:
                parts.append([])
        else:
            insertions.append(" ".join(inserted.split()))
    piece.append(normalized[at:])
    cut()
    found = [tuple(p) for p in parts if p]
    if not found or (len(found) == 1 and not insertions and not glued_any):
        return None
    if len(found) > MAX_PARTS or sum(len(p) for p in found) > MAX_PIECES:
        return None
    return QuoteParts(tuple(found), tuple(insertions))


def _glued(text: str, start: int, end: int) -> bool:
    return (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())


def adds_polarity(insertion: str) -> bool:
    """Whether a bracketed insertion negates or quantifies (``[not]``, ``[only]``, ``[all]``)."""
    words = insertion.replace("n't", " n't").replace("'", "").split()
    return any(w.strip('.,;:!?"') in POLARITY for w in words)


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


def _fact_free_gap(hay: str, end: int, start: int) -> bool:
    """Whether at most ``BRACKET_GAP_WORDS`` words, none with a digit and none a negation or
    quantifier, lie between ``end`` and ``start`` (the scan stops early: bounded)."""
    if start - end > _GAP_CHARS:
        return False
    for n, m in enumerate(_GAP_WORD.finditer(hay, end, start)):
        word = m.group()
        if n >= BRACKET_GAP_WORDS or word in POLARITY or any(c.isdigit() for c in word):
            return False
    return True


class _Placer:
    """Places the parts of one quote in one text (see ``locate_parts``)."""

    def __init__(self, nt: NormalizedText, quote: QuoteParts) -> None:
        self.nt, self.hay, self.quote = nt, nt.text, quote
        # sentences of the original (the normalised text is lower case: no capital to see)
        self.sentences = sentence_spans(nt.original) if quote.elided else []
        self.starts = [s for s, _ in self.sentences]
        self.ends = [self._earliest_ends(pieces) for pieces in quote.parts]
        self.failed: set[tuple[int, int]] = set()

    def _earliest_ends(self, pieces: tuple[str, ...]) -> dict[int, int]:
        """For each place where a part can start, the earliest place it can end: its pieces in
        order, each after a fact-free gap (``_fact_free_gap``) from the one before. Computed
        from the last piece back, each occurrence looked at once."""
        hay = self.hay
        later: dict[int, int] | None = None
        for piece in reversed(pieces):
            found = _occurrences(hay, piece)
            if later is None:
                later = {at: at + len(piece) for at in found}
                continue
            nexts = sorted(later)
            here: dict[int, int] = {}
            for at in found:
                end = at + len(piece)
                best = None
                for i in range(bisect_left(nexts, end), len(nexts)):
                    nxt = nexts[i]
                    if not _fact_free_gap(hay, end, nxt):
                        break
                    if best is None or later[nxt] < best:
                        best = later[nxt]
                if best is not None:
                    here[at] = best
            later = here
            if not later:
                break
        return later or {}

    def place(
        self, k: int, after: int, prev: tuple[int, int] | None
    ) -> list[tuple[int, int]] | None:
        """Original spans of parts ``k..``, part ``k`` at or after normalised ``after``, the
        part before it at original ``prev``."""
        if k == len(self.quote.parts):
            return []
        ends = self.ends[k]
        firsts = sorted(ends)
        for i in range(bisect_left(firsts, after), len(firsts)):
            start = firsts[i]
            if (k, start) in self.failed:
                continue
            end = ends[start]
            span = self.nt.span(start, end)
            if span is None:
                continue
            if prev is not None and not self.joins(prev, span):
                continue  # (depends on the part before: not remembered as failed)
            rest = self.place(k + 1, end, span)
            if rest is not None:
                return [span, *rest]
            self.failed.add((k, start))
        return None

    def joins(self, prev: tuple[int, int], span: tuple[int, int]) -> bool:
        """Whether an elision may join a part at original ``prev`` to one at ``span``: in one
        sentence, or the first ends its sentence, or the second begins one."""
        a = bisect_right(self.starts, prev[1] - 1) - 1
        b = bisect_right(self.starts, span[0]) - 1
        if a == b:
            return True
        original = self.nt.original
        ends = original[prev[1] : self.sentences[a][1]].strip(" \n.!?\"')]\u201d\u2019")
        begins = original[self.sentences[b][0] : span[0]].strip(" \n\"'([\u201c\u2018")
        return not ends or not begins


def locate_parts(nt: NormalizedText, quote: QuoteParts) -> tuple[list[tuple[int, int]], int | None]:
    """The original ``[start, end)`` of each part of ``quote`` in ``nt``, in order and not
    overlapping; and None, or else the 0-based index of the first part that could not be
    placed after the ones before it."""
    placed = _Placer(nt, quote).place(0, 0, None)
    if placed is not None:
        return placed, None
    for k in range(len(quote.parts) - 1, 0, -1):  # the longest prefix of parts that places
        if _Placer(nt, QuoteParts(quote.parts[:k], ())).place(0, 0, None) is not None:
            return [], k
    return [], 0
