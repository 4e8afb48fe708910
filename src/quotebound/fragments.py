"""The writing rules: whether a claim is a statement a reader can take alone.

``fragment`` says why a text is not one (a question, the template's placeholder, a piece of a
sentence, too few words, no content word, a heading, a pointer at text that is not there, or a
sentence leaning on the one before it); ``lean_on_kept`` reads a leaning claim with the claims
kept before it; ``answer_fragments`` reads the claims an answer serves. ``verify`` makes them
notes on a kept claim, or (``Policy.strict``, as ``ask`` verifies its own model) drops the
claim as ``claim_fragment``; the extractive fallback never chooses a fragment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from .sources import WorkingSet
from .text.display import shown
from .text.normalize import normalize
from .text.sentences import reads_as_heading, sentence_spans
from .text.words import (
    EDGE_PUNCTUATION,
    STOPWORDS,
    UNSPACED,
    WORD_TOKEN,
    content_words,
    unspaced_words,
)
from .verdict import Claim


def refused(n: int, text: str, claim: Claim, why: str) -> Claim:
    message = (
        f"claim {n} ({shown(text)}) is {why}: write it as one complete sentence that says "
        "what it is about"
    )
    return replace(claim, kept=False, reason="claim_fragment", message=message)


def lean_on_kept(
    claims: tuple[Claim, ...],
    strict: bool = True,
    ws: WorkingSet | None = None,
    question: str | None = None,
) -> tuple[Claim, ...]:
    """``claims`` with each kept one that leans on the sentence before it (``_leans_back``: it
    opens with "This", "These", "In addition", "It", ...) dropped as ``claim_fragment`` unless
    a claim kept before it in the answer says what it stands for ("Northwind Standard covers
    in-network providers only." then "These providers have agreed to ..."); a leaning claim
    whose citations failed too is told so as well (``claim_fragment``: the repair names it).
    ``verify`` settles the claims with it, and the entailment tier again after it drops some
    (re-anchoring needs no second pass: it keeps only claims that are not fragments).

    With ``ws`` (``verify`` under strict, and the tier), what it leans on must be what its
    source says before it: a leaning claim whose every valid citation quotes a sentence with a
    sentence before it in its source (``_says_before``), in a source no claim kept before it
    cites, leans on a sentence the answer does not give ("These organizations ... help
    families" copied from the middle of one passage, after a claim citing another passage),
    and is dropped too. A quote that opens its source (a chunk: what comes before it is in
    another) may lean on any kept claim before it. With ``question`` (``ask``, strict), a claim
    with "they" as its subject leans too unless the question says "they" (``leans_unasked``).

    Not ``strict`` (``Policy.strict`` off): a leaning claim is read with the sentence before
    it in the answer, whatever became of that one, and only the answer's first claim, which has
    none, gets a note when it is kept."""
    if not strict:
        if claims and claims[0].kept and _leans_back(claims[0].text.strip()):
            first = claims[0]
            if LEANS_BACK not in first.notes:
                return (replace(first, notes=(*first.notes, LEANS_BACK)), *claims[1:])
        return claims
    out: list[Claim] = []
    after_kept = False  # a claim before this one is kept
    cited: set[str] = set()  # the sources the claims kept before this one cite
    for n, claim in enumerate(claims, 1):
        # (not a fragment already: ``fragment``'s other rules passed, only the leaning is left)
        why = (
            _leaning(claim.text.strip(), question)
            if claim.reason not in ("claim_fragment", "restates_question")
            and (not after_kept or (ws is not None and claim.kept))
            else None
        )
        if why is not None:
            if not after_kept:  # (its citations named too)
                claim = refused(n, claim.text, claim, why)
            elif ws is not None and _leans_elsewhere(claim, ws, cited):
                claim = refused(n, claim.text, claim, LEANS_ELSEWHERE)
        if claim.kept:
            after_kept = True
            cited.update(c.source for c in claim.citations if c.valid and c.source)
        out.append(claim)
    return tuple(out)


LEANS_UNASKED = (
    'a sentence that opens with "they", which the question does not say (it stands for what '
    "was named before it)"
)


def _leaning(stripped: str, question: str | None) -> str | None:
    """Why ``stripped`` leans on what came before it (``LEANS_BACK``; with ``question``, also
    ``LEANS_UNASKED``: ``leans_unasked``), or None."""
    if _leans_back(stripped):
        return LEANS_BACK
    if question is not None and leans_unasked(stripped, question):
        return LEANS_UNASKED
    return None


LEANS_ELSEWHERE = (
    "a sentence that leans on the one before it in its source, which the answer does not "
    "give (it quotes the middle of a source that no kept claim before it cites)"
)


def _leans_elsewhere(claim: Claim, ws: WorkingSet, cited: set[str]) -> bool:
    """Whether every valid citation of the leaning ``claim`` quotes a sentence with a sentence
    before it in its own source (``_says_before``), a source no claim kept before it cites. A
    citation of a whole source (no span: a vendor's document citation) holds what comes before
    too: never."""
    valid = [(c.source, c.span) for c in claim.citations if c.valid and c.source]
    return bool(valid) and all(
        span is not None and source not in cited and _says_before(ws, source, span[0])
        for source, span in valid
        if source is not None
    )


BEFORE_WINDOW = 600  # characters before a quote's sentence read for a sentence before it


def _says_before(ws: WorkingSet, source_id: str, start: int) -> bool:
    """Whether the source ``source_id`` has a sentence before the one that holds ``start``
    (a quote may open mid-sentence: "these organizations help ..." of "According to the
    report, these organizations help ..." has none), read in the ``BEFORE_WINDOW`` characters
    before it; a heading, or a line of fewer than ``MIN_CLAIM_WORDS`` words, is no such
    sentence (a passage's title line says nothing a leaning word could stand for)."""
    source = ws.get(source_id)
    if source is None or start <= 0:
        return False
    text = source.text
    start = min(start, len(text))
    window = max(0, start - BEFORE_WINDOW)
    spans = sentence_spans(text, window, start + 1)  # the last: the quote's own sentence
    return any(
        len(text[a:b].split()) >= MIN_CLAIM_WORDS and not reads_as_heading(text[a:b])
        for a, b in spans[:-1]
    )


def answer_fragments(texts: Sequence[str]) -> list[str | None]:
    """For the claims an answer serves, in order, why each is not a claim a reader can take
    (``fragment``), None for each that is; a claim leaning on the one before it is read with a
    claim before it, as ``lean_on_kept`` reads it."""
    out: list[str | None] = []
    for i, text in enumerate(texts):
        why = fragment(text)
        out.append(None if why == LEANS_BACK and i else why)
    return out


MIN_CLAIM_WORDS = 3
_PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$|^\s*one claim\s*$", re.IGNORECASE)


def fragment(text: str, normalized: str | None = None) -> str | None:
    """Why ``text`` is not a claim a reader can take alone, or None when it is one: a question
    (it ends with ``?``), the answer template's placeholder (``<...>``), a piece of a sentence
    (it opens with a lower-case conjunction, preposition, article or "is": "for any costs the
    plan does not cover."), fewer than ``MIN_CLAIM_WORDS`` words (in scripts without spaces,
    counted by characters: see ``_sentence_words``), no content word but numbers ("It is
    14."), a heading (``reads_as_heading``, and with a colon only after a heading in
    capitals: "Balance Billing Protection", "## Leave"), a sentence with a gap where words
    were lost (``_has_gap``: "The purpose of the dog is considered a ."), or, those rules
    passed, a sentence that leans on the one before it (``_leans_back``: "This will help you
    to ensure ..."; ``lean_on_kept`` reads it with the claims before it). Deterministic and
    cheap; it does not parse grammar, so a long noun phrase passes: the entailment tier and
    the reader see those. ``normalized``: ``normalize(text)``, where the caller has it
    already."""
    stripped = text.strip()
    if _PLACEHOLDER.match(stripped):
        return "the answer template's placeholder"
    if stripped.rstrip(" \"'»”)").endswith(("?", "？")):
        return "a question, not a statement"
    if _starts_mid_sentence(stripped):
        return _MID_SENTENCE
    if _points_elsewhere(stripped):
        return _POINTER
    if _has_gap(stripped):
        return _WITH_A_GAP
    why = _word_rules(stripped, normalized)
    return why if why is not None or not _leans_back(stripped) else LEANS_BACK


def _word_rules(stripped: str, normalized: str | None = None) -> str | None:
    """``fragment``'s rules on the words: too few, none but numbers, a heading."""
    plain = stripped.isascii() and "&" not in stripped  # normalize() would only lower-case it
    if normalized is None:
        normalized = stripped.lower() if plain else normalize(stripped)
    unspaced = not plain and UNSPACED.search(normalized) is not None
    if not unspaced and _says_a_content_word(normalized):
        return _HEADING if _heading(stripped) else None
    tokens = WORD_TOKEN.findall(normalized)
    if (_sentence_words(normalized) if unspaced else len(tokens)) < MIN_CLAIM_WORDS:
        return "a fragment"
    if unspaced:  # a piece of a script without spaces is a content word, never a number
        return _HEADING if _heading(stripped) else None
    for token in tokens:  # a content word that is not a number (``content_words``' rule)
        if len(token) >= 2 and not token.isdigit() and token not in STOPWORDS:
            return _HEADING if _heading(stripped) else None
    return _NAMES_NOTHING


def _says_a_content_word(normalized: str) -> bool:
    """The usual case of ``_word_rules``, without cutting the text into tokens: at least
    ``MIN_CLAIM_WORDS`` space-separated words hold a letter or digit (each holds a token, so
    there are that many tokens at least), and one of them, edge punctuation aside, is a whole
    run of letters, two or more, and no function word (a content word that is not a number).
    False says nothing: the tokens then decide."""
    words = normalized.split()
    if len(words) < MIN_CLAIM_WORDS:
        return False
    content = False
    counted = 0
    for word in words:
        if (
            counted < MIN_CLAIM_WORDS
            and not word.isalnum()
            and not any(ch.isalnum() for ch in word)
        ):
            continue
        counted += 1
        if not content:
            core = word.strip(EDGE_PUNCTUATION)
            content = len(core) >= 2 and core.isalpha() and core not in STOPWORDS
        if content and counted >= MIN_CLAIM_WORDS:
            return True
    return False


_NAMES_NOTHING = "a fragment that names nothing (numbers and function words only)"
_MID_SENTENCE = "a piece of a sentence (it starts mid-sentence)"
# Words that, written in lower case at the very start, continue a sentence begun elsewhere
# ("for any additional costs that the plan does not cover.", cut at a PDF's page break):
# conjunctions, prepositions, relatives, articles and the verb "to be"; never a name's particle
# ("van Gogh painted ...", "de Gaulle ...").
_CONTINUING = frozenset(
    "and or but nor for of to in on at by with from into than as which that whom whose who if "
    "so the a an its their is are was were be".split()
)
_FIRST_WORD = re.compile(r"[^\W\d_]+")


def _starts_mid_sentence(stripped: str) -> bool:
    """Whether ``stripped`` opens with a lower-case word that continues a sentence."""
    first = _FIRST_WORD.match(stripped)
    return first is not None and first.group(0) in _CONTINUING


LEANS_BACK = (
    "a sentence that leans on the one before it (it opens with a word that stands for "
    'something said there: "this", "these", "it", "also", "in addition", ...)'
)
_POINTER = (
    'a pointer to text that is not there (a line ending with a colon, "the following ...", '
    '"... may refer to"), not a statement'
)
# A line that introduces what follows it, or a disambiguation page's line: "Crimean campaign
# can refer to:", "The following lists the number one best-selling singles ...", "Benefits
# include:". (A heading with a colon inside, "Eligibility: All Full-Time Employees", states a
# value and passes: the colon must end the line.)
_FOLLOWING = re.compile(
    r"the following (?:is|are|lists?|table|tables|list|shows?|describes?|gives?|provides?)\b"
)
_REFERS = re.compile(r"\b(?:may|can|might) (?:also )?refer to\b")


def _points_elsewhere(stripped: str) -> bool:
    """Whether ``stripped`` is a lead-in (it ends with a colon, closing marks aside), a
    disambiguation line ("... may refer to") or a pointer to a list ("The following lists
    ..."). String tests first: the patterns run only where they can match."""
    if stripped.rstrip(" \"'\u201d)*_").endswith(":"):
        return True
    if "refer to" in stripped and _REFERS.search(stripped.lower()) is not None:
        return True
    opening = stripped[:40].lstrip("\"'\u201c(*_ ").lower()
    return opening.startswith("the following ") and _FOLLOWING.match(opening) is not None


_WITH_A_GAP = (
    "a sentence with a gap where words were lost (an empty quotation, punctuation with nothing "
    'between, a sentence ending on "a" or "the")'
)
# Text lost where a source was extracted, copied into a claim: Wikipedia's pronunciations and
# titles taken out ('Gouda ( , ; , "cheese from Gouda") is ...', '"Bridget Jones's Diary"
# (2001), "" (2004) ...'), a value that did not survive ('The purpose of the dog is considered
# a .'). Prose does not write them: an empty pair of quotation marks standing alone, a bracket
# opened on a space, or a comma, followed at once by a comma or semicolon ("( ,", ", ;"), a pair
# of brackets with only spaces between ("( )"), or an article before a full stop ("considered
# a .", "known as the."). Code is no gap: a call or an empty list ("flush()", "main()", "[]",
# "for(;;)", 'ARGS=""', 'print("")', "![](a.png)") and any text with a code span (backticks)
# pass; so do "(.NET)", "[...]", "the letters a, b and c", tokenised text such as CLAPNQ's ("or ,
# in the case of", "( ... )") and a French "en a." (a verb, not an article).
# Each pattern opens with its mark, so that ``re`` finds the mark first and tries the rest only
# there; each runs only when its mark is in the text (``_has_gap``).
# (A look behind comes after the mark it reads, never first: a pattern that opens with one is
# tried at every character, ten times slower.)
_GAPS = (
    ('"', re.compile(r'""(?<![\w=(\[]"")(?![\w)\]])')),
    ("(", re.compile(r"\((?:(?<![\w\]!]\()\s*[,;]|\s+\))")),
    ("[", re.compile(r"\[(?:(?<![\w\]!]\[)\s*[,;]|\s+\])")),
    (";", re.compile(r";(?<=[\w\s];)\s*[,;]")),  # (not "for(;;)")
    (",", re.compile(r",\s?[,;]")),
    ("\u201c", re.compile(r"\u201c\s*\u201d")),
)
_ARTICLE_STOP = re.compile(r"\s(?:a\s|an\s?|the\s?)[.;:!][\"'\u201d)\]]*$")


def _has_gap(stripped: str) -> bool:
    """Whether ``stripped`` has a gap where words were lost (``_GAPS``, or an article before
    its closing stop, read in its last characters); never in a text with a code span."""
    if "`" in stripped:
        return False
    for mark, pattern in _GAPS:
        if mark in stripped and pattern.search(stripped) is not None:
            return True
    return _ARTICLE_STOP.search(stripped[-12:]) is not None


# Demonstratives opening a claim stand for what a sentence before it said: "This will help you
# to ensure ...", "That's why our plan provides ...", "These sources do not speak of ...".
# Followed by a capitalised word or "'70s" they start a title ("This Is Us was created by
# ...", "That '70s Show aired ..."). A plural personal pronoun is left alone: in an answer it
# mostly stands for what the question named ("They shoot Guy's Grocery Games inside Field's
# Market ..." for "where do they shoot Guy's Grocery Games"; where the question is known,
# ``leans_unasked`` reads it); "It" is not (``_IT``). Read
# after any opening quotes, brackets and bullets; matched as written, capitalised.
_LEADING = "\"'\u201c\u2018\u201e\u2039\u00ab([*_> \t\u00a0\u2022\u00b7\u25aa\u25e6\u2023\u2219"
# A list item's mark at the start of a claim copied from a list: "• ", "- ", "3. ", "(b) " (the
# pipeline drops it from the served text: ``pipeline.served_text``).
LIST_MARK = re.compile(r"\s*(?:[•·▪◦‣∙*\-–—]|\(?(?:\d{1,2}|[a-z])[.)])\s+")
_DEMONSTRATIVE = re.compile(
    r"(This|That|These|Those)(?:['\u2019][a-z]{1,2})?(?:\*\*|__)?(?:\s+(\S\S?)|\s*$|[,.;:!?])"
)


# Openings that stand for what a sentence before said, besides the demonstratives: a
# connective ("In addition, Su Mingcheng also broke the news ...", "However, ..."), and "It",
# "He" or "She" as a subject ("It has a length of 365 days ...", "She was the first ever winner
# of this title"), unless it opens "It is important to ..." (an expletive: what follows says
# what it is about) or a title ("It Follows was ...").
_CONNECTIVE = re.compile(
    r"(?:In addition|Additionally|Also(?! known)|Furthermore|Moreover|Besides|However|"
    r"Likewise|Similarly|Therefore|Thus(?! far)|Hence|Consequently|As a result|Nevertheless|"
    r"Nonetheless|Meanwhile|Otherwise|Instead)\b(?!-)"
)
_EXPLETIVE = (  # what follows "it" as an expletive: "is important to", "was said that"
    r"(?:is|was|'s|\u2019s|will be|would be|may be|can be|has been|had been)\s+"
    r"(?:\w+\s+){0,2}?(?:to|that|for|whether)\b"
)
_IT = re.compile(
    rf"(?:He|She)\s+(?=[a-z])(?!{_EXPLETIVE})"
    # "It takes 5 to 7 days to ...", "It seems that ..." say what "it" is after it
    rf"|It\s+(?=[a-z])(?!{_EXPLETIVE}|(?:takes|took|seems|seemed|appears|appeared)\s+"
    r"(?:\S+\s+){0,3}?(?:to|that)\b)"
    r"|It['\u2019]s\s+(?=[a-z])(?!(?:\w+\s+){0,2}?(?:that|whether)\b)"  # "It's said that"
)


# The first words of those openings: the patterns run only after one of them.
_OPENING_WORDS = frozenset(
    "In Additionally Also Furthermore Moreover Besides However Likewise Similarly Therefore "
    "Thus Hence Consequently As Nevertheless Nonetheless Meanwhile Otherwise Instead It It's "
    "It\u2019s He She".split()
)


# An opening phrase holding a demonstrative after "of" that stands alone stands for what was
# said before, as one at the start does: "One result of this was a campaign of attacks ...",
# "Because of this, the ...", "Some of these are ...", "The first of those was built ...", "Of
# these, three were ...": within its first five words, the demonstrative followed by a comma
# or a verb. Not one before a noun ("The capital of this country is ...", "Much of this Act
# ...": the noun says what it is) nor one a clause after it defines ("Most of those who died
# ...", "Many of those surveyed ...").
_OF_DEMONSTRATIVE = re.compile(
    r"(?:[\w'\u2019-]+,?\s+){0,4}?[Oo]f\s+(?:this|these|those)"
    r"(?=\s*[,;:]|\s+(?:is|was|are|were|has|have|had|can|could|will|would|may|might|must|"
    r"should|do|does|did|became|becomes|include|includes|included|led|leads|remain|remains|"
    r"remained|seem|seems|seemed)\b)"
)


def _opening(stripped: str) -> str:
    """``stripped`` from its first word: opening quotation marks, brackets, bullets and a list
    mark ("3. ", "(b) ") read through."""
    opening = stripped.lstrip(_LEADING)
    mark = LIST_MARK.match(opening)
    if mark:
        opening = opening[mark.end() :].lstrip(_LEADING)
    return opening


def _leans_back(stripped: str) -> bool:
    """Whether ``stripped`` opens (after quotation marks, brackets and a list mark) with a
    word standing for something said before it: a demonstrative ("This", "That", "These",
    "Those", then anything but a capitalised word or "'70s": those start a title), a
    connective ("In addition", "Also", "However", ...: ``_CONNECTIVE``), "It", "He" or "She"
    as a subject (``_IT``: "She was the first ever winner of this title ..."), or a
    demonstrative after "of" in its first words (``_OF_DEMONSTRATIVE``: "One result of this
    was ...")."""
    opening = _opening(stripped)
    first = opening[:14].split(" ", 1)[0].rstrip(",")
    if first in _OPENING_WORDS and (
        _CONNECTIVE.match(opening) is not None or _IT.match(opening) is not None
    ):
        return True
    if _pronoun_after_opening(opening, first):
        return True
    head = opening[:60]
    if ("of th" in head or "Of th" in head) and _OF_DEMONSTRATIVE.match(opening) is not None:
        return True
    found = _DEMONSTRATIVE.match(opening)
    if found is None:
        return False
    after = found.group(2)  # the next word's first two characters
    title = after is not None and (
        after[0].isupper() or (after[0] in "'\u2019" and after[1:].isdigit())
    )
    return not title


# "It", "He" or "She" as the subject after an opening phrase stands for what was said before,
# as at the start: right after a subordinator ("Though he has been considered ..., he lived in
# Haarlem"; not "he or she", nor when a name follows the clause: "Though he was born in Ohio,
# Smith ..."), or after a phrase of time or discourse that introduces nothing ("As of March
# 2015, it had control over ...", "Despite this, he ...", "On the other hand, it ...", "In
# 2010, it ..."): a preposition, then only numbers, months and the words of such phrases
# (``_DISCOURSE``). Any other phrase may hold what the pronoun stands for ("In the handbook, it
# says ...", "Since the museum reopened, it has ...", "If a vessel detects another, it ..."),
# and passes; so does an expletive "it" (``_IT``).
_SUBORDINATORS = frozenset(
    "Though Although While Whilst When Whenever After Before Because Since Once Until Unless "
    "As If".split()
)
_PREPOSITIONS = frozenset("In On At By For During Despite Following Besides Throughout".split())
_DISCOURSE = frozenset(
    "this that these those the other hand contrast fact particular turn same year years early "
    "late mid of time period point stage moment century centuries decade decades era months "
    "weeks days".split()
)
_MONTHS = frozenset(
    "January February March April May June July August September October November December "
    "Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
_PRONOUNS = ("it ", "he ", "she ", "it's ", "it\u2019s ")
_MAIN_PRONOUNS = (*_PRONOUNS, "they ", "his ", "her ", "its ", "their ")
_OPENING_WORDS_MAX = 6  # the words an opening phrase before the comma may have


def _pronoun_after_opening(opening: str, first: str, plural: bool = False) -> bool:
    """Whether ``opening`` (its first word ``first``) sets out with a subordinator and "he" or
    "she", or with a phrase of time or discourse ("In 2010", "As of March 2015", "Despite
    this") and then "it", "he" or "she" as its subject (``_IT``); ``plural``: "they" in their
    place ("For centuries, they could be owned ...": ``leans_unasked``)."""
    pronouns, subjects = (("they ",), ("they ",)) if plural else (_PRONOUNS, ("he ", "she "))
    if first in _SUBORDINATORS:
        after = len(first) + 1
        if opening.startswith(subjects, after) and not opening.startswith(
            ("he or ", "she or ", "they or "), after
        ):
            # the clause after it names what the pronoun stands for ("Though he was born in
            # Ohio, Smith grew up ...", "When they retire, employees keep ..."), unless it opens
            # with a pronoun too ("..., he in fact lived and worked in Haarlem")
            comma = opening.find(", ")
            named = comma > 0 and not opening.startswith(_MAIN_PRONOUNS, comma + 2)
            rest = opening[after:]
            return not named and _subject(rest[0].upper() + rest[1:])
        if first != "As":
            return False
    elif first not in _PREPOSITIONS:
        return False
    comma = opening.find(", ", 0, 60)
    if comma <= 0 or not opening.startswith(pronouns, comma + 2):
        return False
    fronted = opening[:comma].split()
    if fronted[:2] == ["As", "of"]:  # (a preposition of two words)
        fronted = ["At", *fronted[2:]]
    if not fronted or len(fronted) > _OPENING_WORDS_MAX or fronted[0] not in _PREPOSITIONS:
        return False
    for word in fronted[1:]:
        core = word.strip(".,()[]'\u2019")
        if not (
            core.lower() in _DISCOURSE
            or core in _MONTHS
            or core[:1].isdigit()  # a year, "1990s", "2015[update]"
        ):
            return False
    rest = opening[comma + 2 :]
    return _subject(rest[0].upper() + rest[1:])


# "They" as a subject: then a word in lower case ("They lost Dyrrachium ..."), not a title ("They
# Might Be Giants ...").
_THEY = re.compile(r"They(?:['\u2019](?:re|ve|d|ll))?\s+(?=[a-z])")


def _subject(opening: str) -> bool:
    """Whether ``opening`` sets out with "It", "He" or "She" (``_IT``) or "They" (``_THEY``)
    as a subject."""
    return (_THEY if opening.startswith("They") else _IT).match(opening) is not None


# A question that says "they" itself ("where do they shoot Guy's Grocery Games"): a claim's
# "they" may be the question's.
_ASKS_OF_THEM = re.compile(r"\b(?:they|them|their|theirs)\b", re.IGNORECASE)


def leans_unasked(text: str, question: str) -> bool:
    """Whether ``text`` has "they" as its subject, at its start ("They lost Dyrrachium ... in
    1085") or after an opening phrase as ``_leans_back`` reads "it" ("For centuries, they could
    be owned ..."), for a ``question`` that does not say "they" itself: it then stands for what
    the sentence before it named, not for what the question asked about. ``fragment`` leaves a
    plural pronoun alone (the question is not known there); ``ask``, which knows it, reads it
    so (``lean_on_kept``'s ``question``), and so does its fallback."""
    if "hey" not in text[:80] or _ASKS_OF_THEM.search(question) is not None:
        return False
    opening = _opening(text.strip())
    first = opening[:14].split(" ", 1)[0].rstrip(",")
    if first.startswith("They"):
        return _subject(opening)
    return _pronoun_after_opening(opening, first, plural=True)


_HEADING = "a heading, not a statement"


def _heading(claim: str) -> bool:
    """A claim that reads as a heading; "Eligibility: All Full-Time Employees" (a label and its
    value) states something, so a colon inside keeps it a claim, unless what stands before it
    is a heading in capitals ("HOW PROVIDERS AFFECT YOUR COSTS: Balance Billing Protection":
    a section's heading, then its subsection's)."""
    if ":" not in claim:
        return reads_as_heading(claim)
    label, _, _ = claim.partition(":")
    return len(label.split()) >= 2 and label.isupper() and reads_as_heading(claim)


def _fragment_by_definition(stripped: str) -> str | None:
    """``fragment``'s word rules, from the definitions (``_sentence_words`` and
    ``content_words``) on the normalised text: its fast paths give the same answers (a
    property test checks it)."""
    if _starts_mid_sentence(stripped):
        return _MID_SENTENCE
    if _points_elsewhere(stripped):
        return _POINTER
    if _has_gap(stripped):
        return _WITH_A_GAP
    normalized = normalize(stripped)
    if _sentence_words(normalized) < MIN_CLAIM_WORDS:
        return "a fragment"
    if all(word.isdigit() for word in content_words(normalized)):
        return _NAMES_NOTHING
    if _heading(stripped):
        return _HEADING
    return LEANS_BACK if _leans_back(stripped) else None


def _sentence_words(normalized: str) -> float:
    """Words, where scripts without spaces count by their characters: two Chinese or Japanese
    characters, or five Thai characters (vowel marks included), make about a word."""
    if UNSPACED.search(normalized) is None:
        return len(WORD_TOKEN.findall(normalized))
    return unspaced_words(normalized) + len(WORD_TOKEN.findall(UNSPACED.sub(" ", normalized)))
