"""The cheap, always-on support facts: numbers, identifiers and quoted words.

All functions take *normalised* text (see ``normalize.py``), so case, curly quotes and
fullwidth digits are already folded.

- Numbers are whole tokens compared by value: ``1,000`` equals ``1000``, ``2.50`` equals
  ``2.5``, ``07`` equals ``7``; ``14`` is never found inside ``140`` or ``1.4``.
- Identifiers are tokens that mix letters and digits: ``job-17``, ``doc_12``, ``inv-2024-001``,
  ``x86_64``, ``q3``, ``h1b``. A claim's identifier must occur as a whole token in the evidence;
  the digits inside an identifier are not also checked as free numbers.
- Quoted words are the phrases a claim puts in double quotation marks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from .normalize import contains_words

_IDENT = re.compile(
    r"(?<![\w-])(?:"
    r"(?=[\w-]*[a-z])(?=[\w-]*\d)[a-z0-9]+(?:[-_][a-z0-9]+)+"  # job-17, doc_12, covid-19
    r"|[a-z]+\d[a-z0-9]*"  # q3, h1b, sku123
    r")(?![\w-])"
)
_NUMBER = re.compile(r"(?<![^\W\d_])\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_QUOTED = re.compile(r'"([^"]{1,300})"')
# Full month names only: "may" and "march" as abbreviations would misfire on ordinary verbs.
_MONTHS = re.compile(
    r"\b(?:january|february|april|june|july|august|september|october|november|december)\b"
)


def _canonical(token: str) -> list[str]:
    """Value-canonical forms of one numeric token as written."""
    if _THOUSANDS.fullmatch(token):
        token = token.replace(",", "")
    out: list[str] = []
    for part in token.split(","):
        if part.count(".") == 1:
            try:
                value = Decimal(part).normalize()
            except InvalidOperation:  # pragma: no cover - the regex admits only digits
                continue
            out.append(format(value, "f"))
        else:  # integers, and dotted runs such as 1.2.3 or 15.01.2026: each part on its own
            out.extend(str(int(p)) for p in part.split(".") if p)
    return out


def identifiers(text: str) -> list[str]:
    """Identifier tokens in normalised text, in order of appearance, without repeats."""
    return list(dict.fromkeys(m.group() for m in _IDENT.finditer(text)))


def numbers(text: str) -> frozenset[str]:
    """Canonical number values in normalised text, identifiers excluded."""
    text = _IDENT.sub(" ", text)
    found: set[str] = set()
    for m in _NUMBER.finditer(text):
        found.update(_canonical(m.group()))
    return frozenset(found)


def ordered_numbers(text: str) -> list[str]:
    """Like ``numbers`` but in order of appearance (for messages)."""
    text = _IDENT.sub(" ", text)
    out: list[str] = []
    for m in _NUMBER.finditer(text):
        out.extend(_canonical(m.group()))
    return list(dict.fromkeys(out))


def quoted_phrases(text: str) -> list[str]:
    """Phrases in double quotation marks that carry at least one letter or digit."""
    out = []
    for m in _QUOTED.finditer(text):
        phrase = m.group(1).strip()
        if any(c.isalnum() for c in phrase):
            out.append(phrase)
    return list(dict.fromkeys(out))


def states_number_or_date(text: str) -> bool:
    """Whether a sentence states a quantity or a date (seed 000's test for unmarked claims)."""
    return any(c.isdigit() for c in text) or _MONTHS.search(text.lower()) is not None


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """What a claim asserts that code can check against its evidence."""

    numbers: tuple[str, ...]
    identifiers: tuple[str, ...]
    quoted: tuple[str, ...]

    @classmethod
    def of(
        cls, normalized_claim: str, ignore: Callable[[], frozenset[str]] | None = None
    ) -> ClaimFacts:
        """The facts of a claim; ``ignore`` lazily gives identifiers that are not facts (ids)."""
        idents = identifiers(normalized_claim)
        if idents and ignore is not None:
            skip = ignore()
            idents = [i for i in idents if i not in skip]
        return cls(
            numbers=tuple(ordered_numbers(normalized_claim)),
            identifiers=tuple(idents),
            quoted=tuple(quoted_phrases(normalized_claim)),
        )

    def __bool__(self) -> bool:
        return bool(self.numbers or self.identifiers or self.quoted)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A piece of normalised evidence text with its number values."""

    text: str
    numbers: frozenset[str]

    @classmethod
    def of(cls, normalized: str) -> Evidence:
        return cls(normalized, numbers(normalized))


@dataclass(frozen=True, slots=True)
class Missing:
    """The first kind of fact a claim asserts that its evidence lacks, and which ones."""

    kind: str  # "identifier" | "number" | "quoted_text"
    items: tuple[str, ...]


def missing_facts(facts: ClaimFacts, evidence: list[Evidence]) -> Missing | None:
    """Identifiers, then numbers, then quoted words that no piece of evidence contains."""
    if not facts:
        return None
    idents = tuple(
        i for i in facts.identifiers if not any(contains_words(e.text, i) for e in evidence)
    )
    if idents:
        return Missing("identifier", idents)
    have: set[str] = set()
    for e in evidence:
        have |= e.numbers
    nums = tuple(n for n in facts.numbers if n not in have)
    if nums:
        return Missing("number", nums)
    quoted = tuple(q for q in facts.quoted if not any(contains_words(e.text, q) for e in evidence))
    if quoted:
        return Missing("quoted_text", quoted)
    return None
