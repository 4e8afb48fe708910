"""A near-copy of a quote that changes a word: where a claim follows its quote closely, the
words it substitutes, adds or leaves out that reverse or narrow what the quote says.

A model restating a quote it copied almost word for word can flip it with one word, and a
support tier reading the two side by side passes it (they share nearly every word): "... the
busiest container port" for "the second busiest", "... to view unencrypted content" for
"encrypted", "... between similar viewpoints" for "different viewpoints". This module aligns the
claim's words with the quote's (``difflib``, on the words of both) and names such a change
(``changed_word``):

- **a reversal**: a word replaced by its antonym (``ANTONYMS``: similar / different, more /
  fewer, before / after, ...) or by itself with a negating prefix or without it
  ("unencrypted" / "encrypted", "illegal" / "legal", "non-profit" / "profit"), or a negation
  added or left out ("not", "no", "never", "without");
- **a narrowing**: an ordinal or a hedge of the quote left out where the rest is copied ("the
  second busiest" to "the busiest", "almost all" to "all", "about 40" to "40"), or a count of a
  whole ("13 of the 15 members" to "the members").

Only a claim that follows its quote closely is read (most of its words are the quote's, in
order); anything else is the support tier's to judge. A cheap first look (``may_change``) skips
the alignment where neither text has a word of these kinds that the other lacks.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

# Words whose swap for the other reverses a statement (both directions are read).
_PAIRS = (
    "similar different|same different|more fewer|more less|most least|higher lower|"
    "increase decrease|increased decreased|increases decreases|before after|first last|"
    "largest smallest|biggest smallest|longest shortest|oldest youngest|earliest latest|"
    "maximum minimum|above below|over under|inside outside|include exclude|included excluded|"
    "includes excludes|allowed prohibited|allowed forbidden|permitted prohibited|always never|"
    "all none|accept reject|accepted rejected|win lose|won lost|rise fall|rose fell|"
    "gain loss|open closed|opened closed|north south|east west|true false|positive negative|"
    "freezes boils|freeze boil|froze boiled|strong weak|stronger weaker|heavier lighter|"
    "cheaper dearer|richer poorer|success failure|succeeded failed|internal external|"
    "import export|imports exports|maternal paternal|male female|men women|upper lower"
)
ANTONYMS: frozenset[tuple[str, str]] = frozenset(
    pair for a, b in (p.split() for p in _PAIRS.split("|")) for pair in ((a, b), (b, a))
)
_ANTONYM_WORDS = frozenset(w for pair in ANTONYMS for w in pair)
NEGATIONS = frozenset("not no never none nothing nobody neither nor without cannot non".split())
_PREFIXES = ("non-", "non", "un", "in", "im", "il", "ir", "dis")
ORDINALS = frozenset(
    "second third fourth fifth sixth seventh eighth ninth tenth 2nd 3rd 4th 5th 6th 7th 8th "
    "9th 10th".split()
)
HEDGES = frozenset(
    "almost nearly approximately roughly some partly partially mostly most many several few "
    "occasionally sometimes often usually generally typically possibly probably".split()
)
# Hedges only before a number ("about 40", "around 1900"): elsewhere a preposition.
_NUMBER_HEDGES = frozenset("about around over under".split())
# What a claim may leave out of its quote and so narrow it; each word's antonyms.
_LOSABLE = ORDINALS | HEDGES | _NUMBER_HEDGES
_PARTNERS: dict[str, frozenset[str]] = {
    w: frozenset(b for a, b in ANTONYMS if a == w) for w in _ANTONYM_WORDS
}
# A claim follows its quote closely when this share of its words, and this many, are the
# quote's, in order.
CLOSE_SHARE = 0.6
CLOSE_WORDS = 4
# A claim longer than this many times its quote (and 40 characters) is no near-copy of it: it
# says more than the quote does (the support tier reads it). Checked before the quote's words
# are read.
NEAR_LENGTH = 2
# A word left out narrows the quote when it goes with at most this many words around it (more
# is a clause left out: "without any human labels ..." is not a negation dropped).
_SHORT = 3


def _negation(word: str) -> bool:
    """A negation: "not", "no", "never", ... ("n't" is read as "not": ``words``)."""
    return word in NEGATIONS


def _prefixed(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with a negating prefix ("encrypted", "unencrypted"; "evasive",
    "non-evasive")."""
    return len(a) >= 4 and any(b == p + a or b == p + "-" + a for p in _PREFIXES)


