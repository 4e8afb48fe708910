"""Support: numbers, identifiers and quoted words of a claim must be in what it cites."""

from __future__ import annotations

import pytest

from kits.verifykit import answer, check, cit, claim, one, only_citation, reasons
from quotebound import Source, WorkingSet

NUMS = WorkingSet(
    [
        Source("S1", "The limit is 1,000 dollars and the fee is 2.50 euros, due on day 07."),
        Source("S2", "Processing takes 140 days or 1.4 months at most."),
        Source("S3", "The limit is 1000 dollars and the fee is 2.5 euros."),
        Source("S4", "Week １４ is the last paid week."),
    ]
)


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("The limit is 1000 dollars [1].", None),
        ("The limit is 1,000 dollars [3].", None),
        ("The fee is 2.5 euros [1].", None),
        ("The fee is 2.50 euros [3].", None),
        ("The fee is 2.500 euros [3].", None),
        ("It is due on day 7 [1].", None),
        ("Week 14 is the last paid week [4].", None),
        ("Processing takes 14 days [2].", "number_not_in_source"),
        ("Processing takes 1.40 months [2].", None),
        ("Processing takes 40 days [2].", "number_not_in_source"),
        ("The limit is 100 dollars [1].", "number_not_in_source"),
        ("The limit is 10,000 dollars [1].", "number_not_in_source"),
        ("The fee is 2.05 euros [1].", "number_not_in_source"),
        ("The fee is 25 euros [3].", "number_not_in_source"),
        ("Week 4 is the last paid week [4].", "number_not_in_source"),
    ],
)
def test_numbers_compare_by_value_as_whole_numbers(output: str, reason: str | None) -> None:
    verdict = check(output, NUMS)
    assert only_citation(verdict).reason == reason
    assert verdict.status == ("grounded" if reason is None else "ungrounded")


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("The job was retried 17 times [S4].", "number_not_in_source"),  # only in job-17
        ("The job exited with code 137 [S4].", None),
        ("The job started at 3 [S4].", None),  # 03:00
        ("The job started at 0300 [S4].", "number_not_in_source"),
    ],
)
def test_digits_inside_an_identifier_are_not_a_number(output: str, reason: str | None) -> None:
    assert only_citation(check(output)).reason == reason


@pytest.mark.parametrize(
    ("claim_text", "reason"),
    [
        ("The rate is 5 percent a year [1].", "number_not_in_source"),
        ("The rate is 1 percent a year [1].", "number_not_in_source"),
        ("The rate is 1.5 percent a year [1].", None),
        ("The rate is 1,5 percent a year [1].", None),
        ("The rate is 15 percent a year [1].", "number_not_in_source"),
    ],
)
def test_decimal_comma_is_one_number(claim_text: str, reason: str | None) -> None:
    ws = WorkingSet([Source("S1", "Der Zinssatz beträgt 1,5 Prozent pro Jahr.")])
    assert only_citation(check(claim_text, ws)).reason == reason


def test_number_message_names_the_number_and_source() -> None:
    verdict = check("Reimbursements settle in 14 days [1].")
    c = only_citation(verdict)
    assert c.reason == "number_not_in_source"
    assert c.message == "claim 1: number 14 not found in S1"


def test_number_is_checked_against_the_quote_not_the_whole_source() -> None:
    # 16 is in S1, but not in the quote given as evidence.
    raw = one(
        "Employees get 16 weeks unless local law says more", "S1", "unless local law provides"
    )
    c = only_citation(check(raw))
    assert c.reason == "number_not_in_source"
    assert c.message == "claim 1: number 16 not found in the quotes from S1"


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("Job job-17 failed [S4].", None),
        ("Job JOB-17 failed [S4].", None),
        ("Job job-99 failed [S4].", "identifier_not_in_source"),
        ("Job job-1 failed [S4].", "identifier_not_in_source"),
        ("Job job-170 failed [S4].", "identifier_not_in_source"),
        ("Job job_17 failed [S4].", "identifier_not_in_source"),
        ("Job job-17 failed with exit code 137 [S4].", None),
        ("Job job-17 failed with exit code 138 [S4].", "number_not_in_source"),
        ("As S4 shows, job job-17 failed [S4].", None),
    ],
)
def test_identifiers_are_whole_tokens(output: str, reason: str | None) -> None:
    assert only_citation(check(output)).reason == reason


