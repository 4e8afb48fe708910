"""The fast paths give exactly what the general paths give.

- ``normalize_regular`` (the C-level light path) equals the offset-preserving builder;
- ``contains_words`` equals ``find_words``;
- the word count of a quote is its number of space-separated tokens with a letter or digit;
- ``inert_text`` is sound: in an inert text every ASCII run of the normalised text is in the
  original lower-cased (digit runs as they are), which is what ``holder_of`` relies on;
  ``_may_hold`` never rules out an inert text that holds the needle;
- ``holder_of`` with its prefilter, prepared or not, names the same source as a search of
  every other source's full normalised text;
- ``id_tokens`` equals normalising every id;
- ``claim_gap`` (numbers found as written first) equals ``missing_facts`` of the claim's facts;
- ``locate_inert`` (normalising windows around an anchor word of an inert text) and
  ``WorkingSet.locate`` give what ``NormalizedText.locate`` gives; a text cut where ``_cut_ok``
  allows normalises, in two pieces, exactly as it does whole; ``normalized_at`` inverts the map;
- ``verify`` on a fresh WorkingSet (fast paths) and on a prepared one give the same verdict,
  reasons, spans and messages as with every source normalised whole.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kits.fuzzing import scaled
from quotebound import NormalizedText, Policy, Source, WorkingSet, normalize, verify
from quotebound.support import ClaimFacts, claim_gap, missing_facts
from quotebound.text._fast import (
    _cut_after,
    _cut_before,
    _cut_ok,
    _may_hold,
    ascii_lowered,
    inert_text,
    locate_inert,
)
from quotebound.text.normalize import normalize_regular
from quotebound.text.tokens import Evidence, _tokens
from quotebound.text.words import contains_words, find_words
from quotebound.text.words import count_words as _count_words
from quotebound.text.words import trimmed as _trimmed

FAST = settings(max_examples=scaled(400), deadline=None)

ADVERSARIAL = [
    *"abcXYZ0145 .,;:-'\"()!?\t\n&#_",
    "\u2018", "\u2019", "\u201c", "\u201d", "\u00ab", "\u2013", "\u2014", "\u2212",
    "\u00a0", "\u202f", "\u3000", "\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060",
    "\u0301", "\u0308", "\u00e9", "\ufb01", "\ufb02", "\uff11", "\uff41", "\u212a", "\u00b2",
    "\u0435", "\u03a3", "\u03c2", "\u0130", "\u00df", "\u212b", "\u00bd", "\u2160",
    "\u1100", "\u1161", "\u11a8",
    "&amp;", "&#8217;", "&nbsp;", "&lt;", "&#x2014;", "&ampx", "&#97;", "&#x31;", "&shy;",
    "&amp;lt;", "&amp;#97;", "&fjlig;", "&NoBreak;", "&AMP;", "&quot", "&gt;&gt;",
    "1,000", "1.5", "14", "140", "job-14", "2026", "AT&T",
]  # fmt: skip
text = st.lists(st.sampled_from(ADVERSARIAL), max_size=40).map("".join)
plain_words = st.lists(
    st.sampled_from(["cap", "Cap", "EUR", "14", "140", "1,000", "days", "job-14", "the"]),
    min_size=1,
    max_size=6,
).map(" ".join)


@FAST
@given(text)
@example("a\u00a0b\n\nc")
@example("x &amp; y \u2014 \u201cz\u201d")
def test_normalize_regular_equals_the_builder(value: str) -> None:
    light = normalize_regular(value)
    if light is not None:
        assert light == NormalizedText(value).text.strip(" ")
    assert normalize(value) == NormalizedText(value).text.strip(" ")


@FAST
@given(text, text)
def test_contains_words_equals_find_words(hay: str, needle: str) -> None:
    hay, needle = normalize(hay), normalize(needle)
    assert contains_words(hay, needle) == (next(find_words(hay, needle), None) is not None)


def _tokens_with_a_letter_or_digit(normalized: str) -> int:
    return sum(any(c.isalnum() for c in token) for token in normalized.split(" ") if token)


@FAST
@given(st.one_of(text, st.lists(st.sampled_from(["a", "_", "-", "&", "é", " ", "9"])).map("".join)))
@example("- _ a -- b _x_ &")
@example("taxes & service")
@example("a b c __ d")  # counted 5 before (no other token without a letter or digit)
@example("__ a b")
@example("café au lait - now")
def test_word_count_is_the_tokens_with_a_letter_or_digit(quote: str) -> None:
    trimmed = _trimmed(normalize(quote))
    assert _count_words(trimmed) == _tokens_with_a_letter_or_digit(trimmed)


_OLD_TRIM = re.compile(r"""^[\s"'.,;:!?]+|[\s"'.,;:!?]+$""")
edges = st.lists(
    st.sampled_from([*ADVERSARIAL, "\x1c", "\x85", "\u2028", "\n", ".\n", " \t.", "!?"]),
    max_size=12,
).map("".join)


@FAST
@given(edges)
@example(".\tx\n.")
@example(". \u3000 x \x85")
def test_trimmed_equals_the_trim_regex(value: str) -> None:
    edged = value and (value[0] in " \"'.,;:!?" or value[-1] in " \"'.,;:!?")
    assert _trimmed(value) == (_OLD_TRIM.sub("", value) if edged else value)


@FAST
@given(text)
@example("a\u200bb")
@example("x &#97; y")
@example("x &amp;#97; y")
@example("\ufb01x \u212a \uff41 \u00b2")
def test_inert_text_is_sound(value: str) -> None:
    if not inert_text(value):
        return
    normalised = normalize(value)
    low = value.lower()
    for run in re.findall(r"[a-z0-9]+", normalised):
        assert run in low, (value, run)
    for run in re.findall(r"[0-9]+", normalised):
        assert run in value, (value, run)


def test_inert_text_judges_the_usual_characters() -> None:
    assert inert_text("EUR\u00a01,000 \u2014 \u201cquiet\u201d don\u2019t &amp; more")
    for unsafe in ("a\u200bb", "\ufb01", "&#97;", "\uff41", "\u212a", "e\u0301", "&amp;lt;"):
        assert not inert_text(f"x {unsafe} y"), unsafe


INERT_PIECES = [
    *("x", "X", "xx", "ab", "2014", " ", "-", ";", "#", "&", "&#x2014;", "&#45;", "&amp;"),
    *("&mdash;", "&#x2014", "\u2014", "\u00a0"),
]
inert_pieces = st.lists(st.sampled_from(INERT_PIECES), max_size=16).map("".join)


@FAST
@given(inert_pieces)
@example(" X X&#x2014;X XX ")  # an "x" found inside the reference: it said False
def test_may_hold_never_rules_out_a_text_that_holds_the_needle(value: str) -> None:
    if not inert_text(value):
        return
    full = normalize(value)
    starts = [0, *(m.end() for m in re.finditer(" ", full))]
    for needle in {*(full[i:] for i in starts), *(full[:i].strip() for i in starts)}:
        runs = [w.encode() for w in re.findall("[a-z0-9]+", needle)]
        if runs and NormalizedText(value).locate(needle) is not None:
            for k in range(len(runs)):
                assert _may_hold(ascii_lowered(value), runs, k), (needle, k)


def _brute_holder(sources: list[Source], needles: list[str], exclude: str) -> str | None:
    for src in sources:
        if src.id == exclude:
            continue
        full = NormalizedText(src.text)
        if any(full.locate(n) is not None for n in needles):
            return src.id
    return None


@settings(max_examples=scaled(300), deadline=None)
@given(st.lists(st.one_of(text, plain_words), min_size=2, max_size=5), st.one_of(text, plain_words))
@example(["EUR 1,000 cap", "eur\u00a01,000 cap"], "EUR 1,000 cap")
@example(["x", "EUR &#49;4 days"], "eur 14 days")
@example(["x", "cap 1\u200b4 days"], "cap 14 days")
def test_holder_of_equals_a_full_search(texts: list[str], quote: str) -> None:
    sources = [Source(f"S{i}", t) for i, t in enumerate(texts, 1)]
    needle = normalize(quote)
    if not needle:
        return
    trimmed = _trimmed(needle)
    needles = [needle] if trimmed == needle or not trimmed else [needle, trimmed]
    expected = _brute_holder(sources, needles, "S1")
    assert WorkingSet(sources).holder_of(needles, exclude="S1") == expected
    assert WorkingSet(sources).prepare().holder_of(needles, exclude="S1") == expected


@FAST
@given(st.lists(st.one_of(text, plain_words).filter(lambda s: s.strip() == s and s), max_size=6))
def test_id_tokens_equal_normalised_ids(ids: list[str]) -> None:
    unique = list(dict.fromkeys(ids))
    ws = WorkingSet(Source(i, "text") for i in unique)
    assert ws.id_tokens() == frozenset(normalize(i) for i in unique)


# Tokens whose facts differ in every way ``scan`` reads them: plain numbers, thousands,
# decimals, lists and ranges, units, identifiers (one of them an id the set ignores), tokens
# glued to punctuation, and quoted words.
FACT_PIECES = [
    "14", "140", "014", "1,000", "1000", "1.5", "1,5", "15", "1.2.3", "5-7", "12:00", "10kg",
    "2nd", "14-day", "job-14", "job_14", "x86_64", "s2", "q3", "(14)", "14.", "-14", "_14",
    "1.", ".5", "a14", "14a", "\"cap is\"", '"14"', "cap", "the", "\u0663", "\uff11\uff14",
]  # fmt: skip
fact_text = st.lists(st.sampled_from(FACT_PIECES), max_size=8).map(
    lambda pieces: normalize(" ".join(pieces))
)


@FAST
@given(st.lists(st.sampled_from([*FACT_PIECES, " ", ",", ".", "-", "_", "\u00e9"]), max_size=9))
@example(["job", "-", "14"])
@example(["3", ",", "008"])
def test_tokens_are_the_runs_with_a_digit(pieces: list[str]) -> None:
    """``_tokens`` (what ``scan`` and ``claim_gap`` read) against its definition."""
    value = "".join(pieces)
    runs = re.findall(r"[\w.,-]+", value)
    expected = [r.strip(".,-") for r in runs if any(c.isdecimal() for c in r)]
    assert _tokens(value) == expected


@FAST
@given(fact_text, st.lists(fact_text, min_size=1, max_size=3))
@example("cap is 14 and 1,000", ["cap is 14", "1,000 days"])
@example("x.5-7 and 5", ["x.5-7", "5"])
@example("job-14 per s2", ["job-14"])
def test_claim_gap_equals_missing_facts(claim: str, texts: list[str]) -> None:
    ignore = lambda: frozenset({"s2"})  # noqa: E731
    expected = missing_facts(ClaimFacts.of(claim, ignore), [Evidence(t) for t in texts])
    assert claim_gap(claim, [Evidence(t) for t in texts], ignore) == expected


# -- the anchor-window path (``locate_inert``) and ``WorkingSet.locate`` -----------------------

# Pieces an inert text is made of (curly quotes, dashes, no-break spaces, accented letters,
# references that decode to punctuation, chains of them), with the numbers that must not
# blur (14 / 140, 1,000 / 1000) and a few pieces that make a text not inert.
INERT_PIECES = [
    "The", "cap", "Cap", "EUR", "eur", "14", "140", "1,000", "1000", "1.5", "days", "job-14",
    "the", "x", "Ab", " ", " ", " ", "  ", "\n", "\n\n", "\t", ".", ",", "-", "'", '"', "&",
    "\u00a0", "\u2019", "\u201c", "\u201d", "\u2014", "\u00e9", "caf\u00e9", "\u00c9T\u00c9",
    "&amp;", "&nbsp;", "&lt;", "&amp;lt;", "&#8217;", "&ampx", "AT&T", "&quot", "&amp;amp;",
    "&#x2014;", "&gt;&gt;", "&AMP;", "&amp", "#",
]  # fmt: skip
SPOILERS = ["\u200b", "\u00ad", "\ufb01", "\uff11", "\uff41", "e\u0301", "\u0130", "\u03a3",
            "\u03c2", "&#97;", "&#x31;", "\u212a", "\u00b2", "&shy;", "&amp;#97;"]  # fmt: skip
inert_like = st.lists(st.sampled_from(INERT_PIECES), max_size=60).map("".join)
any_text = st.one_of(
    inert_like,
    text,
    st.lists(st.sampled_from(INERT_PIECES + SPOILERS), max_size=60).map("".join),
)


@st.composite
def text_and_needle(draw: st.DrawFn, texts: st.SearchStrategy[str] = any_text) -> tuple[str, str]:
    """A text and a normalised needle: mostly a slice of the text (so that it is found, also
    at the very start and end), sometimes trimmed, sometimes unrelated words."""
    value = draw(texts)
    how = draw(st.integers(0, 4))
    if how == 0 or not value:
        quote = draw(st.one_of(plain_words, inert_like))
    else:
        i = draw(st.sampled_from([0, draw(st.integers(0, len(value)))]))
        j = draw(st.sampled_from([len(value), draw(st.integers(i, len(value)))]))
        quote = value[i:j]
        if how == 2:
            quote = quote.lower()
    needle = normalize(quote)
    if how == 3:
        needle = _trimmed(needle)
    return value, needle


@settings(max_examples=scaled(1500), deadline=None)
@given(text_and_needle(inert_like))
@example(("x. The cap is 14 days; the cap is 140 days", "the cap is 14 days"))
@example(("EUR\u00a01,000 a EUR 1000", "eur 1000"))
@example(("taxes &amp;lt; charges &amp; x", "taxes < charges"))
@example(("ab &ampx cd", "&x cd"))
# windows whose only change in length is whitespace runs (mapped by the runs, no offset map)
@example(("retained.\n\nThe cap  is \u00a0 14\tdays here", "retained. the cap is 14 days"))
@example(("a  b\u3000\u3000c d", "b c"))
def test_locate_inert_equals_the_full_locate(case: tuple[str, str]) -> None:
    value, needle = case
    if not needle or not inert_text(value):
        return
    done, span = locate_inert(value, ascii_lowered(value), needle)
    if done:
        assert span == NormalizedText(value).locate(needle)


@settings(max_examples=scaled(800), deadline=None)
@given(text_and_needle())
def test_working_set_locate_equals_the_full_locate(case: tuple[str, str]) -> None:
    value, needle = case
    if not needle:
        return
    assert WorkingSet([Source("S1", value)]).locate("S1", needle) == NormalizedText(value).locate(
        needle
    )


def test_locate_inert_finds_later_occurrences_in_long_texts() -> None:
    filler = "Records are kept \u2014 for \u201cyears\u201d &amp; more.\n\n" * 40
    value = (
        filler + "The cap is 14\u00a0days. " + filler + "the CAP is 140 days, the cap is 14 days"
    )
    full = NormalizedText(value)
    for needle in ("the cap is 14 days", "cap is 140", "is 14", "zzz 14", "14 days"):
        assert locate_inert(value, ascii_lowered(value), needle) == (True, full.locate(needle))
    # an anchor word met too often: not decided here, the caller takes the full path
    assert locate_inert(value, ascii_lowered(value), "more. the cap") == (False, None)
    assert WorkingSet([Source("S", value)]).locate("S", "more. the cap") == full.locate(
        "more. the cap"
    )


@FAST
@given(any_text, st.data())
def test_a_safe_cut_splits_the_normalisation_exactly(value: str, data: st.DataObject) -> None:
    low = ascii_lowered(value)
    cuts = [c for c in range(1, len(value)) if _cut_ok(low, c)]
    if not cuts:
        return
    c = data.draw(st.sampled_from(cuts))
    whole, left, right = NormalizedText(value), NormalizedText(value[:c]), NormalizedText(value[c:])
    assert left.text + right.text == whole.text
    shift = len(left.text)
    assert whole._u_norm == left._u_norm + [n + shift for n in right._u_norm]
    assert whole._u_len == left._u_len + right._u_len
    assert whole._u_orig == left._u_orig + [o + c for o in right._u_orig]
    assert whole._u_olen == left._u_olen + right._u_olen


@FAST
@given(any_text, st.integers(-3, 3))
@example("ab&amp;cd ef", 0)
@example("x&#97;b AB", 0)
def test_window_edges_are_the_nearest_safe_cuts(value: str, shift: int) -> None:
    """``locate_inert`` widens a window to the nearest places where ``_cut_ok`` holds."""
    low = ascii_lowered(value)
    safe = [c for c in range(1, len(value)) if _cut_ok(low, c)]
    for c in range(-2, len(value) + 3):
        at = c + shift
        assert _cut_before(low, at) == max([0, *(x for x in safe if x <= at)])
        assert _cut_after(low, at) == min([len(value), *(x for x in safe if x >= at)])


@FAST
@given(any_text)
def test_normalized_at_inverts_the_map(value: str) -> None:
    nt = NormalizedText(value)
    for orig in range(len(value)):
        q = nt.normalized_at(orig)
        if q is not None and q < len(nt.text):
            assert nt._original_at(q, start_side=True) == orig


def _answer(claims: list[tuple[str, list[tuple[str, str]]]]) -> str:
    return json.dumps(
        {
            "answerable": True,
            "missing": "",
            "claims": [
                {"text": t, "citations": [{"source": s, "quote": q} for s, q in cits]}
                for t, cits in claims
            ],
        }
    )


@st.composite
def working_set_and_answer(draw: st.DrawFn) -> tuple[list[Source], str]:
    texts = draw(st.lists(any_text, min_size=1, max_size=4))
    sources = [Source(f"S{i}", t) for i, t in enumerate(texts, 1)]
    joined = "\n".join(texts)  # quotes straddling two sources come from here
    claims = []
    for _ in range(draw(st.integers(1, 4))):
        cits = []
        for _ in range(draw(st.integers(1, 3))):
            sid = f"S{draw(st.integers(1, len(texts) + 1))}"  # sometimes one never sent
            base = draw(st.sampled_from([*texts, joined]))
            i = draw(st.sampled_from([0, draw(st.integers(0, len(base)))]))
            j = draw(st.sampled_from([len(base), draw(st.integers(i, len(base)))]))
            quote = base[i:j]
            if draw(st.booleans()):
                quote = quote.lower()
            cits.append((sid, quote))
        claim = draw(st.one_of(plain_words, st.sampled_from([q for _, q in cits])))
        claims.append((claim, cits))
    return sources, _answer(claims)


@settings(max_examples=scaled(500), deadline=None)
@given(working_set_and_answer(), st.integers(1, 4))
@example(
    (
        [Source("S1", "The cap is 14\u00a0days."), Source("S2", "The cap is 140 days.")],
        _answer([("cap is 14 days", [("S2", "the cap is 14 days"), ("S1", "cap is 140 days")])]),
    ),
    2,
)
@example(
    (
        [Source("S1", "taxes &amp; service"), Source("S2", "charges apply to all")],
        _answer([("x", [("S1", "service\ncharges apply to")])]),
    ),
    1,
)
def test_verify_afresh_equals_the_full_path(case: tuple[list[Source], str], words: int) -> None:
    sources, raw = case
    policy = Policy(min_quote_words=words)
    full = WorkingSet(sources)
    for src in sources:
        full.normalized(src.id)  # every source normalised whole: the general path
    expected = verify(full, raw, "json", policy).to_dict()
    assert verify(WorkingSet(sources), raw, "json", policy).to_dict() == expected
    assert verify(WorkingSet(sources).prepare(), raw, "json", policy).to_dict() == expected


@settings(max_examples=scaled(400), deadline=None)
@given(
    st.lists(st.one_of(inert_like, any_text, plain_words), min_size=3, max_size=8),
    st.data(),
)
@example(["x", "the cap is 14 days", "The CAP is 140\u00a0days", "cap is 14"], None)
# references, upper case, a NUL (the joined texts' separator) and paragraph breaks between the
# runs of an occurrence: none of them may rule its source out
@example(["x", "y", "The cap&#8217;s 14&nbsp;DAYS"], "the cap's 14 days")
@example(["x", "y", "CAP&amp;lt;14 days"], "cap<14 days")
@example(["x", "a\x00b cap is 14 days", "z"], "a\x00b cap is 14")
@example(["x", "y", "Fish &AMP; chips &ampx"], "fish & chips &x")
@example(["x", "y", "taxes &amp;\n\nservice charges"], "taxes & service")
def test_holder_of_with_the_joined_scan_equals_a_full_search(
    texts: list[str], data: st.DataObject | str | None
) -> None:
    """``holder_of`` on a fresh set of three or more sources (one scan of every text joined,
    the inert ones judged together) names what a search of every full normalised text does."""
    sources = [Source(f"S{i}", t) for i, t in enumerate(texts, 1)]
    if data is None:
        quote = "the cap is 14 days"
    elif isinstance(data, str):
        quote = data
    else:
        base = data.draw(st.sampled_from(texts[1:]))
        i = data.draw(st.integers(0, len(base)))
        quote = data.draw(st.one_of(st.just(base[i:]), st.just(base[:i]), plain_words))
    needle = normalize(quote)
    if not needle:
        return
    trimmed = _trimmed(needle)
    needles = [needle] if trimmed == needle or not trimmed else [needle, trimmed]
    ws = WorkingSet(sources)
    ws.locate("S1", needles[0])  # the cited source is searched first, as verify() does
    assert ws.holder_of(needles, exclude="S1") == _brute_holder(sources, needles, "S1")
    assert ws.holder_of(needles, exclude="S1") == _brute_holder(sources, needles, "S1")


# -- the relevance rule's fast half (verify._ContentTokens) -------------------------------------

_RELEVANCE_WORDS = st.sampled_from(
    [
        "leave",
        "leaves",
        "weeks",
        "week",
        "paid",
        "the",
        "of",
        "16",
        "job-17",
        "job",
        "17",
        "cap's",
        "x-cap-y",
        "cap",
        "员工",
        "育儿假",
        "employees",
        "a",
        "é",
        "(leave)",
        "leave.",
        "__",
    ]
)
_RELEVANCE_TEXT = st.lists(_RELEVANCE_WORDS, max_size=6).map(" ".join).map(normalize)


@FAST
@given(_RELEVANCE_TEXT, st.lists(_RELEVANCE_TEXT, min_size=1, max_size=4))
def test_the_relevance_fast_path_never_finds_what_the_definition_does_not(
    claim: str, evidences: list[str]
) -> None:
    """Asked of several evidence texts in turn (the claim read lazily, as far as each needs),
    each answer is the one a fresh reading gives, and a yes is one the definition agrees with."""
    from quotebound.text.words import content_words
    from quotebound.verify import _ContentTokens

    said = _ContentTokens(claim)
    for evidence in evidences:
        found = said.one_in(evidence)
        assert found == _ContentTokens(claim).one_in(evidence), (claim, evidence)
        if found:
            assert not content_words(claim).isdisjoint(content_words(evidence)), (claim, evidence)


@FAST
@given(_RELEVANCE_TEXT.map(lambda t: t + " 3,008 doc_12 1.5"), _RELEVANCE_TEXT)
def test_a_number_or_identifier_held_as_written_shares_content_words(
    claim: str, evidence: str
) -> None:
    """The relevance rule's first look: a claim's number or identifier that the evidence holds
    on word bounds means their content words meet (the definition agrees)."""
    from quotebound.text.tokens import digit_tokens
    from quotebound.text.words import contains_words, content_words

    for token in digit_tokens(claim):
        if contains_words(evidence + " " + token, token):
            assert not content_words(claim).isdisjoint(content_words(evidence + " " + token))


# -- the fragment rule's fast paths (fragments.fragment) -------------------------------------------

_CLAIM_WORDS = st.sampled_from(
    [
        *("Leave", "is", "16", "weeks", "of", "the", "it", "job-17", "U.S.", "a", "_", "x_y"),
        *("This", "That's", "These", "\u201cThis", "Those"),
        *(
            "--",
            ".",
            "員工",
            "周",
            "สัปดาห์",
            "Ｌｅａｖｅ",
            "１６",
            "&amp;",
            "wo\u200brd",
            "ﬁne",
            "é",
        ),
    ]
)


@FAST
@given(st.one_of(text, st.lists(_CLAIM_WORDS, max_size=6).map(" ".join)))
def test_the_fragment_fast_path_equals_the_definition(claim: str) -> None:
    from quotebound.fragments import _fragment_by_definition, fragment

    stripped = claim.strip()
    if stripped.startswith("<"):
        return
    if stripped.rstrip(" \"'»”)").endswith("?") or stripped.lower() == "one claim":
        return
    assert fragment(claim) == _fragment_by_definition(stripped), claim


@FAST
@given(st.lists(st.one_of(text, st.text(min_size=150, max_size=400)), min_size=1, max_size=6))
def test_the_word_memos_give_what_the_words_say(texts: list[str]) -> None:
    """``stem`` and ``content_words`` keep what they computed for a word and a long text: what
    they give from the memo is what the text says, read again without it."""
    from quotebound.text import words

    for raw in texts:
        normalized = normalize(raw)
        for _ in range(2):  # the second read comes from the memo where the text is long
            assert words.content_words(normalized) == words._content_words(normalized)
            for token in normalized.split():
                assert words.stem(token) == (
                    token if len(token) <= 3 or not token.isascii() else words._stem(token)
                )


def test_the_word_memos_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile text cannot grow the memos past their bounds: each starts again when full, and
    neither numbers nor long tokens are kept as words."""
    from quotebound.text import words

    monkeypatch.setattr(words, "MEMO_TEXTS", 50)
    monkeypatch.setattr(words, "MEMO_WORDS", len(words._STEMS) + 100)
    for n in range(120):
        words.content_words(f"source {n} " + "policy text of the handbook " * 10)
        assert len(words._CONTENT) <= 50
    for n in range(300):
        word = "unusual" + "".join("bcdfghjklm"[int(d)] for d in f"{n:03d}") + "ax"
        assert words.stem(word + "s") == word
        assert len(words._STEMS) <= words.MEMO_WORDS
    assert words.stem("ab" * 20 + "s") == "ab" * 20 and "ab" * 20 + "s" not in words._STEMS
    assert words.stem("12345678") == "12345678" and "12345678" not in words._STEMS
