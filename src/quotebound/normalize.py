"""Offset-preserving text normalisation, the same on both sides of every comparison.

Policy ``NORMALIZATION_VERSION`` (bump it whenever the output for any input changes):

1. HTML character references are decoded (``&amp;`` -> ``&``, ``&#8217;`` -> ``’``), as
   ``html.unescape`` does, so a quote compares with what the packer inserted.
2. Unicode NFKC, applied per character cluster (a starter and the marks that combine with it).
3. Lower case, character by character (``str.lower`` with no context: ``Σ`` is always ``σ``).
4. Curly single quotes and primes -> ``'``; curly double quotes, guillemets -> ``"``;
   every dash variant and the minus sign -> ``-``.
5. Invisible format characters (Unicode category Cf: zero-width spaces, soft hyphens,
   joiners, bidi marks, BOM) are removed.
6. Every run of whitespace, no-break spaces included, becomes one space.

Nothing else is folded: letters stay the letters they are (a Cyrillic ``е`` never equals a
Latin ``e``), and no word or digit is dropped, so a quote that differs by one number fails.
Layout artefacts (hyphenation at line breaks) are the ingest step's job, not this one's.

``NormalizedText`` keeps a map from the normalised text back to the original, made of
segments: *linear* ones (each normalised character is one original character) and *atomic*
ones (an entity, a cluster that NFKC expanded, a collapsed whitespace run), which a match may
neither start nor end inside. So every accepted match has a ``[start, end)`` span in the
original text, and normalising ``original[start:end]`` gives back exactly the matched text.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator

NORMALIZATION_VERSION = "qb-norm-1"

# Characters with canonical combining class 0 that can still compose with the character
# before them under NFC/NFKC (from UnicodeData decompositions, plus Hangul vowels and
# trailing consonants). A cluster keeps them with their starter. tests/test_normalize.py
# recomputes this set from unicodedata and fails if it drifts.
_COMPOSING_STARTERS = frozenset(
    {
        *(0x09BE, 0x09D7, 0x0B3E, 0x0B56, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5, 0x0CD6),
        *(0x0D3E, 0x0D57, 0x0DCF, 0x0DDF, 0x0FB5, 0x0FB7, 0x102E, 0x1B35),
        *(0x11127, 0x1133E, 0x11357, 0x114B0, 0x114BA, 0x114BD, 0x115AF, 0x11930),
        *range(0x1161, 0x1176),
        *range(0x11A8, 0x11C3),
    }
)

_QUOTES_AND_DASHES = {
    **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032\u2035"), "'"),
    **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb"), '"'),
    **dict.fromkeys(
        map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"),
        "-",
    ),
}
_ASCII_WHITESPACE = {c: " " for c in range(128) if chr(c).isspace()}

# What plain ASCII text (lower-cased, 1:1) cannot handle: whitespace runs, non-ASCII
# whitespace, character references, and runs of other non-ASCII characters.
_SPECIAL = re.compile(
    r"(?P<ws>\s{2,}|[^\S\x00-\x7f])"
    r"|(?P<ent>&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?))"
    r"|(?P<uni>[^\x00-\x7f\s]+)"
)
_SPACES = re.compile(" {2,}")


def _is_non_starter(ch: str) -> bool:
    return unicodedata.combining(ch) != 0 or ord(ch) in _COMPOSING_STARTERS


def fold(text: str) -> str:
    """Steps 2-5 on one unit of text (no offsets kept). Whitespace is not collapsed here."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKC", text):
        for c in ch.lower():
            mapped = _QUOTES_AND_DASHES.get(ord(c))
            if mapped is not None:
                out.append(mapped)
            elif c.isspace():
                out.append(" ")
            elif unicodedata.category(c) != "Cf":
                out.append(c)
    return "".join(out)


def normalize(text: str) -> str:
    """The normalised form of ``text``, trimmed. Equal inputs under the policy give equal output."""
    if text.isascii() and "&" not in text:
        return " ".join(text.lower().split())
    return NormalizedText(text).text.strip(" ")


