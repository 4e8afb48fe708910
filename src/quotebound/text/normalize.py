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
6. Optional marks of scripts whose writers usually leave them out are removed (``qb-norm-2``):
   Arabic harakat (fatha, damma, kasra, their tanwin forms, shadda, sukun, the dagger alif),
   Quranic annotation signs and the tatweel; Hebrew niqqud (vowel points, dagesh, the shin and
   sin dots, rafe) and cantillation marks. A vocalised source and an unvocalised quote of it
   match; letters, hamza forms and Hebrew punctuation (maqaf, sof pasuq) stay.
7. Every run of whitespace, no-break spaces included, becomes one space.

Nothing else is folded: letters stay the letters they are (a Cyrillic ``е`` never equals a
Latin ``e``), Latin accents stay (``café`` is not ``cafe``: they tell words apart), and no
word or digit is dropped, so a quote that differs by one number fails.
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

from .words import count_words, on_word_bounds, trimmed

NORMALIZATION_VERSION = "qb-norm-2"

# Characters with canonical combining class 0 that can still compose with the character
# before them under NFC/NFKC (from UnicodeData decompositions, plus Hangul vowels and
# trailing consonants). A cluster keeps them with their starter. tests/text/test_normalize.py
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
    ord("\u03c2"): "\u03c3",  # final sigma is a case form of sigma, as str.casefold has it
    **dict.fromkeys(
        map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"),
        "-",
    ),
}
_ASCII_WHITESPACE = {c: " " for c in range(128) if chr(c).isspace()}

# Step 6: marks a writer may leave out (qb-norm-2). Removed after NFKC, so a letter and a mark
# that compose (alef and hamza above) stay one letter; a presentation form that NFKC splits
# (Hebrew shin with its dot, U+FB2A) keeps its letter.
OPTIONAL_MARKS = frozenset(
    {
        *range(0x0610, 0x061B),  # Arabic honorific and Quranic small signs
        *range(0x064B, 0x0653),  # tanwin, fatha, damma, kasra, shadda, sukun
        *range(0x0656, 0x0660),  # subscript alef, inverted damma and other vowel signs
        0x0640,  # tatweel (a stretch of the baseline, not a letter)
        0x0670,  # superscript (dagger) alif
        *range(0x06D6, 0x06DD),  # Quranic annotation signs
        *range(0x06DF, 0x06E5),
        *range(0x06E7, 0x06E9),
        *range(0x06EA, 0x06EE),
        *range(0x08D3, 0x08E2),  # extended Arabic marks
        *range(0x08E3, 0x0900),
        *range(0x0591, 0x05B0),  # Hebrew cantillation (te'amim)
        *range(0x05B0, 0x05BE),  # niqqud: sheva .. meteg, dagesh
        0x05BF,  # rafe
        0x05C1,  # shin dot
        0x05C2,  # sin dot
        0x05C4,  # upper dot
        0x05C5,  # lower dot
        0x05C7,  # qamats qatan
    }
)

# What plain text (lower-cased and translated 1:1, in C) cannot handle alone: whitespace runs,
# character references, and non-ASCII characters. Most non-ASCII characters turn out to be
# "regular" (they fold to exactly one character, context-free) and stay in the bulk text.
REFERENCE = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]{0,31};?)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ASCII_CONTROL_SPACES = "\n\t\r\x0b\x0c\x1c\x1d\x1e\x1f"
_SPACES = re.compile(" {2,}")
_CAPITAL_SIGMA = "\u03a3"  # str.lower() makes it final or not by context: never bulk-lowered


def _is_non_starter(ch: str) -> bool:
    return unicodedata.combining(ch) != 0 or ord(ch) in _COMPOSING_STARTERS


def fold(text: str) -> str:
    """Steps 2-6 on one unit of text (no offsets kept). Whitespace is not collapsed here."""
    out: list[str] = []
    if not text.isascii():  # removed first, so a mark after a removed char still composes
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    for ch in unicodedata.normalize("NFKC", text):
        for c in ch.lower():
            mapped = _QUOTES_AND_DASHES.get(ord(c))
            if mapped is not None:
                out.append(mapped)
            elif c.isspace():
                out.append(" ")
            elif unicodedata.category(c) != "Cf" and ord(c) not in OPTIONAL_MARKS:
                out.append(c)
    return "".join(out)


# Per non-ASCII character: its fold when it is "regular" (it may stay in bulk text: its fold
# is one character, in lower case, equal to the fold of its lower case, it combines with
# nothing and is not removed), else "". A memo of a pure function, bounded so hostile text
# cannot grow it forever.
REGULAR: dict[str, str] = {}


