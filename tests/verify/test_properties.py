"""Property tests: normalisation offsets, idempotence, the ASCII fast path, and verify()'s
promises (never raises on model output; every accepted quote has a faithful span)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kits.fuzzing import scaled
from quotebound import (
    CITATION_REASONS,
    CLAIM_REASONS,
    FORMATS,
    STATUSES,
    NormalizedText,
    Policy,
    Source,
    Verdict,
    WorkingSet,
    normalize,
    verify,
)

_TRIM = re.compile(r"""^[\s"'.,;:!?]+|[\s"'.,;:!?]+$""")
_SUPPORT_REASONS = {"identifier_not_in_source", "number_not_in_source", "quoted_text_not_in_source"}

FAST = settings(max_examples=scaled(300), deadline=None)
SLOW = settings(max_examples=scaled(150), deadline=None)

# Pieces of source text: plain ASCII, and everything the normaliser folds or must not fold.
ASCII_PIECES = list("abcdeXYZ0145 .,;:-'\"()!?\t\n&#")
UNICODE_PIECES = [
    "\u2018",  # ‘
    "\u2019",  # ’
    "\u201c",  # “
    "\u201d",  # ”
    "\u00ab",  # «
    "\u2013",  # en dash
    "\u2014",  # em dash
    "\u2212",  # minus sign
    "\u00a0",  # no-break space
    "\u202f",  # narrow no-break space
    "\u3000",  # ideographic space
    "\u200b",  # zero-width space
    "\u200d",  # zero-width joiner
    "\u00ad",  # soft hyphen
    "\ufeff",  # BOM
    "\u0301",  # combining acute
    "\u0308",  # combining diaeresis
    "\u00e9",  # é precomposed
    "\ufb01",  # ﬁ ligature
    "\ufb02",  # ﬂ ligature
    "\uff11",  # fullwidth 1
    "\uff14",  # fullwidth 4
    "\u0435",  # Cyrillic е
    "\u0415",  # Cyrillic Е
    "\u0441",  # Cyrillic с
    "\u03a3",  # Greek capital sigma
    "\u03c2",  # Greek final sigma
    "\u0130",  # İ: lower() gives two characters
    "\u00df",  # ß
    "\u212b",  # Angstrom sign, NFKC -> Å
    "\u00bd",  # ½, NFKC -> 1⁄2
    "\u1100",  # Hangul L
    "\u1161",  # Hangul V (composes with L)
    "\u11a8",  # Hangul T
    "&amp;",
    "&#8217;",
    "&nbsp;",
    "&lt;",
    "&#x2014;",
    "&ampx",
]
PIECES = ASCII_PIECES + UNICODE_PIECES
source_text = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@st.composite
def text_and_slice(draw: st.DrawFn) -> tuple[str, str]:
    text = draw(source_text)
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text, text[start:end]


def _trimmed_forms(quote: str) -> set[str]:
    full = normalize(quote)
    return {full, _TRIM.sub("", full)}


# -- (a) locate: spans normalise back to the quote; word-aligned slices are found -----------


@FAST
@given(text_and_slice())
@example(("aa&İa", "a"))
@example(("Sales&İstanbul office opens", "office"))
@example(("The ﬁne print", "ﬁne print"))
@example(("x &amp; y", "&amp; y"))
@example(("a\u00a0\u200b b", "a\u00a0\u200b b"))
@example(("cafe\u0301 au lait", "cafe"))
def test_located_span_normalises_to_the_quote(pair: tuple[str, str]) -> None:
    text, quote = pair
    needle = normalize(quote)
    span = NormalizedText(text).locate(needle)
    if span is not None:
        start, end = span
        assert 0 <= start < end <= len(text)
        assert normalize(text[start:end]) == needle


@FAST
@given(text_and_slice())
def test_locate_finds_nothing_that_normalize_does_not_contain(pair: tuple[str, str]) -> None:
    text, quote = pair
    needle = normalize(quote)
    if needle and needle not in normalize(text):
        assert NormalizedText(text).locate(needle) is None


WORD_CHARS = "abcdefXYZ\u00e9\u0435\u00df\u03a3"
# A separator always holds one visible non-word character; invisible ones may surround it.
HARD_SEPARATORS = [" ", "\t", "\n", ",", ";", ":", "-", "'", '"', "(", ")", "!", "/", "&"]
HARD_SEPARATORS += ["\u2019", "\u201c", "\u201d", "\u2013", "\u2014", "\u00a0", "\u3000"]
HARD_SEPARATORS += ["&amp;", "&#8217;", "&nbsp;", "&#x2014;", " . "]
SOFT_SEPARATORS = ["\u200b", "\u00ad", "\u200d", "\ufeff"]
word = st.text(st.sampled_from(WORD_CHARS), min_size=1, max_size=6)
separator = st.builds(
    lambda before, hard, after: "".join(before) + hard + "".join(after),
    st.lists(st.sampled_from(HARD_SEPARATORS + SOFT_SEPARATORS), max_size=2),
    st.sampled_from(HARD_SEPARATORS),
    st.lists(st.sampled_from(HARD_SEPARATORS + SOFT_SEPARATORS), max_size=2),
)


@st.composite
def words_text(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]]]:
    """Text made of words and separators, with the [start, end) of every word."""
    parts = draw(st.lists(st.tuples(separator, word), min_size=1, max_size=10))
    text, bounds = "", []
    for sep, w in parts:
        if sep.endswith(("&", "&amp;")):
            # '&' + word + ';' could spell a reference ('&dd;' is U+2146, which folds to 'd';
            # '&af;' is invisible), which then is no longer a word: keep the '&' apart
            sep += " "
        text += sep
        bounds.append((len(text), len(text) + len(w)))
        text += w
    return text + draw(separator), bounds


