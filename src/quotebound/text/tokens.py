"""Numbers and identifiers in normalised text: the facts a claim states and its evidence
must hold.

All functions take *normalised* text (``text.normalize``), so case, curly quotes and
fullwidth digits are already folded.

- Numbers are whole tokens compared by value: ``1,000`` equals ``1000``, ``2.50`` equals
  ``2.5``, ``07`` equals ``7``; ``14`` is never found inside ``140`` or ``1.4``.
- Identifiers are tokens that mix letters and digits: ``job-17``, ``doc_12``, ``inv-2024-001``,
  ``x86_64``, ``q3``, ``h1b`` (a number with a unit, ``10kg`` or ``2nd``, is a number).
"""

from __future__ import annotations

import re

from .words import contains_words, content_words

# From a token's first digit to its end; the letters before it are walked back in Python,
# which is far cheaper than a pattern that must try every position of the text.
_FROM_DIGIT = re.compile(r"\d[\w.,-]*")
_FROM_ASCII_DIGIT = re.compile(r"[0-9][\w.,-]*", re.ASCII)  # the same on ASCII text, faster
_TOKEN_CHARS = "_.,-"
_NUMBER_WITH_UNIT = re.compile(r"(\d+(?:[.,]\d+)*)-?[^\W\d_]+")  # 10kg, 2nd, 14-day
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
DIGITS = frozenset("0123456789")


def _value(number: str) -> str:
    """The canonical value of digits with at most one decimal point (no int(): any length)."""
    whole, _, frac = number.partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    return f"{whole}.{frac}" if frac else whole


def _canonical(token: str) -> list[str]:
    """Value-canonical forms of one numeric token as written.

    ``1,000`` is 1000 (thousands), ``1,5`` is 1.5 (a decimal comma: never 1 and 5), ``1,2,3``
    is a list, and dotted runs such as ``1.2.3`` or ``15.01.2026`` give each part.
    """
    if "," in token:
        if _THOUSANDS.fullmatch(token):
            token = token.replace(",", "")
        elif token.count(",") == 1 and "." not in token:
            token = token.replace(",", ".")
    out: list[str] = []
    for part in token.split(","):
        if part.count(".") == 1:
            out.append(_value(part))
        else:
            out.extend(_value(p) for p in part.split(".") if p)
    return out


def _has_letter(token: str) -> bool:
    """Whether a token with a digit has a letter or ``_`` too: an identifier, unless it is a
    number with a unit (``scan``)."""
    return any(c.isalpha() or c == "_" for c in token)


def scan(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Identifiers, and numbers as (written, canonical) pairs, in normalised text, in order.

    A token with a digit is a number (``3,008``; ``5-7`` is two), a number with a unit
    (``10kg``, ``2nd``, ``14-day``: the number counts), or else an identifier (``job-17``).
    """
    if DIGITS.isdisjoint(text):
        return [], []
    idents: list[str] = []
    nums: list[tuple[str, str]] = []
    for token in _tokens(text):
        if token.isdigit():
            nums.append((token, token.lstrip("0") or "0"))  # _value() of a plain digit run
        elif not _has_letter(token):
            nums.extend((p, v) for p in _NUMBER.findall(token) for v in _canonical(p))
        elif (unit := _NUMBER_WITH_UNIT.fullmatch(token)) is not None:
            nums.extend((unit.group(1), v) for v in _canonical(unit.group(1)))
        else:
            idents.append(token)
    return list(dict.fromkeys(idents)), list(dict.fromkeys(nums))


def numbers(text: str) -> frozenset[str]:
    """Canonical number values in normalised text, identifiers excluded."""
    return frozenset(value for _, value in scan(text)[1])


class Evidence:
    """A piece of normalised evidence text; its number values and content words are computed
    on first use."""

    __slots__ = ("_content", "_numbers", "text")

    def __init__(self, normalized: str) -> None:
        self.text = normalized
        self._numbers: frozenset[str] | None = None
        self._content: frozenset[str] | None = None

    @property
    def content(self) -> frozenset[str]:
        """Its content words, light-stemmed (``words.content_words``)."""
        if self._content is None:
            self._content = content_words(self.text)
        return self._content

    @property
    def numbers(self) -> frozenset[str]:
        if self._numbers is None:
            self._numbers = numbers(self.text)
        return self._numbers


def digit_tokens(text: str) -> list[str]:
    """The tokens of normalised ``text`` that hold a digit, in order (``_tokens``): a number
    or identifier a text holds on word bounds shares its content words with the text."""
    return _tokens(text) if not DIGITS.isdisjoint(text) else []


def _tokens(text: str) -> list[str]:
    """The tokens with a digit, in order: each whole run of letters, digits and ``_.,-`` that
    holds a digit, its edge ``.,-`` stripped. Found from each first digit (far cheaper than a
    pattern that must try every position), walking back to the run's start where needed."""
    tokens = []
    for m in (_FROM_ASCII_DIGIT if text.isascii() else _FROM_DIGIT).finditer(text):
        start = m.start()
        if start and text[start - 1] != " ":  # as scan() walks back to the token's start
            end = m.end()
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] in _TOKEN_CHARS):
                start -= 1
            tokens.append(text[start:end].strip(".,-"))
        else:
            tokens.append(m[0].strip(".,-"))
    return tokens


def held_as_written(text: str, held: list[str], tokens: list[str] | None = None) -> bool:
    """True only when ``missing_facts`` finds no identifier or number of ``text`` missing
    from ``held``, because each token ``scan`` reads is a plain number (whose every fact is
    written as the token itself) or an identifier, found as written, on word boundaries, in
    one of the texts. False where that is not so (the full check then decides). ``tokens``:
    ``digit_tokens(text)``, where the caller has them already."""
    for token in _tokens(text) if tokens is None else tokens:
        if not (
            token.isdigit()
            or _NUMBER.fullmatch(token) is not None
            or (_has_letter(token) and _NUMBER_WITH_UNIT.fullmatch(token) is None)  # as scan()
        ):
            return False  # a number with a unit, or a list or range: its facts differ
        for hay in held:  # (a loop, not any() over a generator: this runs per token)
            if contains_words(hay, token):
                break
        else:
            return False
    return True