def learn_char(ch: str) -> str:
    lower = ch.lower()
    folded = fold(ch)
    ok = (
        len(lower) == 1
        and len(folded) == 1
        and fold(lower) == folded
        and folded.lower() == folded
        and (folded != " " or ch.isspace())
        and ch != _CAPITAL_SIGMA
        and not _is_non_starter(ch)
    )
    result = folded if ok else ""
    if len(REGULAR) < 65536:
        REGULAR[ch] = result
    return result


_WS_SINGLE = re.compile(r"[^\S ]")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """``text`` with lone surrogates (undecodable bytes smuggled through by the OS or a JSON
    escape) replaced by U+FFFD, so it can be hashed, stored and printed as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # C speed: the common case, nothing to replace
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def normalize(text: str) -> str:
    """The normalised form of ``text``, trimmed. Equal inputs under the policy give equal output.

    The same result as ``NormalizedText(text).text.strip(" ")``, without the offset map.
    """
    light = normalize_regular(text)
    return light if light is not None else NormalizedText(text).text.strip(" ")


def normalize_regular(text: str) -> str | None:
    """``normalize(text)`` when every character of it, references decoded, is regular (no marks
    to compose, nothing to remove), computed in C; None otherwise."""
    if "&" in text and REFERENCE.search(text) is not None:
        decoded = html.unescape(text)
        while decoded != text:  # until none is left, as the builder does unit by unit
            text, decoded = decoded, html.unescape(decoded)
    if not text.isascii():
        # each character swapped for its fold first (a fold is lower case: see ``learn_char``),
        # which often leaves ASCII text: lower() and split() on it are far faster
        for ch in set(_NON_ASCII.findall(text)):
            folded = REGULAR.get(ch)
            if folded is None:
                folded = learn_char(ch)
            if not folded:
                return None
            if folded != ch:
                text = text.replace(ch, folded)
    return " ".join(text.lower().split())


class NormalizedText:
    """A text's normalised form with a map back to original offsets.

    ``text`` is the normalised string (not trimmed: a leading or trailing space may remain).
    The map is a list of *units*, the places where the text is not copied 1:1 (a collapsed
    whitespace run, a decoded reference, a cluster NFKC changed, a removed character), each as
    (normalised start, normalised length, original start, original length). Between units the
    two texts advance together, one character for one.
    """

    __slots__ = ("_u_len", "_u_norm", "_u_olen", "_u_orig", "original", "text")

    def __init__(self, original: str) -> None:
        self.original = original
        self._u_norm: list[int] = []
        self._u_len: list[int] = []
        self._u_orig: list[int] = []
        self._u_olen: list[int] = []
        self.text = _Builder(self, original).run()

    def _unit(self, norm: int, length: int, orig: int, orig_len: int) -> None:
        self._u_norm.append(norm)
        self._u_len.append(length)
        self._u_orig.append(orig)
        self._u_olen.append(orig_len)

    # -- mapping --------------------------------------------------------------------------

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """Original ``[start, end)`` of normalised ``[start, end)``; None if it cuts a unit."""
        if not 0 <= start < end <= len(self.text):
            return None
        first = self._original_at(start, start_side=True)
        last = self._original_at(end - 1, start_side=False)
        if first is None or last is None:
            return None
        return first, last

    def normalized_at(self, orig: int) -> int | None:
        """Normalised offset of original offset ``orig``; None if it falls inside a unit (where
        no normalised character starts one for one)."""
        k = bisect_right(self._u_orig, orig) - 1
        if k < 0:
            return orig
        start, size = self._u_orig[k], self._u_olen[k]
        if orig < start + size:
            return None
        return self._u_norm[k] + self._u_len[k] + orig - start - size

    def _original_at(self, i: int, start_side: bool) -> int | None:
        """Original start of normalised char ``i`` (or original end, for the end side)."""
        k = bisect_right(self._u_norm, i) - 1
        if k < 0:
            return i if start_side else i + 1
        norm, length = self._u_norm[k], self._u_len[k]
        orig, orig_len = self._u_orig[k], self._u_olen[k]
        if i < norm + length:  # inside a unit: only its edges are boundaries...
            if start_side:  # ...or where only spaces of it come before ("´" is " ́")
                return orig if not self.text[norm:i].strip(" ") else None
            return orig + orig_len if not self.text[i + 1 : norm + length].strip(" ") else None
        after = orig + orig_len + (i - norm - length)
        return after if start_side else after + 1

    def locate(self, needle: str) -> tuple[int, int] | None:
        """Original span of the first whole-word occurrence of a normalised ``needle``.

        An occurrence counts only where it neither starts nor ends inside a word or a number
        (``4 weeks`` is not found in ``14 weeks``, ``5 percent`` not in ``1.5 percent``) nor
        inside an atomic unit.
        """
        hay = self.text
        i = hay.find(needle) if needle else -1
        if i < 0:
            return None
        check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
        size = len(needle)
        while i >= 0:
            if on_word_bounds(hay, i, i + size, check_left, check_right):
                span = self.span(i, i + size)
                if span is not None:
                    return span
            i = hay.find(needle, i + 1)
        return None


class _Builder:
    """Builds one NormalizedText in two passes.

    Pass 1 finds the irregular units (whitespace runs, references, clusters that NFKC, case or
    removal change) with one regex; pass 2 takes everything between them from the whole text
    lower-cased and folded one for one in C, and joins the pieces.
    """

    __slots__ = ("last_space", "out", "parts", "pos", "text")

    def __init__(self, out: NormalizedText, text: str) -> None:
        self.out, self.text = out, text
        self.parts: list[str] = []
        self.pos = 0  # length of the normalised text so far
        self.last_space = False

    def run(self) -> str:
        text = self.text
        units: list[tuple[int, int, str]] = []
        swaps: dict[str, str] = {}  # lower-case char -> its fold, for regular chars that change
        done = 0
        for start, end, kind in _irregular_candidates(text):
            if start < done:
                continue  # inside a whitespace run or a cluster already taken
            if kind == 0:
                unit: tuple[int, int, str] | None = (start, end, " ")
            elif kind == 1:
                unit = _entity(text, start, end)
            else:
                ch = text[start]
                folded = REGULAR.get(ch)
                if folded is None:
                    folded = learn_char(ch)
                if folded:
                    if folded != ch:
                        swaps[ch.lower()] = folded
                    continue
                unit = _cluster(text, start, done)
            if unit is not None:
                units.append(unit)
                done = unit[1]
        bulk = self._bulk(swaps)
        at = 0
        for start, end, folded in units:
            self._emit_bulk(bulk, at, start)
            self._emit_unit(folded, start, end)
            at = end
        self._emit_bulk(bulk, at, len(text))
        return "".join(self.parts)

    def _bulk(self, swaps: dict[str, str]) -> str | None:
        """The whole text lower-cased and folded one for one (None if lower() moved offsets)."""
        low = self.text.lower()
        if len(low) != len(self.text):  # "İ" lowers to two characters: per-chunk fallback
            return None
        return _fold_bulk(low, swaps)

    def _emit_bulk(self, bulk: str | None, start: int, end: int) -> None:
        if end <= start:
            return
        chunk = bulk[start:end] if bulk is not None else _fold_lowered(self.text[start:end].lower())
        if self.last_space and chunk[0] == " ":  # a space run across a removed unit
            self.out._unit(self.pos, 0, start, 1)
            chunk = chunk[1:]
            if not chunk:
                return
        self.parts.append(chunk)
        self.pos += len(chunk)
        self.last_space = chunk[-1] == " "

    def _emit_unit(self, folded: str, start: int, end: int) -> None:
        folded = _SPACES.sub(" ", folded)
        if self.last_space and folded.startswith(" "):
            folded = folded.lstrip(" ")
        self.out._unit(self.pos, len(folded), start, end - start)
        if folded:
            self.parts.append(folded)
            self.pos += len(folded)
            self.last_space = folded[-1] == " "


def _irregular_candidates(text: str) -> list[tuple[int, int, int]]:
    """(start, end, kind) of whitespace runs (0), references (1) and non-ASCII chars (2).

    Sorted by start; a run comes before a non-ASCII whitespace character at the same place.
    Literal searches run in C far faster than one regex alternation over every position.
    """
    non_ascii = [] if text.isascii() else [m.start() for m in _NON_ASCII.finditer(text)]
    found = [(s, e, 0) for s, e in _whitespace_runs(text, non_ascii)]
    if "&" in text:
        found += [(m.start(), m.end(), 1) for m in REFERENCE.finditer(text)]
    found += [(p, p + 1, 2) for p in non_ascii]
    found.sort()
    return found


def _positions(text: str, needle: str) -> list[int]:
    out = []
    i = text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def _whitespace_runs(text: str, non_ascii: list[int]) -> list[tuple[int, int]]:
    """Runs of two or more whitespace characters.

    Every run holds two spaces in a row or a whitespace character other than the space, so
    only those places are looked at.
    """
    seeds = [p for p in non_ascii if text[p].isspace()]
    for needle in ("  ", *_ASCII_CONTROL_SPACES):
        if needle in text:
            seeds += _positions(text, needle)
    runs: list[tuple[int, int]] = []
    covered, size = 0, len(text)
    for p in sorted(seeds):
        if p < covered:
            continue
        start, end = p, p + 1
        while start > covered and text[start - 1].isspace():
            start -= 1
        while end < size and text[end].isspace():
            end += 1
        if end - start > 1:
            runs.append((start, end))
            covered = end
    return runs


def _fold_lowered(low: str) -> str:
    """Fold already lower-cased bulk text one for one (the per-chunk fallback)."""
    return _fold_bulk(low, {c: fold(c) for c in set(low) if not c.isascii()})


def _fold_bulk(low: str, swaps: dict[str, str]) -> str:
    for ch in _ASCII_CONTROL_SPACES:
        if ch in low:
            low = low.replace(ch, " ")
    for old, new in swaps.items():
        if old != new:
            low = low.replace(old, new)
    return low


def _is_format(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf"


def _cluster(text: str, start: int, done: int) -> tuple[int, int, str]:
    """The irregular cluster at ``start``: a starter and the marks that combine with it.

    Removed format characters inside it do not split it: ``e``, a soft hyphen, then an acute
    accent are one cluster that folds to ``é``.
    """
    end = start + 1
    marks = _is_non_starter(text[start])
    while end < len(text) and (_is_non_starter(text[end]) or _is_format(text[end])):
        marks = marks or _is_non_starter(text[end])
        end += 1
    if marks and start > done and (_is_non_starter(text[start]) or _is_format(text[start])):
        start -= 1  # the marks belong with the character before them
    return start, end, fold(text[start:end])


# A reference's own unit (length, fold, whether its value ends in '&' so that a reference
# right after it continues it): a memo of a pure function, bounded like ``REGULAR``.
# Length 0: not a reference after all.
_REF_UNITS: dict[str, tuple[int, str, bool]] = {}


def _entity(text: str, start: int, end: int) -> tuple[int, int, str] | None:
    """The unit of the reference at ``text[start:end]``, decoded until none is left.

    ``&amp;lt;`` (escaped twice) is ``<``, as ``&lt;`` is: a quote copied from an escaped
    prompt and the source it came from normalise alike.
    """
    ref = text[start:end]
    known = _REF_UNITS.get(ref)
    if known is not None:
        length, folded, chains = known
        if not length:
            return None
        stop = start + length
        if not chains or not may_continue(text, stop):
            return start, stop, folded
    value, stop = _decode_once(text, start, end)
    if stop == start:
        if len(_REF_UNITS) < 4096:
            _REF_UNITS[ref] = (0, "", False)
        return None  # not a reference after all ("AT&T"): the '&' is bulk text
    if known is None and len(_REF_UNITS) < 4096:
        _REF_UNITS[ref] = (stop - start, fold(value), value.endswith("&"))
    while value.endswith("&"):
        follow = REFERENCE.match("&" + text[stop : stop + 40])
        if follow is None:
            break
        more, more_stop = _decode_once("&" + text[stop : stop + 40], 0, follow.end())
        if more_stop == 0:
            break
        value, stop = value[:-1] + more, stop + more_stop - 1
    return start, stop, fold(value)


def may_continue(text: str, stop: int) -> bool:
    """Whether a reference could start right after a decoded '&' at ``stop`` (a chain)."""
    after = text[stop : stop + 1]
    return after == "#" or (after.isascii() and after.isalpha())


def _decode_once(text: str, start: int, end: int) -> tuple[str, int]:
    """(decoded value, end of what it decoded) for one reference; end == start if none.

    A reference without ';' may decode only a prefix ("&ampx" -> "&x"): the unchanged tail is
    left out, so it stays bulk text where a match can still start or end.
    """
    ref = text[start:end]
    decoded = html.unescape(ref)
    if decoded == ref:
        return ref, start
    keep = 0
    while keep < min(len(ref), len(decoded)) - 1 and ref[-1 - keep] == decoded[-1 - keep]:
        keep += 1
    return decoded[: len(decoded) - keep], end - keep


def quote_words(quote: str) -> int:
    """The words of a quote as the length checks count them (``min/max_quote_words``): the one
    count that the verifier, the contract's schemas and the extractive provider agree on."""
    return count_words(trimmed(normalize(quote)))
