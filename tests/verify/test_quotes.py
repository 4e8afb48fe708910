"""Quotes: the span check (word and number boundaries, the cited source only), word limits,
normalisation on both sides, and the spans reported."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import S1, S2, WS, check, one, only_citation
from quotebound import NormalizedText, Policy, Source, WorkingSet, normalize, verify

# -- where a quote is found --------------------------------------------------------------------


def test_quote_differing_by_one_digit_fails() -> None:
    bad = one("Germany pays 16 weeks", "S2", "to full salary for the first 16 weeks")
    c = only_citation(check(bad))
    assert (c.reason, c.span) == ("quote_not_found", None)
    assert c.message == "claim 1: quote not found in S2"


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("Pay is topped up for the first 14 weeks.", "4 weeks."),
        ("Interest is 1.5 percent per year.", "5 percent per year"),
        ("Interest is 1,5 percent per year.", "5 percent per year"),
        ("The limit is 1,000 dollars per claim.", "000 dollars per claim"),
        ("Deadline is 140 days after approval.", "Deadline is 14"),
        ("All unpaid leave must be approved.", "paid leave must be approved"),
        ("The jobs job-170 and job-2 failed.", "The jobs job-17"),
    ],
)
def test_quote_must_sit_on_word_and_number_boundaries(source: str, quote: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    verdict = check(one("x", "S1", quote), ws, policy=Policy(min_quote_words=1))
    assert only_citation(verdict).reason == "quote_not_found"
    assert NormalizedText(source).locate(normalize(quote)) is None


def test_quote_straddling_two_sources_is_in_neither() -> None:
    quote = "unless local law provides more. In Germany, the company tops up"
    assert normalize(quote) in normalize(S1 + " " + S2)
    c = only_citation(check(one("Local law may give more", "S1", quote)))
    assert c.reason == "quote_not_found"
    c = only_citation(check(one("Local law may give more", "S2", quote)))
    assert c.reason == "quote_not_found"


def test_quote_found_only_in_another_source() -> None:
    c = only_citation(check(one("Contractors get no leave", "S1", "Contractors are not eligible")))
    assert c.reason == "quote_in_other_source"
    assert c.message == "claim 1: quote is not in the cited S1 but in S3"
    assert c.span is None


@pytest.mark.parametrize(
    "other",
    [
        "Staff get 16 weeks of leave.",
        "STAFF GET １６ WEEKS OF LEAVE.",
        "Staff get &#49;&#54; weeks of leave.",
        "Sta&shy;ff get 16 weeks of lea&#x76;e.",
        "Sta\u200bff get 16\u00a0weeks of leave.",
    ],
)
@pytest.mark.parametrize("prepared", [False, True])
def test_quote_in_other_source_is_found_through_folded_forms(other: str, prepared: bool) -> None:
    ws = WorkingSet([Source("S1", "Unrelated text about parking spaces."), Source("S2", other)])
    if prepared:
        ws.prepare()
    c = only_citation(check(one("Staff get 16 weeks", "S1", "staff get 16 weeks of leave"), ws))
    assert c.reason == "quote_in_other_source"
    assert c.message == "claim 1: quote is not in the cited S1 but in S2"
    ok = only_citation(check(one("Staff get 16 weeks", "S2", "staff get 16 weeks of leave"), ws))
    assert ok.valid
    assert normalize(other[ok.span[0] : ok.span[1]]) == "staff get 16 weeks of leave"


def test_quote_in_the_user_message_is_reported_as_other_source() -> None:
    ws = WorkingSet([*WS.sources, Source("u", "My manager said I get 20 weeks off.", kind="user")])
    c = only_citation(check(one("You get 20 weeks", "S1", "my manager said I get 20"), ws))
    assert c.reason == "quote_in_other_source"
    assert "in u" in (c.message or "")


# -- word limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "policy", "reason"),
    [
        ("16 weeks of", Policy(), "quote_too_short"),
        ("— 16 weeks of —", Policy(), "quote_too_short"),
        ("16 weeks of paid", Policy(), None),
        ("16 weeks", Policy(min_quote_words=2), None),
        ("16 weeks", Policy(min_quote_words=3), "quote_too_short"),
        ("entitled to 16 weeks of paid parental", Policy(max_quote_words=6), "quote_too_long"),
        ("entitled to 16 weeks of paid", Policy(max_quote_words=6), None),
        (S1, Policy(max_quote_words=15), None),
        (S1, Policy(max_quote_words=14), "quote_too_long"),
        (S1, Policy(min_quote_words=15, max_quote_words=15), None),
        (S1, Policy(min_quote_words=16, max_quote_words=20), "quote_too_short"),
    ],
)
def test_quote_word_limits(quote: str, policy: Policy, reason: str | None) -> None:
    assert len(S1.split()) == 15
    verdict = check(one("Employees get 16 weeks", "S1", quote), policy=policy)
    assert only_citation(verdict).reason == reason


def test_default_max_quote_words_is_forty() -> None:
    text = " ".join(f"w{i}" for i in range(60))
    ws = WorkingSet([Source("S1", text)])
    forty = " ".join(text.split()[:40])
    forty_one = " ".join(text.split()[:41])
    assert only_citation(check(one("x", "S1", forty), ws)).valid
    c = only_citation(check(one("x", "S1", forty_one), ws))
    assert c.reason == "quote_too_long"
    assert "41 words, more than 40" in (c.message or "")


# -- normalisation, both sides -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "quote", "expected_slice"),
    [
        # curly vs straight, both directions
        ("It’s the “standard” plan for all staff.", 'It\'s the "standard" plan for', None),
        ('It\'s the "standard" plan for all staff.', "It’s the “standard” plan for", None),
        # dashes
        ("Refunds take 5–7 business days to arrive.", "Refunds take 5-7 business days", None),
        ("Refunds take 5-7 business days to arrive.", "Refunds take 5—7 business days", None),
        ("The fee — a flat rate — is waived today.", "The fee - a flat rate - is", None),
        # no-break and other spaces
        ("Leave lasts 16\u00a0weeks in total here.", "Leave lasts 16 weeks in", None),
        ("Leave lasts 16 weeks in total here.", "Leave\u00a0lasts\u202f16\u2009weeks in", None),
        ("Leave  lasts\n\t16 weeks in total here.", "Leave lasts 16 weeks in", None),
        # invisible format characters on either side
        ("Leave\u200b lasts 16 weeks in total.", "Leave lasts 16 weeks", None),
        (
            "Parental leave is non\u00adtrans\u00adferable by law.",
            "leave is nontransferable by",
            "leave is non\u00adtrans\u00adferable by",
        ),
        (
            "Parental leave is nontransferable by law.",
            "leave is non\u00adtrans\u200bferable by",
            None,
        ),
        # HTML entities on either side
        (
            "Terms &amp; conditions apply to all refunds.",
            "Terms & conditions apply to",
            "Terms &amp; conditions apply to",
        ),
        ("Terms & conditions apply to all refunds.", "Terms &amp; conditions apply to", None),
        ("It&#8217;s the standard plan here.", "It’s the standard plan", None),
        ("It&rsquo;s the standard plan here.", "It's the standard plan", None),
        (
            "Leave lasts 16&nbsp;weeks in total.",
            "Leave lasts 16 weeks",
            "Leave lasts 16&nbsp;weeks",
        ),
        # NFKC: ligatures, fullwidth digits, composed vs decomposed accents
        (
            "The ﬁnal payment is made in week １４ of leave.",
            "final payment is made in week 14",
            "ﬁnal payment is made in week １４",
        ),
        (
            "The final payment is made in week 14 of leave.",
            "ﬁnal payment is made in week １４",
            None,
        ),
        ("The café is closed for 16 weeks.", "The cafe\u0301 is closed", None),
        ("The cafe\u0301 is closed for 16 weeks.", "The café is closed", None),
        # case
        (
            "Employees are entitled to paid leave.",
            "EMPLOYEES ARE ENTITLED TO",
            "Employees are entitled to",
        ),
        # edge punctuation and quote marks are trimmed, never inner words
        (
            "Employees are entitled to paid leave.",
            '"…entitled to paid leave."',
            "entitled to paid leave",
        ),
        (
            "Employees are entitled to paid leave, always.",
            "“entitled to paid leave.”",
            "entitled to paid leave",
        ),
    ],
)
def test_normalisation_both_sides(source: str, quote: str, expected_slice: str | None) -> None:
    ws = WorkingSet([Source("S1", source)])
    verdict = check(one("x", "S1", quote), ws, policy=Policy(min_quote_words=3))
    c = only_citation(verdict)
    assert c.valid, c.reason
    if expected_slice is not None:
        assert source[c.span[0] : c.span[1]] == expected_slice


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("´Final offer´ was the subject line.", "´Final offer´ was the subject"),
        ("(´Final offer´) was the subject line.", "´Final offer´) was the subject"),
        ("¨Umlaut¨ marks appear in old texts.", "¨Umlaut¨ marks appear in"),
    ],
)
def test_verbatim_quote_starting_with_a_spacing_accent(source: str, quote: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(one("x", "S1", quote), ws))
    assert c.valid, c.reason


def test_verbatim_quote_with_a_spacing_accent_after_a_space() -> None:
    source = "He wrote ´final offer´ in the subject line."
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(one("x", "S1", "´final offer´ in the subject"), ws))
    assert source[c.span[0] : c.span[1]] == "´final offer´ in the subject"


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("The company pays full salary.", "The сompany pays full"),  # Cyrillic с
        ("The company pays full salary.", "The company pays full salarу"),  # Cyrillic у
        ("Тhe company pays full salary.", "The company pays full"),  # Cyrillic Т in the source
        ("Employees are entitled to leave.", "Employеes are entitled to"),  # Cyrillic е
        ("The café is closed today.", "The cafe is closed"),  # accent is a letter
        ("Leave is non-transferable by law.", "Leave is nontransferable by"),
        ("Refunds take 5-7 days here.", "Refunds take 5 7 days"),
    ],
)
def test_letters_are_never_folded_into_other_letters(source: str, quote: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    verdict = check(one("x", "S1", quote), ws, policy=Policy(min_quote_words=3))
    assert only_citation(verdict).reason == "quote_not_found"


# -- spans -------------------------------------------------------------------------------------


def test_span_maps_back_through_entities_and_invisibles() -> None:
    text = "Intro.\u200b Terms &amp; conditions\u00a0apply to ﬁve \u201cstandard\u201d plans."
    ws = WorkingSet([Source("S1", text)])
    verdict = check(one("x", "S1", 'terms & conditions apply to five "standard" plans'), ws)
    c = only_citation(verdict)
    assert text[c.span[0] : c.span[1]] == (
        "Terms &amp; conditions\u00a0apply to ﬁve \u201cstandard\u201d plans"
    )


def test_span_points_at_the_first_whole_word_occurrence() -> None:
    text = "unpaid leave is approved by HR. paid leave is approved by HR."
    ws = WorkingSet([Source("S1", text)])
    c = only_citation(check(one("x", "S1", "paid leave is approved by"), ws))
    assert c.span == (32, 57)


# -- a regression: no pattern per quote --------------------------------------------------------


def test_verify_compiles_no_pattern_for_an_answers_quotes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A quote is new with every answer: a pattern compiled from it is never reused, and
    compiling one cost ~0.3 ms per failing quote on a fresh working set (10x the rest of its
    check), which a benchmark repeating one answer could not see (the regex cache hid it)."""
    import re

    texts = [
        f"Policy {i}: the cap is {i + 10} days \u2014 see job-{i}; taxes &amp; fees apply."
        for i in range(6)
    ]
    sources = [Source(f"S{i}", t) for i, t in enumerate(texts, 1)]

    def answer(quotes: list[tuple[str, str]]) -> str:
        claims = [{"text": "The cap.", "citations": [{"source": s, "quote": q}]} for s, q in quotes]
        return json.dumps({"answerable": True, "claims": claims})

    verify(WorkingSet(sources), answer([("S1", "the cap is 10 days")]), "json")  # warm
    compiled: list[object] = []
    real = re._compiler.compile  # type: ignore[attr-defined]
    monkeypatch.setattr(
        re._compiler,  # type: ignore[attr-defined]
        "compile",
        lambda *args, **kwargs: compiled.append(args[0]) or real(*args, **kwargs),
    )
    fresh = answer(
        [
            ("S2", "the cap is 11 days - see job-1"),  # valid
            ("S3", "the cap is 99 days - see job-2"),  # in no source
            ("S4", "the cap is 15 days - see job-5"),  # in S6, not in S4
        ]
    )
    verdict = verify(WorkingSet(sources), fresh, "json")
    reasons = [c.reason for claim in verdict.claims for c in claim.citations]
    assert reasons == [None, "quote_not_found", "quote_in_other_source"]
    assert compiled == []
