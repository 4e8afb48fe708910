"""The fast paths give exactly what the general paths give.

- ``normalize_regular`` (the C-level light path) equals the offset-preserving builder;
- ``contains_words`` equals ``find_words``;
- the word count of a quote equals the count by one regex per word;
- ``inert_text`` is sound: in an inert text every ASCII run of the normalised text is in the
  original lower-cased (digit runs as they are), which is what ``holder_of`` relies on;
- ``holder_of`` with its prefilter, prepared or not, names the same source as a search of
  every other source's full normalised text;
- ``id_tokens`` equals normalising every id.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from quotebound import NormalizedText, Source, WorkingSet, normalize
from quotebound.normalize import contains_words, find_words, inert_text, normalize_regular
from quotebound.verify import _count_words, _trimmed

FAST = settings(max_examples=400, deadline=None)

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


_OLD_PUNCT = re.compile(r"(?:^| )[^\w ]+(?= |$)")
_OLD_WORD = re.compile(r"[^\W_]+(?:\S*[^\W_])?")


def _old_count(trimmed: str) -> int:
    words = trimmed.count(" ") + 1 if trimmed else 0
    if _OLD_PUNCT.search(trimmed):
        words = len(_OLD_WORD.findall(trimmed))
    return words


@FAST
@given(text)
@example("- _ a -- b _x_ &")
@example("taxes & service")
def test_word_count_equals_the_regex_count(quote: str) -> None:
    trimmed = _trimmed(normalize(quote))
    assert _count_words(trimmed) == _old_count(trimmed)


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


def _brute_holder(sources: list[Source], needles: list[str], exclude: str) -> str | None:
    for src in sources:
        if src.id == exclude:
            continue
        full = NormalizedText(src.text)
        if any(full.locate(n) is not None for n in needles):
            return src.id
    return None


@settings(max_examples=300, deadline=None)
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
