"""The verifier's fast paths: exact shortcuts to what ``NormalizedText`` would answer, and
the per-working-set cache (``TextCache``) that holds what they derive.

Every function here gives exactly the answer of the general path (``NormalizedText``, a full
scan of every text), only sooner; ``tests/text/test_fastpaths.py`` compares each with the general
path on generated text. Nothing here decides what is valid: that is the verifier's.

- *Inert* text (``inert_text``): every ASCII letter and digit of its normalised form is the
  same character lower-cased, with nothing removed between. Such a text can be searched
  through its ASCII lower-cased bytes (``ascii_lowered``), by windows (``locate_inert``), and
  ruled out by its runs (``_may_hold``) without normalising all of it.
- ``TextCache``: one object per working set holding each text's derived forms, computed once.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from typing import Protocol

from .markup import markup_free
from .normalize import (
    REFERENCE,
    REGULAR,
    NormalizedText,
    learn_char,
    may_continue,
    normalize,
    normalize_regular,
)
from .tokens import Evidence
from .words import on_word_bounds

_ASCII_WORD = re.compile(r"[a-z0-9]{2,}")
_ASCII_DIGITS = re.compile(r"[0-9]+")
_ASCII_ALNUM = re.compile(r"[a-z0-9]+")


# Non-ASCII characters found inert (see ``inert_text``). Bounded, like ``REGULAR``; a
# character beyond the bound is still judged, each time it is met.
_INERT: set[str] = set()
_INERT_MAX = 4096
_INERT_REFS: dict[str, bool] = {}
_ASCII_BYTES = bytes(range(128))


def _inert_char(ch: str) -> bool:
    """A non-ASCII character whose fold is one character, context-free, not an ASCII letter
    or digit: it can neither make nor join nor remove letters and digits."""
    folded = REGULAR.get(ch)
    if folded is None:
        folded = learn_char(ch)
    return bool(folded) and not (folded.isascii() and folded.isalnum())


def _inert_reference(ref: str, follows_letter: bool) -> bool:
    """Whether a character reference decodes to inert characters only (never to a letter or
    digit, never to nothing), with no '&' that a following reference could continue."""
    key = ref + ("a" if follows_letter else " ")
    known = _INERT_REFS.get(key)
    if known is not None:
        return known
    value = html.unescape(ref)
    ok = value == ref or (
        all(
            (c.isascii() and not c.isalnum() and c != "&") or (not c.isascii() and _inert_char(c))
            for c in value.replace("&", "")
        )
        and ("&" not in value or (ref.endswith(";") and not follows_letter))
    )
    if len(_INERT_REFS) < 4096:
        _INERT_REFS[key] = ok
    return ok


def inert_text(text: str) -> bool:
    """Whether every ASCII letter and digit of ``normalize(text)`` is the same character of
    ``text`` lower-cased, with letters and digits that follow each other in the normalised text
    following each other in ``text`` too (nothing removed between them).

    True when every non-ASCII character is regular and does not fold to an ASCII letter or
    digit (curly quotes, dashes, no-break spaces, accented letters...) and every character
    reference decodes to such characters or ASCII punctuation. A cheap exact prefilter: an
    ASCII run of a needle that ``text.lower()`` lacks is then not in the normalised text.
    """
    if not text.isascii():
        # the non-ASCII characters alone, found in C: UTF-8 without its ASCII bytes
        rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES)
        for ch in set(rest.decode("utf-8", "surrogatepass")):
            if ch in _INERT:
                continue
            if not _inert_char(ch):
                return False
            if len(_INERT) < _INERT_MAX:
                _INERT.add(ch)
    if "&" not in text:
        return True
    odd = _ODD_AMPERSAND[0].search(text)
    while odd is not None:
        ref = REFERENCE.match(text, odd.start())
        if ref is not None:
            follows_letter = may_continue(text, ref.end())
            if not _inert_reference(ref.group(), follows_letter):
                return False
            if not follows_letter:
                _learn_inert_reference(ref.group())
        odd = _ODD_AMPERSAND[0].search(text, odd.start() + 1)
    return True


# An '&' that does not start a reference already found inert where no letter or '#' follows
# it (``inert_text`` skips those in C); the references end in ';', so where the text has one,
# ``REFERENCE`` matches exactly it. Bounded, like ``_INERT``.
_KNOWN_REFS: list[str] = []
_ODD_AMPERSAND: list[re.Pattern[str]] = [re.compile("&")]


def _learn_inert_reference(ref: str) -> None:
    if not ref.endswith(";") or ref in _KNOWN_REFS or len(_KNOWN_REFS) >= 64:
        return
    _KNOWN_REFS.append(ref)
    known = "|".join(re.escape(r[1:]) for r in _KNOWN_REFS)
    _ODD_AMPERSAND[0] = re.compile(f"&(?!(?:{known})(?![A-Za-z#]))")


def ascii_lowered(text: str) -> bytes:
    """``text`` with ASCII letters lower-cased and every other non-ASCII character as ``?``,
    offset for offset (so an ASCII needle found in it is found at the same place in ``text``)."""
    return text.encode("ascii", "replace").lower()


_WINDOW_RUN = re.compile(r"[a-z0-9]+")
_MAX_ANCHORS = 8


# ASCII letters and digits, and a reference's tail, as byte values of ``ascii_lowered`` text
# (same offsets as the text; upper case lowered, every non-ASCII character a '?').
_LOW_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_LOW_REF_TAIL = _LOW_ALNUM | frozenset(b"#;")
_AMPERSAND = ord("&")


def _cut_ok(low: bytes, c: int) -> bool:
    """Whether normalising ``text[:c]`` and ``text[c:]`` apart gives, joined, exactly what
    normalising ``text`` does, units and all (``low`` is ``ascii_lowered(text)``): ``c`` is
    inside a run of ASCII letters and digits (no whitespace run, cluster or mark can cross it)
    that no reference covers (every unit of a reference, chains included, is an ``&`` followed
    by letters, digits, ``#`` and ``;``)."""
    if low[c - 1] not in _LOW_ALNUM or low[c] not in _LOW_ALNUM:
        return False
    j = c - 2
    while j >= 0 and low[j] in _LOW_REF_TAIL:
        j -= 1
    return j < 0 or low[j] != _AMPERSAND


def _cut_before(low: bytes, c: int) -> int:
    """The last place at or before ``c`` where ``_cut_ok`` holds (else 0)."""
    c = min(c, len(low) - 1)
    while c > 0 and not _cut_ok(low, c):
        c -= 1
    return max(c, 0)


def _cut_after(low: bytes, d: int) -> int:
    """The first place at or after ``d`` where ``_cut_ok`` holds (else the end)."""
    size, d = len(low), max(d, 1)
    while d < size and not _cut_ok(low, d):
        d += 1
    return min(d, size)


def locate_inert(text: str, low: bytes, needle: str) -> tuple[bool, tuple[int, int] | None]:
    """``NormalizedText(text).locate(needle)`` for an *inert* text (``inert_text``), found
    without normalising all of it: (True, the same result), or (False, None) where this way
    cannot be sure to be cheap, so the caller takes the full path.

    ``low`` is ``ascii_lowered(text)``. In an inert text every ASCII letter and digit of the
    normalised text is the same character of ``text`` lower-cased, and letters and digits that
    follow each other there follow each other here: so every occurrence of the needle has its
    longest ASCII run (the anchor) at an occurrence of the anchor in ``low``. Around each one,
    in order, a window of ``text`` cut where the normaliser's units cannot cross (``_cut_ok``)
    is normalised on its own, which gives exactly that slice of the whole normalised text, and
    the one place where the needle would have to start is checked as ``locate`` checks it
    (whole words, no unit cut), with two characters of context on each side.

    A window without '&' whose light normalisation (``normalize_regular``) is as long as it
    is normalises one for one: no reference, no whitespace run nor space at an edge, every
    character regular (folded, lower case included, to exactly one character). Its
    NormalizedText would have no unit: its text is the light one and its spans are offsets.
    One whose only change in length is whitespace runs (``_squeezed``) maps by those runs.
    """
    runs = _WINDOW_RUN.findall(needle)
    if not runs:
        return False, None
    anchor = max(runs, key=len)
    key = anchor.encode()
    hits: list[int] = []
    p = low.find(key)
    while p >= 0:
        if len(hits) == _MAX_ANCHORS:
            return False, None
        hits.append(p)
        p = low.find(key, p + 1)
    if not hits:
        return True, None
    k, size, la, n = needle.find(anchor), len(needle), len(anchor), len(text)
    before, after = k + 2, size - k - la + 2
    check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
    spaced = needle[0] != " " and needle[-1] != " "
    for p in hits:
        margin_lo, margin_hi = before + 4, after + 4
        while True:
            c = _cut_before(low, p - margin_lo)
            d = _cut_after(low, p + la + margin_hi)
            if 2 * (d - c) > n and n > 256:
                return False, None  # windows as large as the text: the full path is cheaper
            piece = text[c:d]
            light = None if "&" in piece else normalize_regular(piece)
            window: NormalizedText | None = None
            squeezed = None
            if light is not None and len(light) == len(piece):
                hay, q = light, p - c  # normalised one for one: no map needed (see above)
            elif light is not None and spaced and (squeezed := _squeezed(piece, light)):
                hay, q = light, _squeeze(squeezed, p - c)
            else:
                window = NormalizedText(piece)
                hay, q = window.text, window.normalized_at(p - c)  # type: ignore[assignment]
                if q is None:
                    break  # the anchor is inside a unit (a reference's name): no occurrence here
            if c > 0 and q < before:
                margin_lo *= 2
                continue
            if d < n and len(hay) - q - la < after:
                margin_hi *= 2
                continue
            i = q - k
            if i < 0 or not hay.startswith(needle, i):
                break
            if not on_word_bounds(hay, i, i + size, check_left, check_right):
                break
            if window is not None:
                span = window.span(i, i + size)
            elif squeezed:
                span = (_unsqueeze(squeezed, i), _unsqueeze(squeezed, i + size - 1) + 1)
            else:
                span = (i, i + size)
            if span is not None:
                return True, (span[0] + c, span[1] + c)
            break
    return True, None


_WHITESPACE_RUN = re.compile(r"\s{2,}")


def _squeezed(piece: str, light: str) -> list[tuple[int, int]] | None:
    """The whitespace runs of ``piece`` when they are all that its light normalisation
    (``light``, no reference in ``piece``) changed in length, and no edge is whitespace: then
    its NormalizedText's units are exactly those runs, each one space. Else None."""
    if piece[0].isspace() or piece[-1].isspace():
        return None
    runs = [m.span() for m in _WHITESPACE_RUN.finditer(piece)]
    return runs if sum(e - s - 1 for s, e in runs) == len(piece) - len(light) else None


def _squeeze(runs: list[tuple[int, int]], at: int) -> int:
    """Normalised offset of original offset ``at`` (outside every run)."""
    return at - sum(e - s - 1 for s, e in runs if e <= at)


def _unsqueeze(runs: list[tuple[int, int]], i: int) -> int:
    """Original offset of normalised character ``i`` (not a run's space)."""
    shift = 0
    for s, e in runs:
        if s - shift >= i:
            break
        shift += e - s - 1
    return i + shift


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


class Text(Protocol):
    """What the cache reads of a source: its id and its text (``sources.Source`` has both)."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


class TextCache:
    """What the verifier derives from a working set's texts, each computed once, on first
    use, so that verifying costs nothing for texts that are never cited: normalised forms
    (with offset maps), light forms, the inert flags, ASCII lower-cased bytes, the number facts,
    the texts joined for one scan, and (``prepare``) a word index over all of them.

    It holds texts by id and position only: ``WorkingSet`` owns the sources and their rules,
    this object only the fast ways to answer ``locate`` and ``holder_of`` exactly as the
    normalised texts would.
    """

    __slots__ = (
        "_by_id",
        "_evidence",
        "_id_tokens",
        "_index",
        "_inert",
        "_items",
        "_joined",
        "_joined_low",
        "_light",
        "_low",
        "_markup",
        "_mixed",
        "_normalized",
    )

    def __init__(self, items: Sequence[Text], by_id: Mapping[str, int]) -> None:
        # (held, not copied: a working set is made per answer, and most texts are never read)
        self._items, self._by_id = items, by_id
        self._normalized: dict[str, NormalizedText] = {}
        self._evidence: dict[str, Evidence] = {}
        self._id_tokens: frozenset[str] | None = None
        self._index: dict[str, set[int]] | None = None
        self._light: dict[str, str | None] = {}
        self._inert: dict[str, bool] = {}
        self._low: dict[str, bytes] = {}
        self._joined: tuple[str, list[int]] | None = None
        self._joined_low: bytes | None = None
        self._mixed: list[int] = []
        self._markup: dict[str, tuple[NormalizedText, list[int]] | None] = {}

    def normalized(self, sid: str) -> NormalizedText:
        """The normalised text of ``sid`` (computed on first use)."""
        cached = self._normalized.get(sid)
        if cached is None:
            cached = NormalizedText(self._items[self._by_id[sid]].text)
            self._normalized[sid] = cached
        return cached

    def markup_view(self, sid: str) -> tuple[NormalizedText, list[int]] | None:
        """The normalised text of ``sid`` without its inline markup (``markup.markup_free``)
        and the original offset of each character of the markup-free text; None when it has
        no markup (computed on first use: only for a quote not found as written)."""
        if sid not in self._markup:
            free = markup_free(self._items[self._by_id[sid]].text)
            self._markup[sid] = None if free is None else (NormalizedText(free[0]), free[1])
        return self._markup[sid]

    def locate(self, sid: str, needle: str) -> tuple[int, int] | None:
        """``self.normalized(sid).locate(needle)``, the same answer; for a text not normalised
        yet and *inert* (``inert_text``), found by normalising only windows around the needle's
        anchor word (``locate_inert``) instead of the whole text."""
        cached = self._normalized.get(sid)
        if cached is None:
            position = self._by_id[sid]
            if self._is_inert(sid, position):
                done, span = locate_inert(self._items[position].text, self._lowered(sid), needle)
                if done:
                    return span
        return self.normalized(sid).locate(needle)

    def _is_inert(self, sid: str, position: int) -> bool:
        inert = self._inert.get(sid)
        if inert is None:
            inert = self._inert[sid] = inert_text(self._items[position].text)
        return inert

    def _lowered(self, sid: str) -> bytes:
        low = self._low.get(sid)
        if low is None:
            position = self._by_id[sid]
            text = self._items[position].text
            if self._joined_low is not None and self._joined is not None:
                start = self._joined[1][position]  # a slice of the joined scan's
                low = self._joined_low[start : start + len(text)]
            else:
                low = ascii_lowered(text)
            self._low[sid] = low
        return low

    def prime(self, sids: Iterable[str]) -> None:
        """Judge inert (``inert_text``) and lower-case (``ascii_lowered``) together, in one
        call each over their texts joined, the texts not normalised yet that a verdict is about
        to search: the cited ones. The same flags and bytes as one by one, for less. Texts
        judged not inert together are left to be judged one by one."""
        if len(self._normalized) == len(self._items):
            return  # (prepared: every text is normalised already)
        todo = [
            sid
            for sid in dict.fromkeys(sids)
            if sid in self._by_id and sid not in self._normalized and sid not in self._low
        ]
        if len(todo) < 2:
            return
        texts = [self._items[self._by_id[sid]].text for sid in todo]
        joined = "\x00".join(texts)
        if any(sid not in self._inert for sid in todo) and inert_text(joined):
            self._inert.update(dict.fromkeys(todo, True))
        low, at = ascii_lowered(joined), 0
        for sid, text in zip(todo, texts, strict=True):
            self._low[sid] = low[at : at + len(text)]
            at += len(text) + 1

    def evidence(self, sid: str) -> Evidence:
        """The number facts of a whole text, as evidence."""
        cached = self._evidence.get(sid)
        if cached is None:
            cached = Evidence(self.normalized(sid).text)
            self._evidence[sid] = cached
        return cached

    def id_tokens(self) -> frozenset[str]:
        """The ids, normalised: a claim naming a source ("as S2 says") names no identifier."""
        if self._id_tokens is None:
            self._id_tokens = frozenset(
                # an ASCII id without '&' normalises by lower case and spacing alone
                " ".join(sid.lower().split())
                if sid.isascii() and "&" not in sid
                else normalize(sid)
                for sid in self._by_id
            )
        return self._id_tokens

    def prepare(self) -> None:
        """Normalise every text now (at pack time), and index their words.

        The word index lets ``holder_of`` look for a failed quote across the whole set in
        time that does not grow with the number of texts.
        """
        index: dict[str, set[int]] = {}
        for position, item in enumerate(self._items):
            for word in set(_ASCII_WORD.findall(self.normalized(item.id).text)):
                index.setdefault(word, set()).add(position)
        self._index = index

    def holder_of(self, needles: list[str], exclude: str) -> str | None:
        """The first other text in which a normalised needle occurs (exactly), or None.

        With the word index (``prepare()``) only texts holding every word of the needle are
        searched. Without it (three texts or more), only texts that hold one run of the
        needle's ASCII letters and digits (``_holding``), and those not inert, are looked at;
        an inert one is then ruled out where it lacks the needle's runs in order
        (``_may_hold``), else searched by windows (``locate``). A text not inert is searched
        by its normalised text computed without the offset map where that is possible.
        """
        last = needles[-1]
        positions: Iterable[int] = range(len(self._items))
        if self._index is not None:
            indexed = self._indexed(last)
            if indexed is not None:
                positions = indexed
        elif len(self._items) > 2 and (words := _ASCII_ALNUM.findall(last)):
            digits = _ASCII_DIGITS.findall(last)
            key = max(digits or words, key=len)
            positions = sorted(self._holding(key, bool(digits)).union(self._mixed))
        runs: list[bytes] | None = None  # the needle's ASCII runs, read when first needed
        longest = 0
        for position in positions:
            sid = self._items[position].id
            if sid == exclude:
                continue
            if sid not in self._normalized:
                if self._is_inert(sid, position):
                    if runs is None:
                        runs = [w.encode() for w in _ASCII_ALNUM.findall(last)]
                        longest = max(range(len(runs)), key=lambda i: len(runs[i])) if runs else 0
                    if runs and not _may_hold(self._lowered(sid), runs, longest):
                        continue
                    if any(self.locate(sid, n) is not None for n in needles):
                        return sid
                    continue
                if sid not in self._light:
                    self._light[sid] = normalize_regular(self._items[position].text)
                light = self._light[sid]
                if light is not None and not any(n in light for n in needles):
                    continue
            if any(self.normalized(sid).locate(n) is not None for n in needles):
                return sid
        return None

    def _indexed(self, needle: str) -> list[int] | None:
        """Positions, in order, of the texts whose indexed words include every word of
        ``needle`` of two ASCII letters or digits or more; None when it has no such word (no
        text is ruled out). A word that no text has ends the look-up at once."""
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
        """Positions of the texts that hold ``run`` (a run of ASCII digits, as it is; else of
        ASCII letters and digits, ASCII lower-cased): one scan of all the texts joined.

        The first call also judges the texts inert together (the joined text is inert exactly
        when each of them is: the separator joins nothing) and lists those that are not
        (``_mixed``), so that an inert text without the run is ruled out at the cost of a set
        lookup. Digits are found in the texts as they are: nothing is lower-cased for them.
        """
        if self._joined is None:
            texts = [item.text for item in self._items]
            starts = list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
            self._joined = ("\x00".join(texts), starts)
            ids = [item.id for item in self._items]
            unknown = [p for p, sid in enumerate(ids) if sid not in self._inert]
            if 8 * (len(texts) - len(unknown)) < len(texts):
                together = self._joined[0]  # few known: judge them all, no second join
            else:
                together = "\x00".join(texts[p] for p in unknown)
            if unknown and inert_text(together):
                self._inert.update(dict.fromkeys((ids[p] for p in unknown), True))
            self._mixed = [p for p, sid in enumerate(ids) if not self._is_inert(sid, p)]
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
