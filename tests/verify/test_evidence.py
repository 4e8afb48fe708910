"""The evidence (quote-first) format: <evidence> items, then the answer."""

from __future__ import annotations

import pytest

from kits.verifykit import S2, check, only_citation, reasons

EVIDENCE = (
    "<evidence>\n"
    "[S1] Employees are entitled to 16 weeks of paid parental leave\n"
    "[S2] tops up statutory parental allowance to full salary for the first 14 weeks\n"
    "</evidence>\n"
)


def test_evidence_with_several_items() -> None:
    verdict = check(EVIDENCE + "Employees get 16 weeks [S1]. Germany tops up 14 weeks [S2].")
    assert verdict.format == "evidence"
    assert verdict.status == "grounded"
    spans = [c.citations[0].span for c in verdict.claims]
    assert spans == [(0, 57), (24, 98)]
    assert S2[24:98] == "tops up statutory parental allowance to full salary for the first 14 weeks"


def test_evidence_sentence_without_marker_cites_all_evidence() -> None:
    verdict = check(EVIDENCE + "Employees get 16 weeks, and 14 in Germany.")
    (c,) = verdict.claims
    assert [x.source for x in c.citations] == ["S1", "S2"]
    assert c.kept


def test_evidence_marker_selects_only_that_sources_evidence() -> None:
    verdict = check(EVIDENCE + "Germany tops up for 14 weeks [S1].")
    assert reasons(verdict) == [["number_not_in_source"]]


def test_evidence_marker_without_an_evidence_item_has_no_quote() -> None:
    verdict = check(EVIDENCE + "Contractors are not eligible [S3].")
    assert reasons(verdict) == [["quote_missing"]]


def test_evidence_quote_from_the_wrong_source() -> None:
    out = "<evidence>[S2] Employees are entitled to 16 weeks</evidence>\nEmployees get 16 weeks."
    assert reasons(check(out)) == [["quote_in_other_source"]]


def test_evidence_quote_that_was_edited() -> None:
    out = "<evidence>[S2] to full salary for the first 16 weeks</evidence>\nGermany: 16 weeks."
    assert reasons(check(out)) == [["quote_not_found"]]


def test_evidence_item_wrapped_over_lines_and_answer_tags() -> None:
    out = (
        "<EVIDENCE>\n[1] Employees are entitled\n  to 16 weeks of paid parental leave\n</Evidence>"
        "\n<answer>Employees get 16 weeks [1].</answer>"
    )
    verdict = check(out)
    assert verdict.status == "grounded"
    assert only_citation(verdict).span == (0, 57)


@pytest.mark.parametrize(
    "output",
    [
        "<evidence>\n[S1] Employees are entitled to 16 weeks\nEmployees get 16 weeks [S1].",
        EVIDENCE + "<evidence>[S2] tops up statutory parental allowance",
        "<evidence>[S1] Employees are entitled to 16 weeks</evidence>\n<evidence>",
    ],
)
def test_unclosed_evidence_is_unparseable(output: str) -> None:
    verdict = check(output)
    assert (verdict.status, verdict.format) == ("unparseable", "evidence")
    assert "not closed" in (verdict.error or "")


@pytest.mark.parametrize("marker", ["[S1, S3]", "[S1][S3]", "[1, 3]"])
def test_evidence_item_with_several_ids(marker: str) -> None:
    out = (
        f"<evidence>\n{marker} paid parental leave unless local law provides\n</evidence>\n"
        "Leave can be longer where local law provides more [S1]."
    )
    verdict = check(out)
    assert verdict.status == "grounded"
    assert [c.source for c in verdict.claims[0].citations] == ["S1"]


def test_evidence_with_unknown_id() -> None:
    out = "<evidence>[S9] Employees are entitled to 16 weeks</evidence>\nEmployees get 16 weeks."
    verdict = check(out)
    c = only_citation(verdict)
    assert (c.ref, c.source, c.reason) == ("S9", None, "unknown_source")
