"""Words: function words, word boundaries, and how a quote's words are counted.

All functions take *normalised* text (``text.normalize``); ``normalize.quote_words`` counts
a quote as written.

- ``STOPWORDS``: question words and function words match everything and rank nothing:
  retrieval drops them from full-text queries, and the extractive provider from the words a
  sentence must cover.
- A match is on word boundaries where it neither starts nor ends inside a word or a number:
  ``4 weeks`` is not in ``14 weeks``, ``5 percent`` not in ``1.5 percent`` (``on_word_bounds``,
  the one test every matcher uses).
- A quote's words are its space-separated tokens, after trimming quotation marks, ellipses and
  edge punctuation, that hold a letter or digit (``-``, ``&`` or ``__`` alone is not a word);
  Chinese, Japanese and Thai, written without spaces, count by their characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

STOPWORDS = frozenset(
    "a an and are as at be but by can could do does did for from had has have how i if in is "
    "it its me my many much of on or our should so than that the their them there these they "
    "this to was we were what when where which who whom why will with would you your".split()
)


# Numerals of the scripts written without spaces: a boundary between two of them (or digits)
# cuts a number (十六 inside 二十六); between any other two of their characters it cuts no word.
_NUMERALS = frozenset("〇一二三四五六七八九十百千万萬亿億两兩零")


def _between_unspaced(a: str, b: str) -> bool | None:
    """For two characters side by side of which one is of a script without spaces: whether a
    boundary between them cuts (only a number: two numerals or digits); None otherwise."""
    if (a.isascii() and b.isascii()) or (UNSPACED.match(a) is None and UNSPACED.match(b) is None):
        return None
    return (a.isdigit() or a in _NUMERALS) and (b.isdigit() or b in _NUMERALS)


def _cuts_left(hay: str, i: int) -> bool:
    """Whether an occurrence starting at ``i`` would start inside a word or a number."""
    if i == 0:
        return False
    before = hay[i - 1]
    unspaced = _between_unspaced(before, hay[i])
    if unspaced is not None:
        return unspaced
    if before.isalnum():
        return True
    if not hay[i].isdigit() or i < 2:
        return False
    # 1.5 and 1,000 are one number; job-14 and doc_14 are one identifier
    return (before in ".," and hay[i - 2].isdigit()) or (before in "-_" and hay[i - 2].isalnum())


def _cuts_right(hay: str, j: int) -> bool:
    """Whether an occurrence ending at ``j`` would end inside a word or a number."""
    if j >= len(hay):
        return False
    after = hay[j]
    unspaced = _between_unspaced(hay[j - 1], after)
    if unspaced is not None:
        return unspaced
    if after.isalnum():
        return True
    if not hay[j - 1].isdigit() or j + 1 >= len(hay):
        return False
    return (after in ".," and hay[j + 1].isdigit()) or (after in "-_" and hay[j + 1].isalnum())


def on_word_bounds(hay: str, i: int, j: int, check_left: bool, check_right: bool) -> bool:
    """Whether ``hay[i:j]`` starts and ends on word boundaries, on the sides to check (those
    where the needle has a letter or digit); a space next to it, the usual case, is one."""
    return (not check_left or i == 0 or hay[i - 1] == " " or not _cuts_left(hay, i)) and (
        not check_right or j == len(hay) or hay[j] == " " or not _cuts_right(hay, j)
    )


def find_words(hay: str, needle: str) -> Iterator[int]:
    """Start offsets of ``needle`` in ``hay`` that begin and end on word boundaries.

    A side that starts (ends) with a letter or digit must not continue a word or a number
    outside the needle; a side that is punctuation or space needs no boundary.
    """
    if not needle:
        return
    check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
    size = len(needle)
    i = hay.find(needle)
    while i >= 0:
        if on_word_bounds(hay, i, i + size, check_left, check_right):
            yield i
        i = hay.find(needle, i + 1)


def contains_words(hay: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``hay`` on word boundaries (both already normalised).

    ``find_words`` written out, with no generator: it is on the verifier's hot path."""
    i = hay.find(needle) if needle else -1
    if i < 0:
        return False
    check_left, check_right = needle[0].isalnum(), needle[-1].isalnum()
    size = len(needle)
    while i >= 0:
        if on_word_bounds(hay, i, i + size, check_left, check_right):
            return True
        i = hay.find(needle, i + 1)
    return False


WORD_TOKEN = re.compile(r"[^\W_]+")  # a run of letters or digits
# the punctuation a word is read without at its edges (the relevance and writing rules)
EDGE_PUNCTUATION = "\"'.,;:!?()[]{}"
_EDGE = frozenset(" \"'.,;:!?")
_EDGE_CHARS = " \"'.,;:!?"
_WORD = re.compile(r"[^\W_]+(?:\S*[^\W_])?")  # a token with a letter or digit
_NOT_ALNUM_OR_SPACE = bytes(b for b in range(256) if b != 32 and not (b < 128 and chr(b).isalnum()))
_TRIM = re.compile(r"""^[\s"'.,;:!?]+|[\s"'.,;:!?]+$""")


def trimmed(normalized: str) -> str:
    """A normalised quote without surrounding quotation marks, ellipses and edge punctuation."""
    if not normalized or (normalized[0] not in _EDGE and normalized[-1] not in _EDGE):
        return normalized
    # str.strip does what _TRIM does, unless whitespace other than ' ' is left at an edge
    out = normalized.strip(_EDGE_CHARS)
    if out and (out[0].isspace() or out[-1].isspace()):
        return _TRIM.sub("", normalized)
    return out