class Words:
    """A normalised text's words as ``changed_word`` reads them (``words``), with their set
    and counts, each read when first asked for: once for a claim, whatever the number of its
    quotes, and not at all where a cheaper look decides."""

    __slots__ = ("_counts", "_joined", "_list", "_prefixed", "_set", "chars", "text")

    def __init__(self, normalized: str) -> None:
        self.text = normalized
        self.chars = len(normalized)
        self._list: list[str] | None = None
        self._joined: str | None = None
        self._set: frozenset[str] | None = None
        self._counts: Counter[str] | None = None
        self._prefixed: frozenset[str] | None = None

    @property
    def list(self) -> list[str]:
        if self._list is None:
            self._list = words(self.text)
        return self._list

    @property
    def joined(self) -> str:
        """Its words with one space around each: a text holds another's words in order,
        whole, where this holds that one's ``joined``."""
        if self._joined is None:
            self._joined = f" {' '.join(self.list)} "
        return self._joined

    @property
    def set(self) -> frozenset[str]:
        if self._set is None:
            self._set = frozenset(self.list)
        return self._set

    @property
    def prefixed(self) -> frozenset[str]:
        """Its words that start as a negating prefix does ("un", "dis", "non", ...)."""
        if self._prefixed is None:
            self._prefixed = frozenset(w for w in self.set if w[:2] in _PREFIX_STARTS)
        return self._prefixed

    @property
    def counts(self) -> Counter[str]:
        if self._counts is None:
            self._counts = Counter(self.list)
        return self._counts


def may_change(claim: Words, quote: Words) -> bool:
    """The cheap first look: whether the claim may follow the quote closely (enough of its
    words are the quote's: an upper bound on what the alignment can match) and a change of the
    kinds read here is possible: a word the claim adds with its antonym among the words it
    lacks, or with a negating prefix on one of those (or without it); a negation added or left
    out; an ordinal or a hedge of the quote left out. False: no such change can be found. Set
    operations only, no loop over every word."""
    shared = claim.set & quote.set
    least = max(CLOSE_WORDS, CLOSE_SHARE * len(claim.list))
    if len(shared) + len(claim.list) - len(claim.set) < least:
        return False  # (even with every repeated word shared: set sizes, no loop)
    counts = claim.counts
    covered = sum(counts[w] for w in shared)
    if covered < least:
        return False
    added, lost = claim.set - quote.set, quote.set - claim.set
    if not _LOSABLE.isdisjoint(lost) or not NEGATIONS.isdisjoint(lost | added):
        return True
    for w in added & _ANTONYM_WORDS:
        if not _PARTNERS[w].isdisjoint(lost):
            return True
    return _unprefixed_in(added & claim.prefixed, lost) or _unprefixed_in(
        lost & quote.prefixed, added
    )


_PREFIX_STARTS = frozenset(p[:2] for p in _PREFIXES)


def _unprefixed_in(prefixed: frozenset[str], plain: frozenset[str]) -> bool:
    """Whether a word of ``prefixed`` is one of ``plain`` with a negating prefix."""
    for w in prefixed:
        if plain:
            for p in _PREFIXES:
                if w.startswith(p) and w[len(p) :].lstrip("-") in plain:
                    return True
    return False


# An ordinal in digits is the same word as in letters ("2nd", "second").
_ORDINAL_WORDS = dict(
    zip(
        "2nd 3rd 4th 5th 6th 7th 8th 9th 10th".split(),
        "second third fourth fifth sixth seventh eighth ninth tenth".split(),
        strict=True,
    )
)


DIGITS = frozenset("0123456789")
_ORDINAL_DIGIT_WORDS = frozenset(_ORDINAL_WORDS)
# Punctuation, apostrophes and hyphens to spaces: then a split is the words, at C speed ("don't"
# is read "do not" first; "non-evasive" is "non evasive", and "non" is a negation).
_APART = str.maketrans(
    dict.fromkeys([chr(c) for c in range(32)], " ")  # control characters (a PDF's hyphen: \x02)
    | dict.fromkeys(
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u2014\u2013\u2026\u00ab\u00bb\u201c\u201d\u2018\u2019",
        " ",
    )
)


def words(normalized: str) -> list[str]:
    """The words of a normalised text, as ``changed_word`` reads them: split at punctuation,
    apostrophes and hyphens, "n't" read as "not", an ordinal in digits as the word ("2nd" is
    "second")."""
    if "n't" in normalized:
        normalized = normalized.replace("n't", " not")
    found = normalized.translate(_APART).split()
    if not DIGITS.isdisjoint(normalized) and not _ORDINAL_DIGIT_WORDS.isdisjoint(found):
        return [_ORDINAL_WORDS.get(w, w) for w in found]
    return found