@st.composite
def word_slice(draw: st.DrawFn) -> tuple[str, str]:
    text, bounds = draw(words_text())
    i = draw(st.integers(0, len(bounds) - 1))
    j = draw(st.integers(i, len(bounds) - 1))
    return text, text[bounds[i][0] : bounds[j][1]]


@FAST
@given(word_slice())
@example((" Sales&İstanbul office ", "office"))
@example(("\u00ad(ab\u200b-\u200bcd)", "ab\u200b-\u200bcd"))
@example((" straße ΣΑΣ ", "ΣΑΣ"))
def test_word_aligned_slices_are_found(pair: tuple[str, str]) -> None:
    text, quote = pair
    span = NormalizedText(text).locate(normalize(quote))
    assert span is not None, (text, quote)
    assert normalize(text[span[0] : span[1]]) == normalize(quote)


# -- (b) idempotence ---------------------------------------------------------------------------


@FAST
@given(source_text)
@example("&amp;lt;")  # escaped twice: decodes all the way, as "&lt;" does
@example("&amp;amp;#8217;")
@example("a\u200b\u0301")  # an invisible character between a letter and its mark
@example("e\u00ad\u0301")
@example("ﬁ\u0301")
@example("\u0130\u0301")
@example("\u1100\u1161\u11a8")
@example("\u03a3\u0301\u212b")
@example("&Amp;")  # lower case makes "&amp;" of it, which stays (see below)
@example("&amp;#\u00bd")  # NFKC makes "&#1\u20442" of it (fuzz found it)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    if _formed_reference(once):
        return  # folding formed a reference: it stays as it is (docs/verify.md)
    assert normalize(once) == once


def _formed_reference(normalised: str) -> bool:
    return "&" in normalised and html.unescape(normalised) != normalised


def test_a_reference_that_folding_forms_stays_as_it_is() -> None:
    # references are decoded in the text as given (step 1), before case and NFKC (steps 2-3)
    assert normalize("&Amp;") == "&amp;" and normalize("&AMP;") == "&"
    assert normalize("&#\u00bd") == "&#1\u20442" and normalize("&\uff4c\uff54;") == "&lt;"
    assert all(_formed_reference(normalize(t)) for t in ("&Amp;", "&#\u00bd", "&\uff4c\uff54;"))


@FAST
@given(source_text, st.booleans())
@example("&Amp; &#\u00bd &\uff4c\uff54; AT&T &amp;lt;", True)
def test_an_escaped_text_normalises_as_it_does(text: str, quote: bool) -> None:
    """The packer escapes each source body (html.escape) and a model copies from that: the
    copy normalises exactly as the source does, whatever the source holds."""
    assert normalize(html.escape(text, quote=quote)) == normalize(text)


@pytest.mark.parametrize(
    ("text", "quote"),
    [
        ("a\u200b\u0301", "\u00e1"),
        ("e\u00ad\u0301", "\u00e9"),
        ("Cafe\u200d\u0301 au lait", "Café au lait"),
        ("Write &amp;lt;b&amp;gt; for bold", "Write <b> for bold"),
        ("Write &amp;lt;b&amp;gt; for bold", "Write &lt;b&gt; for bold"),
    ],
)
def test_folded_forms_are_found(text: str, quote: str) -> None:
    span = NormalizedText(text).locate(normalize(quote))
    assert span is not None
    assert normalize(text[span[0] : span[1]]) == normalize(quote)


@FAST
@given(source_text)
def test_normalized_text_is_trimmed_and_single_spaced(text: str) -> None:
    out = normalize(text)
    assert out == out.strip(" ")
    assert "  " not in out
    assert not any(c.isspace() and c != " " for c in out)
    assert not any(c in out for c in "\u200b\u00ad\ufeff\u2019\u201c\u2014\u00a0")
    assert not any(c.isupper() for c in out)


