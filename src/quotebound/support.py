"""The cheap, always-on support facts: numbers, identifiers and quoted words.

All functions take *normalised* text (see ``normalize.py``), so case, curly quotes and
fullwidth digits are already folded.

- Numbers are whole tokens compared by value: ``1,000`` equals ``1000``, ``2.50`` equals
  ``2.5``, ``07`` equals ``7``; ``14`` is never found inside ``140`` or ``1.4``.
- Identifiers are tokens that mix letters and digits: ``job-17``, ``doc_12``, ``inv-2024-001``,
  ``x86_64``, ``q3``, ``h1b`` (a number with a unit, ``10kg`` or ``2nd``, is a number).
  A claim's identifier must occur as a whole token in the evidence;
  the digits inside an identifier are not also checked as free numbers.
- Quoted words are the phrases a claim puts in double quotation marks.
- Names are the proper names a claim states (``text.names``): each stands in the evidence or
  in the title of a cited source, as a reader allows it (case, diacritics, initials, titles).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .reasons import CitationReason
from .text.names import NameIndex, claim_names, found_as_written, name_swapped
from .text.normalize import normalize
from .text.tokens import DIGITS, Evidence, held_as_written, scan
from .text.words import contains_words

_QUOTED = re.compile(r'"([^"]{1,300})"')
# Full month names only: "may" and "march" as abbreviations would misfire on ordinary verbs.
_MONTHS = re.compile(
    r"\b(?:january|february|april|june|july|august|september|october|november|december)\b"
)


def quoted_phrases(text: str) -> list[str]:
    """Phrases in double quotation marks that carry at least one letter or digit."""
    if '"' not in text:
        return []
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

    numbers: tuple[tuple[str, str], ...]  # (as written, canonical value)
    identifiers: tuple[str, ...]
    quoted: tuple[str, ...]

    @classmethod
    def of(
        cls, normalized_claim: str, ignore: Callable[[], frozenset[str]] | None = None
    ) -> ClaimFacts:
        """The facts of a claim; ``ignore`` lazily gives identifiers that are not facts (ids)."""
        idents, nums = scan(normalized_claim)
        if idents and ignore is not None:
            skip = ignore()
            idents = [i for i in idents if i not in skip]
        return cls(tuple(nums), tuple(idents), tuple(quoted_phrases(normalized_claim)))

    def __bool__(self) -> bool:
        return bool(self.numbers or self.identifiers or self.quoted)


FactKind = Literal["identifier", "number", "quoted_text", "name"]


@dataclass(frozen=True, slots=True)
class Missing:
    """The first kind of fact a claim asserts that its evidence lacks, and which ones."""

    kind: FactKind
    items: tuple[str, ...]


# the reason code of each kind of fact a claim's evidence lacks (``Missing.kind``)
SUPPORT_REASON: dict[FactKind, CitationReason] = {
    "identifier": "identifier_not_in_source",
    "number": "number_not_in_source",
    "quoted_text": "quoted_text_not_in_source",
    "name": "name_not_in_source",
}


_FACT_NAMES: dict[FactKind, str] = {
    "identifier": "identifier",
    "number": "number",
    "quoted_text": "quoted words",
    "name": "name",
}


def fact_label(gap: Missing) -> str:
    """``identifier PROT-X``, ``numbers 14, 16``: the facts a gap names, in words."""
    name = _FACT_NAMES[gap.kind]
    plural = "s" if len(gap.items) > 1 and gap.kind != "quoted_text" else ""
    return f"{name}{plural} {', '.join(gap.items)}"


def claim_gap(
    normalized_claim: str,
    evidence: list[Evidence],
    ignore: Callable[[], frozenset[str]] | None = None,
    tokens: list[str] | None = None,
) -> Missing | None:
    """``missing_facts(ClaimFacts.of(normalized_claim, ignore), evidence)``, then the ordinals
    of the claim (``missing_ordinals``): the same answer, found quickly in the usual case:
    every number of the claim found as written. ``tokens``: ``digit_tokens(normalized_claim)``,
    where the caller has them already."""
    if not DIGITS.isdisjoint(normalized_claim) and not held_as_written(
        normalized_claim, [e.text for e in evidence], tokens
    ):
        gap = missing_facts(ClaimFacts.of(normalized_claim, ignore), evidence)
    elif '"' not in normalized_claim:
        gap = None  # (no quoted words either)
    else:
        gap = missing_facts(ClaimFacts((), (), tuple(quoted_phrases(normalized_claim))), evidence)
    return gap if gap is not None else missing_ordinals(normalized_claim, evidence)


# An ordinal is a number a claim states in words: "the second Governor of Tennessee" of a
# source that says only "Governor of Tennessee from 1905 to 1907" has made up a rank. From
# "second" on ("first" is too often said loosely: "first opened in ...").
_ORDINALS = {
    word: (word, digits)
    for word, digits in zip(
        "second third fourth fifth sixth seventh eighth ninth tenth".split(),
        "2nd 3rd 4th 5th 6th 7th 8th 9th 10th".split(),
        strict=True,
    )
}


def missing_ordinals(normalized_claim: str, evidence: list[Evidence]) -> Missing | None:
    """The ordinals in words of the claim ("second" ... "tenth") that no piece of evidence
    holds, in words or in digits ("2nd"), as a ``number`` gap; None when each is held."""
    missing = []
    for word, (_, digits) in _ORDINALS.items():  # substring tests first: no pattern per claim
        if word not in normalized_claim or not contains_words(normalized_claim, word):
            continue
        if not any(
            contains_words(e.text, word) or contains_words(e.text, digits) for e in evidence
        ):
            missing.append(word)
    return Missing("number", tuple(dict.fromkeys(missing))) if missing else None


def missing_facts(facts: ClaimFacts, evidence: list[Evidence]) -> Missing | None:
    """Identifiers, then numbers, then quoted words that no piece of evidence contains."""
    if not facts:
        return None
    idents = tuple(
        i for i in facts.identifiers if not any(contains_words(e.text, i) for e in evidence)
    )
    if idents:
        return Missing("identifier", idents)
    if facts.numbers:
        nums = tuple(
            value
            for written, value in facts.numbers
            if not any(contains_words(e.text, written) for e in evidence)  # as written: fast
            and not any(value in e.numbers for e in evidence)  # by value: 1,000 = 1000
        )
        if nums:
            return Missing("number", tuple(dict.fromkeys(nums)))
    quoted = tuple(q for q in facts.quoted if not any(contains_words(e.text, q) for e in evidence))
    if quoted:
        return Missing("quoted_text", quoted)
    return None


def missing_names(
    claim: str, evidence: list[Evidence], originals: Callable[[], list[str]]
) -> Missing | None:
    """The proper names of ``claim`` (as written: names are read by their capitals) that the
    evidence names otherwise (``text.names.name_swapped``: "Estadio Maracaná" for "Maracanã
    Stadium", "Robert John Kerr" for "John Robert Kerr"), or None. A name found as written in
    the normalised ``evidence`` is held; for the others, ``originals`` lazily gives the
    evidence as written (the quoted spans, or the cited sources) and the cited sources'
    titles, where the names of the evidence are read."""
    texts = [e.text for e in evidence]

    def found(words: str) -> bool:  # (lower-cased ASCII words are normalised already)
        needle = words if words.isascii() else normalize(words)
        for text in texts:  # noqa: SIM110 (a loop, not any() over a generator: per claim)
            if contains_words(text, needle):
                return True
        return False

    if found_as_written(claim, found):
        return None
    names = claim_names(claim)
    missing = []
    index: NameIndex | None = None
    for name in names:
        if found(name.text.lower()):
            continue
        if index is None:
            index = NameIndex("\n".join(originals()))
        if name_swapped(index, name):
            missing.append(name.text)
    return Missing("name", tuple(missing)) if missing else None
