"""The cites format: a whole answer and the ids it cites, as a JSON field or a trailing line."""

from __future__ import annotations

import pytest

from kits.verifykit import check, reasons


@pytest.mark.parametrize(
    "output",
    [
        '{"answer": "Job job-17 failed with exit code 137.", "cites": ["S4"]}',
        '```json\n{"answer": "Job job-17 failed with exit code 137.", "cites": ["S4"]}\n```',
        "Job job-17 failed with exit code 137.\ncites: [S4]",
        'Job job-17 failed with exit code 137.\ncites: ["S4"]',
        "Job job-17 failed with exit code 137.\n  Cites = ['S4'],  ",
        'Job job-17 failed with exit code 137.\n"cites": [S4, S4]',
    ],
)
def test_cites_format_field_and_line(output: str) -> None:
    verdict = check(output)
    assert verdict.format == "cites"
    assert verdict.status == "grounded"
    (c,) = verdict.claims
    assert c.text == "Job job-17 failed with exit code 137."
    assert [(x.source, x.valid, x.span) for x in c.citations] == [("S4", True, None)]


def test_cites_whole_answer_is_one_claim_checked_against_all_cited_sources() -> None:
    text = "Job job-17 failed. Refunds take 5-7 business days and cost 1000 dollars."
    assert check(f"{text}\ncites: [S4, S5]").status == "grounded"
    verdict = check(f"{text}\ncites: [S4]")
    assert reasons(verdict) == [["number_not_in_source"]]


@pytest.mark.parametrize(
    ("output", "status", "claim_reason", "citation_reasons"),
    [
        ("Job job-17 failed.\ncites: []", "ungrounded", "unmarked_claim", []),
        ("Job job-17 failed.\ncites: [S9]", "ungrounded", "no_valid_citation", ["unknown_source"]),
        ("Job job-17 failed.\ncites: [s4]", "ungrounded", "no_valid_citation", ["unknown_source"]),
        ('{"answer": "Job failed.", "cites": []}', "ungrounded", "no_citation", []),
    ],
)
def test_cites_failures(
    output: str, status: str, claim_reason: str, citation_reasons: list[str]
) -> None:
    verdict = check(output)
    assert verdict.status == status
    (c,) = verdict.claims
    assert c.reason == claim_reason
    assert [x.reason for x in c.citations] == citation_reasons


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        ('{"answer": "Job failed.", "cites": "S4"}', "cites must be a list of source ids"),
        ('{"answer": 5, "cites": ["S4"]}', 'expected an "answer" string beside "cites"'),
        ('{"cites": ["S4"]}', 'expected an "answer" string beside "cites"'),
        ('{"answer": "Job failed.", "cites": [["S4"]]}', "must be a source id string, got list"),
    ],
)
def test_cites_wrong_shapes(output: str, fragment: str) -> None:
    verdict = check(output)
    assert (verdict.status, verdict.format) == ("unparseable", "cites")
    assert fragment in (verdict.error or "")


def test_cites_format_forced_on_prose_without_a_list() -> None:
    verdict = check("Job job-17 failed.", fmt="cites")
    assert verdict.status == "unparseable"
    assert "no cites: [...] list found" in (verdict.error or "")