def changed_word(claim: str | Words, quote: str) -> str | None:
    """Where the normalised ``claim`` (or its ``Words``, read once for all of its quotes)
    follows the normalised ``quote`` closely, the change that reverses or narrows it, in words
    ("'similar' for the quote's 'different'", "the quote's 'second' left out"); None where
    there is none, or where the claim does not follow it."""
    said = Words(claim) if isinstance(claim, str) else claim
    if said.chars > NEAR_LENGTH * len(quote) + 40:
        return None  # much longer than its quote: it says more than it, no near-copy of it
    if quote.strip(" .,;:!?\"'") in said.text:
        return None  # the whole quote, word for word: nothing of it changed or left out
    quoted = Words(quote)
    if quoted.joined in said.joined:
        return None  # the same, punctuation and quotation marks aside
    mine, theirs = said.list, quoted.list
    if not mine or not theirs or not may_change(said, quoted):
        return None
    matcher = difflib.SequenceMatcher(None, theirs, mine, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    same = sum(b.size for b in blocks)
    if same < CLOSE_WORDS or same < CLOSE_SHARE * len(mine):
        return None  # not a near-copy: the support tier's to judge
    first_q, last_q = blocks[0].a, blocks[-1].a + blocks[-1].size
    # a negation said otherwise ("cannot" for "not") is no change: only a count that differs
    flipped = sum(map(_negation, mine)) != sum(map(_negation, theirs))
    for op, q1, q2, c1, c2 in matcher.get_opcodes():
        if op == "equal":
            continue
        inside = (first_q <= q1 and q2 <= last_q) or q1 == last_q or q2 == first_q
        lost, added = theirs[q1:q2], mine[c1:c2]
        if "".join(lost).replace("-", "") == "".join(added).replace("-", ""):
            continue  # the same words, hyphenated otherwise ("non evasive", "non-evasive")
        if len(lost) <= 2 and len(added) <= 2:  # a word or two put for a word or two
            for a in lost:
                for b in added:
                    if a.replace("-", "") == b.replace("-", ""):
                        continue  # "non-evasive" for "nonevasive"
                    if (a, b) in ANTONYMS or _prefixed(a, b) or _prefixed(b, a):
                        return f"'{b}' for the quote's '{a}'"
        for b in added:
            if flipped and _negation(b) and b not in theirs:
                return f"'{b}', which the quote does not say"
        if not inside or len(lost) > _SHORT:
            continue  # the claim leaves out what stands around what it copies, or a clause
        for k, a in enumerate(lost):
            if a in mine:
                continue
            if (flipped and _negation(a)) or a in ORDINALS or a in HEDGES:
                return f"the quote's '{a}' left out"
            after = theirs[q1 + k + 1] if q1 + k + 1 < len(theirs) else ""
            if a in _NUMBER_HEDGES and after[:1].isdigit():
                return f"the quote's '{a}' left out"
        if len(lost) >= 2 and lost[-1] == "of" and lost[-2].isdigit():
            return f"the quote's '{lost[-2]} of' left out"
    return None


# An approximation before a number: stated bare, the number says more than the quote does
# ("90,790 tonnes" for "about 90,790 tonnes"). Not a bound ("up to $1000", "more than 40",
# "under 18"): a limit stated as the number ("a limit of $1000") can be what the quote says.
# Written once: the pattern and the quick look of ``approximation_left_out`` are made of them
# (a longer word before its prefix: "approximately", "approx.", "approx").
_APPROXIMATE_WORDS = (
    "about",
    "around",
    "approximately",
    "approx.",
    "approx",
    "roughly",
    "nearly",
    "almost",
    "circa",
    "some",
    "an estimated",
    "estimated",
    "~",
)
_APPROXIMATES = "(?:" + "|".join(map(re.escape, _APPROXIMATE_WORDS)) + ")"
_APPROXIMATION = re.compile(_APPROXIMATES + r"\s*[$\u20ac\u00a3]?\s*$")
_ANY_APPROXIMATION = re.compile(r"(?<!\w)" + _APPROXIMATES + r"\s*[$\u20ac\u00a3]?\s*\d")
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")
_BEFORE = 20  # the characters read before a number for its approximation


def approximation_left_out(claim: str, quote: str) -> str | None:
    """The number the normalised ``claim`` states bare that the normalised ``quote`` gives only
    as an approximation, every time it gives it ("90,790 tonnes of living plants ..." quoting
    "... can contain about 90,790 tonnes of living plants"), named as what was left out; None
    where there is none. Any claim, not only a near-copy: the number is what the two share.
    One search of the quote decides for most (no approximation before a number in it)."""
    if not any(word in quote for word in _APPROXIMATE_WORDS):
        return None  # (substring tests at C speed: most quotes stop here)
    if _ANY_APPROXIMATION.search(quote) is None:
        return None
    given: dict[str, list[str | None]] = {}  # each number of the quote: its approximations
    for found in _NUMBER.finditer(quote):
        hedge = _APPROXIMATION.search(quote, max(0, found.start() - _BEFORE), found.start())
        given.setdefault(found.group(), []).append(
            None if hedge is None else hedge.group().strip(" $\u20ac\u00a3")
        )
    for found in _NUMBER.finditer(claim):
        hedges = given.get(found.group())
        if not hedges or None in hedges:
            continue  # not in the quote, or given there bare too
        if _APPROXIMATION.search(claim, max(0, found.start() - _BEFORE), found.start()):
            continue
        return f"the quote's '{hedges[0]}' before {found.group()} left out"
    return None