def count_words(trimmed: str) -> int:
    """The words of a trimmed, normalised quote: its space-separated tokens that hold a letter
    or digit; in scripts written without spaces, a word for every two Chinese or Japanese
    characters and every five Thai characters (``unspaced_words``), rounded down."""
    if trimmed.isascii():  # in C: drop all but letters, digits and spaces, count what is left
        return len(trimmed.encode().translate(None, _NOT_ALNUM_OR_SPACE).split())
    if UNSPACED.search(trimmed) is None:
        return len(_WORD.findall(trimmed))
    return len(_WORD.findall(UNSPACED.sub(" ", trimmed))) + int(unspaced_words(trimmed))


def unspaced_words(normalized: str) -> float:
    """About how many words the characters of scripts without spaces make: two Chinese or
    Japanese characters (a character is about a morpheme), five Thai characters (vowel and tone
    marks included) make a word. The one measure the quote floor and the claim rule share."""
    letters = [c for c in UNSPACED.findall(normalized) if _is_letter(c)]
    thai = sum(1 for c in letters if THAI.match(c) is not None)
    return thai / 5 + (len(letters) - thai) / 2


def _is_letter(ch: str) -> bool:
    """A letter or mark of those scripts (not a digit, a punctuation mark, or the long-vowel
    mark ー, which lengthens the character before it)."""
    return ch != "\u30fc" and unicodedata.category(ch)[0] in "LM"


# -- content words: what a citation must share with its claim ---------------------------------

_TOKEN = re.compile(r"[^\W_]+")
# Scripts written without spaces between words: a run of them is cut into overlapping pieces,
# character pairs for Chinese and Japanese (a character is about a morpheme), runs of three for
# Thai (an alphabet: its pairs are too common to mean anything).
UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
THAI = re.compile("[\u0e00-\u0e7f]")
_SUFFIXES = ("ies", "ings", "ing", "ers", "er", "ed", "s")
_SIBILANT_ES = ("ses", "xes", "zes", "ches", "shes")


# Memos of pure functions, bounded so that hostile text cannot grow them forever (each is
# emptied when full): each word's stem (words of at most 32 characters, no numbers), and the
# content words of each long text (a source sent is read by several checks of
# an answer, and by the next answers that send it again).
_STEMS: dict[str, str] = {}
_CONTENT: dict[str, frozenset[str]] = {}
MEMO_WORDS = 65536
MEMO_WORD_CHARS = 32  # longer tokens (hashes, blobs) are rare and not kept
MEMO_TEXTS = 2048
MEMO_TEXT_CHARS = (200, 8192)  # texts this long are kept: shorter ones are cheap, longer rare


def stem(word: str) -> str:
    """A light stem, the same for the forms of a word a claim and its quote use: ``weeks`` and
    ``week``, ``uploaded`` and ``upload``, ``policies`` and ``policy``, ``employees`` and
    ``employee``, ``entitled`` and ``entitle`` meet; a stem keeps at least three characters.
    Deliberately crude: it only has to make two forms of one word meet, never to tell words
    apart (it errs towards "related", so a claim's own word always meets itself)."""
    if len(word) <= 3 or not word.isascii():
        return word
    known = _STEMS.get(word)
    if known is None:
        known = _stem(word)
        if len(word) <= MEMO_WORD_CHARS and not word.isdigit():  # words, not numbers or blobs
            if len(_STEMS) >= MEMO_WORDS:
                _STEMS.clear()
            _STEMS[word] = known
    return known


def _stem(word: str) -> str:
    base = word
    if word.endswith(_SIBILANT_ES):
        base = word[:-2]
    else:
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                base = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
                break
    if base != word and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeiou":
        base = base[:-1]  # running/run, planned/plan
    elif base.endswith("ck") and base != word:
        base = base[:-1]  # picnicking/picnic
    bare = base.rstrip("e")  # leave/leav, entitle(d)/entitl, employee(s)/employ
    return bare if len(bare) >= 3 else base


def content_words(normalized: str) -> frozenset[str]:
    """The content of a normalised text as light stems: every word of two or more characters
    that is not a function word (``STOPWORDS``), every number and every part of an identifier
    (``job-17``: ``job`` and ``17``); in scripts without spaces, overlapping pieces of two
    characters (Chinese, Japanese) or three (Thai)."""
    low, high = MEMO_TEXT_CHARS
    if not low <= len(normalized) <= high:
        return _content_words(normalized)
    known = _CONTENT.get(normalized)
    if known is None:
        if len(_CONTENT) >= MEMO_TEXTS:
            _CONTENT.clear()
        known = _CONTENT[normalized] = _content_words(normalized)
    return known


def _content_words(normalized: str) -> frozenset[str]:
    out: set[str] = set()
    for token in _TOKEN.findall(normalized):
        if UNSPACED.search(token) is not None:
            size = 3 if THAI.search(token) is not None else 2
            out.update(token[i : i + size] for i in range(max(1, len(token) - size + 1)))
        elif token.isdigit() or (len(token) >= 2 and token not in STOPWORDS):
            out.add(stem(token))
    return frozenset(out)