# -- (c) the ASCII fast path agrees with the general path -------------------------------------

ascii_no_amp = st.text(st.characters(max_codepoint=0x7F, exclude_characters="&"), max_size=60)


@FAST
@given(ascii_no_amp)
@example("a\x1cb\x1dc\x1ed\x1fe")
@example("\x0b\x0c  x\r\n\ty ")
@example("\x00\x07 A  B\x7f")
def test_ascii_fast_path_equals_general_path(text: str) -> None:
    assert normalize(text) == NormalizedText(text).text.strip(" ")


@FAST
@given(source_text)
@example("\u201cCurly\u201d \u2014 dash\u00a0nbsp")
@example("ΟΔΟΣ ος")
def test_light_path_equals_general_path(text: str) -> None:
    """normalize() skips the offset map when it can; the result must not change."""
    assert normalize(text) == NormalizedText(text).text.strip(" ")


# -- (d) verify never raises on model output --------------------------------------------------

PROSE = WorkingSet(
    [
        Source("S1", "Employees are entitled to 16 weeks of paid parental leave."),
        Source("S2", "Job job-17 failed &amp; was retried 3 times at 1,000 \u201cunits\u201d."),
        Source("doc_user", "My manager said I get 20 weeks.", kind="user"),
        Source("tool_get_job", '{"job": "job-17", "state": "failed"}', kind="tool"),
    ]
)

FRAGMENTS = [
    "[1]",
    "[S2]",
    "[doc_user]",
    "[1, 2]",
    "[0]",
    "[sic]",
    "(S1)",
    "[x](http://y)",
    "<evidence>",
    "</evidence>",
    "<answer>",
    "cites: [S1]",
    "{",
    "}",
    "```json\n",
    "```",
    '"claims": [',
    '"citations": [',
    '"source": "S1"',
    '"quote": "',
    '"text": "',
    '"cites": ["S2"]',
    '{"answerable": false}',
    "]",
    ":",
    ",",
    '"',
    "INSUFFICIENT_CONTEXT",
    "Not covered by the provided documents.",
    " ",
    "\n",
    ". ",
    "e.g. ",
    "U.S. ",
    "16 weeks",
    "job-17",
    "1,000",
    "&amp;",
    "\u2019",
    "\u0301",
    "\u0130",
    "- ",
    "# ",
    "null",
    "true",
    "1e999",
]
outputs = st.one_of(
    st.text(max_size=80),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=25).map("".join),
)
JSON_KEYS = ["answerable", "claims", "text", "citations", "source", "quote", "cites"]
JSON_KEYS += ["missing", "answer"]


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # (a function, not a lambda: hypothesis reads the source of ``extend`` to check that it
    # recurses, and a lambda inside a call is not always read whole)
    keyed = st.dictionaries(st.sampled_from(JSON_KEYS), inner, max_size=5)
    return st.lists(inner, max_size=4) | keyed


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["S1", "S2", "1", "doc_user", "16 weeks of paid parental"]),
    _nested,
    max_leaves=25,
)


def assert_well_formed(ws: WorkingSet, verdict: Verdict) -> None:
    assert verdict.status in STATUSES
    assert (verdict.status == "unparseable") is (verdict.error is not None)
    if verdict.status in {"unparseable", "abstained"}:
        assert verdict.claims == ()
    kept = [c.kept for c in verdict.claims]
    if verdict.status == "grounded":
        assert kept and all(kept)
    elif verdict.status == "partial":
        assert any(kept) and not all(kept)
    elif verdict.status == "ungrounded":
        assert not any(kept)
    for c in verdict.claims:
        assert c.kept is (c.reason is None)
        assert c.reason is None or c.reason in CLAIM_REASONS
        assert c.kept is any(x.valid for x in c.citations)
        for citation in c.citations:
            assert citation.valid is (citation.reason is None)
            assert citation.reason is None or citation.reason in CITATION_REASONS
            assert citation.source is None or citation.source in ws
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["counts"]["kept"] == sum(kept)
    assert data["allowed_ids"] == list(ws.ids)


@SLOW
@given(outputs, st.sampled_from(FORMATS))
@example("```\nINSUFFICIENT_CONTEXT\n```", "auto")
@example("[" * 500, "json")
@example('{"answerable": true, "claims": [{"text": "x", "citations": [[]]}]}', "auto")
def test_verify_never_raises_on_text(output: str, fmt: str) -> None:
    assert_well_formed(PROSE, verify(PROSE, output, format=fmt))


