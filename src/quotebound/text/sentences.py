"""Sentences: the one splitter, shared by the chunker, the inline parser, the contract's quote
enum and the extractive provider, so all four agree on where a sentence ends.

A sentence ends at ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by
whitespace and a character that is not a lowercase letter; a blank line always ends one. A
period does not end a sentence after a known abbreviation (``e.g.``, ``Dr.``), a dotted
acronym (``U.S.``) unless a word that opens sentences follows it (``SENTENCE_OPENERS``:
"the U.S. Navy" goes on, "to the U.S. The plan" ends), a single capital initial, or
``No.``/``p.``/``Fig.`` before a number; a decimal such as ``2.5`` has no whitespace after
its period, so it never ends one.

A heading is not a sentence (``reads_as_heading``): a Markdown heading line, or a title of
at most ``HEADING_WORDS`` capitalised words and no digit, neither ending with punctuation. It
is never a quote to offer, an extractive answer or a claim.

Every function is linear in the text: a look-back reads at most 40 characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = [
    "HEADING_WORDS",
    "breaks",
    "ends_sentence",
    "is_sentence_end",
    "reads_as_heading",
    "sentence_spans",
    "sentences_around",
    "trimmed",
]

# A blank line (a paragraph break), or whitespace after a possible sentence end.
_BREAK = re.compile(r"\s*\n[^\S\n]*\n\s*|(?<=[.!?\"'\u2019\u201d)\]])\s+")
_CLOSERS = frozenset("\"')]\u2019\u201d")
_OPENERS = "\"'([{\u2018\u201c"
_DOTTED = re.compile(r"(?:[^\W\d_]{1,2}\.)+[^\W\d_]{1,2}")
_LOOK_BACK = 40  # the longest word read before a period
ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "cf", "al", "approx", "ca"}
    | {"e.g", "i.e", "viz", "resp", "incl", "dept", "est"}
)
# Abbreviations only before a number: "No. 3" goes on, "The answer is no. Then" ends.
NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "nr", "p", "pp", "vol", "vols", "fig", "figs", "eq", "eqs", "art", "sec"}
    | {"ch", "para", "ref", "refs", "ex", "jan", "feb", "mar", "apr", "jun", "jul", "aug"}
    | {"sep", "sept", "oct", "nov", "dec"}
)


# A title: at most this many words, each capitalised but for these minor words (lower case in
# English titles: "Tips for Choosing an In-Network Provider").
HEADING_WORDS = 12
MINOR_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "per"}
    | {"the", "to", "vs", "with", "your", "our", "its"}
)
# Lower case in a title too, but in a sentence as often: minor only in a line standing alone.
_LINE_MINOR_WORDS = MINOR_WORDS | {"is", "are", "not", "how", "what", "when"}
_TITLE_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
_MARKDOWN_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_DIGIT = re.compile(r"\d")
_CLOSING_MARKS = "\"')]\u2019\u201d\u00bb"


def reads_as_heading(text: str, *, alone: bool = False) -> bool:
    """Whether ``text`` is a heading rather than a sentence. Neither ends with punctuation: a
    Markdown heading (``## Leave``), or a title: at most ``HEADING_WORDS`` words, the first and
    every other word capitalised (``MINOR_WORDS``, articles and prepositions, aside), and no
    digit (a number is a fact: "NASA Launched Artemis II in 2026" is a claim). Scripts without
    case never read as titles, and neither does a sentence in sentence case. ``alone``: the
    text is a line standing alone between two sentences (a PDF's layout), which says more, so
    digits are allowed ("Step 2: Prepare Your Appeal") and is/are/not/how/what/when may be
    lower case ("When Prior Authorization is Required")."""
    stripped = text.strip()
    unclosed = stripped.rstrip(_CLOSING_MARKS)
    if not unclosed or unclosed[-1] in ".!?:;,":
        return False
    if _MARKDOWN_HEADING.match(stripped):
        return True
    if len(stripped.split()) > HEADING_WORDS or (not alone and _DIGIT.search(stripped)):
        return False
    minor = _LINE_MINOR_WORDS if alone else MINOR_WORDS
    words = _TITLE_WORD.findall(stripped)
    return (
        bool(words)
        and words[0][0].isupper()
        and all(w[0].isupper() or w.casefold() in minor for w in words)
    )


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` of each sentence in ``text[start:end]``, trimmed of whitespace."""
    stop = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    position = start
    for gap_start, gap_end, _ in breaks(text, start, stop):
        spans.extend(trimmed(text, position, gap_start))
        position = gap_end
    spans.extend(trimmed(text, position, stop))
    return spans


def sentences_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The whole sentences of ``text`` that ``[start, end)`` lies in (from the sentence that
    holds ``start``, or the next one, through the one that reaches ``end``), or None."""
    first = last = None
    for a, b in sentence_spans(text):
        if a <= start < b or (first is None and start < a):
            first = a if first is None else first
        if first is not None:
            last = b
            if b >= end:
                break
    return None if first is None or last is None else (first, last)


def breaks(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """Whitespace runs between sentences: ``(gap_start, gap_end, is_paragraph_break)``."""
    for match in _BREAK.finditer(text, start, end):
        gap_start, gap_end = match.span()
        if match.group().count("\n") >= 2:
            yield gap_start, gap_end, True
        elif is_sentence_end(text, gap_start, gap_end, end):
            yield gap_start, gap_end, False


def ends_sentence(text: str, at: int) -> bool:
    """Whether a line break just before ``at`` is also a sentence boundary."""
    gap_start = len(text[:at].rstrip())
    gap_end = len(text) - len(text[at:].lstrip())
    return text[at - 1] == "\n" and is_sentence_end(text, gap_start, gap_end, len(text))


def is_sentence_end(text: str, gap_start: int, gap_end: int, end: int) -> bool:
    """Whether the whitespace ``text[gap_start:gap_end]`` follows the end of a sentence."""
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
    return not _is_abbreviation(_word_before(text, mark - 1), text, gap_end, end)


def _word_before(text: str, dot: int) -> str:
    start = dot
    while start > 0 and not text[start - 1].isspace() and dot - start < _LOOK_BACK:
        start -= 1
    return text[start:dot].lstrip(_OPENERS)


def _is_abbreviation(word: str, text: str, at: int, end: int) -> bool:
    """Whether the period after ``word`` belongs to it, with ``text[at:end]`` what follows."""
    following = text[at] if at < end else ""
    lower = word.lower()
    if lower in ABBREVIATIONS:
        return True
    if _DOTTED.fullmatch(word):  # "U.S. Navy" goes on; "in the U.S. The plan" ends
        return not _opens_sentence(text, at, end)
    if len(word) == 1 and word.isupper():  # an initial: "J. Smith"
        return True
    return lower in NUMBER_ABBREVIATIONS and following.isdigit()


# Capitalised, these open a sentence far more often than they go on a name: after a dotted
# acronym ("... moved to the U.S. The plan ...") they end the sentence before; a name or a noun
# ("the U.S. Navy", "$500 Billion U.S. Investment Plan") does not.
SENTENCE_OPENERS = frozenset(
    "the a an this that these those it its he she they we i you there here in on at for of by "
    "but and or so if when while after before as since although though however yet also then "
    "his her their our my your some many most all each every no not both one".split()
)


def _opens_sentence(text: str, at: int, end: int) -> bool:
    """Whether the word at ``text[at:]`` (read at most ``_LOOK_BACK`` characters) is a
    capitalised word that opens a sentence (``SENTENCE_OPENERS``), or there is no word."""
    stop = at
    limit = min(end, at + _LOOK_BACK)
    while stop < limit and (text[stop].isalpha() or text[stop] == "'"):
        stop += 1
    word = text[at:stop]
    if not word:
        return at >= end or not text[at].isalnum()
    return word[0].isupper() and word.lower() in SENTENCE_OPENERS


def trimmed(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` without surrounding whitespace, or nothing if it is all whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return [(start, end)] if start < end else []