def test_seed002_invented_job_with_a_random_real_cite_still_fails() -> None:
    ws = WorkingSet(
        [
            Source("tool_get_job", '{"id": "job-17", "state": "failed"}', kind="tool"),
            Source("doc_policy", "Refunds take 5-7 days."),
        ]
    )
    verdict = check('{"answer": "Job job-99 failed.", "cites": ["doc_policy", "doc_99"]}', ws)
    assert verdict.format == "cites"
    assert verdict.status == "ungrounded"
    assert reasons(verdict) == [["identifier_not_in_source", "unknown_source"]]
    ok = check('{"answer": "Job job-17 failed.", "cites": ["tool_get_job"]}', ws)
    assert ok.status == "grounded"


@pytest.mark.parametrize("fmt", ["inline", "json"])
def test_merged_claim_must_cite_both_sources(fmt: str) -> None:
    text = "Employees get 16 weeks and in Germany 14 weeks at full salary"
    q1 = cit("S1", "entitled to 16 weeks of paid parental leave")
    q2 = cit("S2", "to full salary for the first 14 weeks")
    if fmt == "inline":
        single, both = f"{text} [1].", f"{text} [1][2]."
    else:
        single, both = answer(claim(text, q1)), answer(claim(text, q1, q2))
    verdict = check(single)
    assert verdict.status == "ungrounded"
    assert reasons(verdict) == [["number_not_in_source"]]
    assert "14" in (verdict.claims[0].citations[0].message or "")
    verdict = check(both)
    assert verdict.status == "grounded"
    assert reasons(verdict) == [[None, None]]


def test_merged_claim_citing_a_bad_second_source_does_not_rescue_it() -> None:
    text = "Employees get 16 weeks and in Germany 14 weeks at full salary"
    raw = answer(
        claim(
            text,
            cit("S1", "entitled to 16 weeks of paid parental leave"),
            cit("S2", "to full salary for the first 16 weeks"),
        )
    )
    verdict = check(raw)
    assert reasons(verdict) == [["number_not_in_source", "quote_not_found"]]
    assert verdict.status == "ungrounded"


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('The job state is "failed" [S4].', None),
        ("The job state is “failed” [S4].", None),
        ("The job state is «failed» [S4].", None),
        ('The job state is "crashed" [S4].', "quoted_text_not_in_source"),
        ('The job state is "fаiled" [S4].', "quoted_text_not_in_source"),  # Cyrillic а
        ('The job state is "fail" [S4].', "quoted_text_not_in_source"),
        ('Policy says "paid parental leave unless local law" applies [1].', None),
        (
            'Policy says "paid parental leave if local law" applies [1].',
            "quoted_text_not_in_source",
        ),
    ],
)
def test_quoted_words_in_the_claim(output: str, reason: str | None) -> None:
    assert only_citation(check(output)).reason == reason


@pytest.mark.parametrize(
    ("claim", "quote", "reason"),
    [
        # issue 53: a rank the source does not give is a number made up
        (
            "The second Governor of Tennessee was John I. Cox, who served from 1905 to 1907.",
            "John Isaac Cox was an American politician who served as Governor of Tennessee "
            "from 1905 to 1907.",
            "number_not_in_source",
        ),
        # held in words or in digits
        (
            "The second phase of the plan started in 2020.",
            "The 2nd phase of the plan started in 2020.",
            None,
        ),
        (
            "It is the third largest city in the country by population.",
            "Leeds is the third largest city in the country by population.",
            None,
        ),
        # "first" is said loosely too often to be held to the evidence
        (
            "The museum first opened to the public in 1900.",
            "The museum opened to the public in 1900.",
            None,
        ),
    ],
)
def test_an_ordinal_is_a_number_the_evidence_must_hold(
    claim: str, quote: str, reason: str | None
) -> None:
    ws = WorkingSet([Source("S1", quote)])
    assert only_citation(check(one(claim, "S1", quote), ws)).reason == reason
