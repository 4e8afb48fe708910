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

_WORDS = re.compile(r"[^\W_][\w'\-]*")

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
NEGATIONS = frozenset("not no never none nothing nobody neither nor without cannot".split())
_NEGATED_VERBS = re.compile(r"^\w+n't$")
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
_READ = _ANTONYM_WORDS | NEGATIONS | ORDINALS | HEDGES | _NUMBER_HEDGES
# A claim follows its quote closely when this share of its words, and this many, are the
# quote's, in order.
CLOSE_SHARE = 0.6
CLOSE_WORDS = 4
# A word left out narrows the quote when it goes with at most this many words around it (more
# is a clause left out: "without any human labels ..." is not a negation dropped).
_SHORT = 3


def _negation(word: str) -> bool:
    return word in NEGATIONS or _NEGATED_VERBS.match(word) is not None


def _prefixed(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with a negating prefix ("encrypted", "unencrypted"; "evasive",
    "non-evasive")."""
    return len(a) >= 4 and any(b == p + a or b == p + "-" + a for p in _PREFIXES)


def may_change(claim: list[str], quote: list[str]) -> bool:
    """The cheap first look: whether the claim may follow the quote closely (enough of its
    words are the quote's: an upper bound on what the alignment can match) and either list
    has a word of the kinds read here (antonyms, negations, ordinals, hedges, or a word with a
    negating prefix whose rest the other has) that the other lacks. False: no change of these
    kinds can be found."""
    theirs = set(quote)
    covered = sum(1 for w in claim if w in theirs)
    if covered < CLOSE_WORDS or covered < CLOSE_SHARE * len(claim):
        return False
    mine = set(claim)
    for w in mine ^ theirs:
        if w in _READ or _NEGATED_VERBS.match(w):
            return True
        other = theirs if w in mine else mine
        for p in _PREFIXES:
            if w.startswith(p) and w[len(p) :].lstrip("-") in other:
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


def words(normalized: str) -> list[str]:
    """The words of a normalised text, as ``changed_word`` reads them (an ordinal in digits as
    the word: "2nd" is "second")."""
    found = _WORDS.findall(normalized)
    if any(w in _ORDINAL_WORDS for w in found):
        return [_ORDINAL_WORDS.get(w, w) for w in found]
    return found


def changed_word(claim: str | list[str], quote: str) -> str | None:
    """Where the normalised ``claim`` (or its ``words``, read once for all of its quotes)
    follows the normalised ``quote`` closely, the change that reverses or narrows it, in words
    ("'similar' for the quote's 'different'", "the quote's 'second' left out"); None where
    there is none, or where the claim does not follow it."""
    mine = words(claim) if isinstance(claim, str) else claim
    theirs = words(quote)
    if not mine or not theirs or not may_change(mine, theirs):
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