def _clusters(run: str, base: int) -> list[tuple[int, int]]:
    """Split a run into clusters: a starter followed by the characters that combine with it."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(run)):
        if not _is_non_starter(run[i]):
            bounds.append((base + start, base + i))
            start = i
    bounds.append((base + start, base + len(run)))
    return bounds


class NormalizedText:
    """A text's normalised form with a map back to original offsets.

    ``text`` is the normalised string (not trimmed: a leading or trailing space may remain).
    """

    __slots__ = (
        "_last_space",
        "_lens",
        "_linear",
        "_orig_ends",
        "_orig_starts",
        "_parts",
        "_pos",
        "_starts",
        "original",
        "text",
    )

    def __init__(self, original: str) -> None:
        self.original = original
        self._starts: list[int] = []
        self._lens: list[int] = []
        self._orig_starts: list[int] = []
        self._orig_ends: list[int] = []
        self._linear: list[bool] = []
        self._parts: list[str] = []
        self._pos = 0
        self._last_space = False
        self._build(original)
        self.text = "".join(self._parts)
        del self._parts, self._pos, self._last_space

    # -- building -------------------------------------------------------------------------

    def _emit(self, out: str, orig_start: int, orig_end: int, linear: bool) -> None:
        if not out:
            return
        if self._last_space and out[0] == " ":
            if linear:
                out, orig_start = out[1:], orig_start + 1
            else:
                out = out.lstrip(" ")
            if not out:
                return
        self._starts.append(self._pos)
        self._lens.append(len(out))
        self._orig_starts.append(orig_start)
        self._orig_ends.append(orig_end)
        self._linear.append(linear)
        self._parts.append(out)
        self._pos += len(out)
        self._last_space = out[-1] == " "

    def _emit_plain(self, text: str, start: int, end: int) -> None:
        if start < end:
            self._emit(text[start:end].lower().translate(_ASCII_WHITESPACE), start, end, True)

    def _emit_atomic(self, out: str, start: int, end: int) -> None:
        self._emit(_SPACES.sub(" ", out), start, end, len(out) == 1 and end - start == 1)

    def _build(self, text: str) -> None:
        plain_from = 0
        for m in _SPECIAL.finditer(text):
            start, end = m.span()
            kind = m.lastgroup
            if kind == "uni" and start > plain_from and _is_non_starter(text[start]):
                start -= 1  # a combining mark belongs with the ASCII letter before it
            self._emit_plain(text, plain_from, start)
            plain_from = end
            if kind == "ws":
                self._emit(" ", start, end, end - start == 1)
            elif kind == "ent":
                self._emit_entity(m.group(), start, end)
            else:
                for c_start, c_end in _clusters(text[start:end], start):
                    self._emit_atomic(fold(text[c_start:c_end]), c_start, c_end)
        self._emit_plain(text, plain_from, len(text))

    def _emit_entity(self, ref: str, start: int, end: int) -> None:
        decoded = html.unescape(ref)
        if decoded == ref:  # not a reference after all ("AT&T"): plain text
            self._emit_plain_or_fold(ref, start, end)
            return
        # A reference without ';' may decode only a prefix ("&ampx" -> "&x"): split off the
        # unchanged tail so a match can still start or end inside it.
        keep = 0
        while keep < min(len(ref), len(decoded)) - 1 and ref[-1 - keep] == decoded[-1 - keep]:
            keep += 1
        self._emit_atomic(fold(decoded[: len(decoded) - keep]), start, end - keep)
        if keep:
            self._emit_plain_or_fold(ref[-keep:], end - keep, end)

    def _emit_plain_or_fold(self, piece: str, start: int, end: int) -> None:
        if piece.isascii():
            self._emit(piece.lower().translate(_ASCII_WHITESPACE), start, end, True)
        else:
            for c_start, c_end in _clusters(piece, start):
                self._emit_atomic(fold(piece[c_start - start : c_end - start]), c_start, c_end)

    # -- mapping --------------------------------------------------------------------------

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """Original ``[start, end)`` of normalised ``[start, end)``; None if it cuts a unit."""
        if not 0 <= start < end <= len(self.text):
            return None
        seg = bisect_right(self._starts, start) - 1
        if self._linear[seg]:
            orig_start = self._orig_starts[seg] + (start - self._starts[seg])
        elif start == self._starts[seg]:
            orig_start = self._orig_starts[seg]
        else:
            return None
        seg = bisect_right(self._starts, end - 1) - 1
        if self._linear[seg]:
            orig_end = self._orig_starts[seg] + (end - self._starts[seg])
        elif end == self._starts[seg] + self._lens[seg]:
            orig_end = self._orig_ends[seg]
        else:
            return None
        return orig_start, orig_end

    def locate(self, needle: str) -> tuple[int, int] | None:
        """Original span of the first whole-word occurrence of a normalised ``needle``.

        An occurrence counts only where it neither starts nor ends inside a word or a number
        (``4 weeks`` is not found in ``14 weeks``, ``5 percent`` not in ``1.5 percent``) nor
        inside an atomic unit.
        """
        for i in find_words(self.text, needle):
            span = self.span(i, i + len(needle))
            if span is not None:
                return span
        return None


def _cuts_left(hay: str, i: int) -> bool:
    if i == 0:
        return False
    before = hay[i - 1]
    if before.isalnum():
        return True
    return before in ".," and hay[i].isdigit() and i > 1 and hay[i - 2].isdigit()


def _cuts_right(hay: str, j: int) -> bool:
    if j >= len(hay):
        return False
    after = hay[j]
    if after.isalnum():
        return True
    return after in ".," and hay[j - 1].isdigit() and j + 1 < len(hay) and hay[j + 1].isdigit()


def find_words(hay: str, needle: str) -> Iterator[int]:
    """Start offsets of ``needle`` in ``hay`` that begin and end on word boundaries.

    A side that starts (ends) with a letter or digit must not continue a word or a number
    outside the needle; a side that is punctuation or space needs no boundary.
    """
    if not needle:
        return
    check_left = needle[0].isalnum()
    check_right = needle[-1].isalnum()
    size = len(needle)
    i = hay.find(needle)
    while i >= 0:
        if not (check_left and _cuts_left(hay, i)) and not (
            check_right and _cuts_right(hay, i + size)
        ):
            yield i
        i = hay.find(needle, i + 1)


def contains_words(hay: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``hay`` on word boundaries (both already normalised)."""
    return next(find_words(hay, needle), None) is not None