@SLOW
@given(json_values, st.sampled_from(FORMATS), st.booleans())
def test_verify_never_raises_on_json(value: Any, fmt: str, fenced: bool) -> None:
    raw = json.dumps(value)
    if fenced:
        raw = f"Here you go:\n```json\n{raw}\n```"
    assert_well_formed(PROSE, verify(PROSE, raw, format=fmt))


# -- (e) every accepted quote has a span inside its source, and it is faithful ---------------


@st.composite
def sources_and_answer(draw: st.DrawFn) -> tuple[WorkingSet, str, str]:
    texts = draw(st.lists(source_text, min_size=1, max_size=3))
    ws = WorkingSet(Source(f"S{i}", t) for i, t in enumerate(texts, 1))
    claims = []
    for _ in range(draw(st.integers(1, 3))):
        cits = []
        for _ in range(draw(st.integers(0, 2))):
            text = draw(st.sampled_from(texts))
            start = draw(st.integers(0, len(text)))
            end = draw(st.integers(start, len(text)))
            quote = text[start:end]
            if draw(st.booleans()):  # straddle into another source
                other = draw(st.sampled_from(texts))
                quote += " " + other[: draw(st.integers(0, len(other)))]
            ref = draw(st.sampled_from([*ws.ids, "1", "S9"]))
            cits.append({"source": ref, "quote": quote})
        claim_text = draw(st.sampled_from(["x", "16 weeks", "job-17", '"ab"', "Σ 14"]))
        claims.append({"text": claim_text, "citations": cits})
    if draw(st.booleans()):
        raw = json.dumps({"answerable": True, "claims": claims})
        fmt = "json"
    else:
        lines = [
            f"[{c['source']}] {c['quote']}".replace("\n", " ")
            for cl in claims
            for c in cl["citations"]
        ]
        raw = "<evidence>\n" + "\n".join(lines) + "\n</evidence>\nThe answer is x."
        fmt = "evidence"
    return ws, raw, fmt


@SLOW
@given(sources_and_answer(), st.integers(1, 4))
def test_every_span_lies_in_its_source_and_normalises_to_the_quote(
    case: tuple[WorkingSet, str, str], min_words: int
) -> None:
    ws, raw, fmt = case
    verdict = verify(ws, raw, format="auto", policy=Policy(min_quote_words=min_words))
    assert verdict.format == fmt
    assert_well_formed(ws, verdict)
    for c in verdict.claims:
        for citation in c.citations:
            if citation.valid and citation.quote:
                assert citation.span is not None
            if citation.span is None:
                continue
            assert citation.valid or citation.reason in _SUPPORT_REASONS
            source = ws.get(citation.source or "")
            assert source is not None and citation.quote
            start, end = citation.span
            assert 0 <= start < end <= len(source.text)
            assert normalize(source.text[start:end]) in _trimmed_forms(citation.quote)


@st.composite
def two_word_sources(draw: st.DrawFn) -> tuple[str, str, str]:
    first, bounds = draw(words_text().filter(lambda tb: len(tb[1]) >= 4))
    second, _ = draw(words_text())
    i = draw(st.integers(0, len(bounds) - 4))
    j = draw(st.integers(i + 3, len(bounds) - 1))
    return first, second, first[bounds[i][0] : bounds[j][1]]


@SLOW
@given(two_word_sources())
@example((" X X&#x2014;X XX ", " X ", "X X&#x2014;X XX"))  # an "x" inside the reference
def test_quote_is_valid_in_its_source_and_reported_elsewhere(case: tuple[str, str, str]) -> None:
    first, second, quote = case
    ws = WorkingSet([Source("A", first), Source("B", second)])
    raw = json.dumps(
        {
            "answerable": True,
            "claims": [
                {"text": "x", "citations": [{"source": "A", "quote": quote}]},
                {"text": "x", "citations": [{"source": "B", "quote": quote}]},
            ],
        }
    )
    policy = Policy(min_quote_words=1, max_quote_words=100)
    own, other = (c.citations[0] for c in verify(ws, raw, policy=policy).claims)
    assert own.valid, (first, quote, own.reason)
    assert own.span is not None
    assert normalize(first[own.span[0] : own.span[1]]) in _trimmed_forms(quote)
    in_second = NormalizedText(second).locate(normalize(quote)) is not None
    if not in_second:
        in_second = NormalizedText(second).locate(_TRIM.sub("", normalize(quote))) is not None
    assert other.reason == (None if in_second else "quote_in_other_source")


@SLOW
@given(sources_and_answer())
def test_prepared_and_lazy_working_sets_agree(case: tuple[WorkingSet, str, str]) -> None:
    ws, raw, _ = case
    fresh = WorkingSet(ws.sources).prepare()
    assert verify(ws, raw).to_dict() == verify(fresh, raw).to_dict()
