"""The inline format: marker forms, what is not a marker, sentence splitting, and sentences
with no marker (unmarked claim or no citation)."""

from __future__ import annotations

import pytest

from kits.verifykit import check, only_citation, reasons
from quotebound import Policy

# -- markers and sentences ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "Employees get 16 weeks and Germany pays 14 weeks [1][2].",
        "Employees get 16 weeks and Germany pays 14 weeks [1, 2].",
        "Employees get 16 weeks and Germany pays 14 weeks [1; 2].",
        "Employees get 16 weeks and Germany pays 14 weeks [1 and 2].",
        "Employees get 16 weeks and Germany pays 14 weeks [S1][S2].",
        "Employees get 16 weeks and Germany pays 14 weeks [S1, 2].",
        "Employees get 16 weeks [1] and Germany pays 14 weeks [2].",
        "Employees get 16 weeks and Germany pays 14 weeks. [1][2]",
        "Employees get 16 weeks and Germany pays 14 weeks.[1] [2]",
        "Employees get 16 weeks and Germany pays 14 weeks (S1, S2).",
    ],
)
def test_inline_marker_forms(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "grounded"
    (c,) = verdict.claims
    assert [x.source for x in c.citations] == ["S1", "S2"]
    assert c.text == "Employees get 16 weeks and Germany pays 14 weeks."


def test_marker_after_the_full_stop_belongs_to_the_sentence_before() -> None:
    verdict = check("Employees get 16 weeks. [1] Germany pays 14 weeks. [2]")
    assert verdict.status == "grounded"
    assert [(c.text, c.citations[0].source) for c in verdict.claims] == [
        ("Employees get 16 weeks.", "S1"),
        ("Germany pays 14 weeks.", "S2"),
    ]


def test_marker_after_the_full_stop_still_fails_on_the_wrong_source() -> None:
    verdict = check("Employees get 16 weeks. [2] Germany pays 14 weeks. [1]")
    assert verdict.status == "ungrounded"
    assert reasons(verdict) == [["number_not_in_source"], ["number_not_in_source"]]


@pytest.mark.parametrize("prose", ["[sic]", "[citation needed]", "[Note]", "[emphasis added]"])
def test_bracketed_prose_is_not_a_marker(prose: str) -> None:
    verdict = check(f"Germany pays 14 weeks {prose}.")
    (c,) = verdict.claims
    assert c.citations == ()
    assert c.reason == "unmarked_claim"
    assert prose in c.text


def test_sic_beside_a_real_marker_keeps_only_the_marker() -> None:
    verdict = check("Germany pays 14 weeks [sic] [2].")
    c = only_citation(verdict)
    assert c.source == "S2"
    assert verdict.claims[0].text == "Germany pays 14 weeks [sic]."


@pytest.mark.parametrize(
    "output",
    [
        "Germany pays 14 weeks, see [2](https://hr.example/de).",
        "Germany pays 14 weeks, see [S2](https://hr.example/de).",
        "Germany pays 14 weeks, see [the addendum](https://hr.example/de).",
    ],
)
def test_markdown_links_are_not_markers(output: str) -> None:
    verdict = check(output)
    (c,) = verdict.claims
    assert c.citations == ()
    assert c.reason == "unmarked_claim"
    assert verdict.status == "ungrounded"


def test_parenthesised_number_is_prose_but_parenthesised_id_is_a_marker() -> None:
    assert check("Germany pays 14 weeks (2).").claims[0].reason == "unmarked_claim"
    verdict = check("Germany pays 14 weeks (S2).")
    assert verdict.status == "grounded"
    assert only_citation(verdict).source == "S2"


@pytest.mark.parametrize(
    "output",
    [
        "Dr. Weber confirmed that employees get 16 weeks [1].",
        "Some countries, e.g. Germany, pay more than 16 weeks [1].",
        "Leave is approx. 16 weeks [1].",
        "Weber et al. report 16 weeks [1].",
        "Policy owner J. Weber grants 16 weeks [1].",
        "Leave is 16 weeks, i.e. four months [1].",
        "Leave is 16 weeks vs. 14 in Germany [1][2].",
    ],
)
def test_abbreviations_do_not_split_sentences(output: str) -> None:
    verdict = check(output)
    assert len(verdict.claims) == 1
    assert verdict.claims[0].kept
    assert verdict.status == "grounded"


@pytest.mark.parametrize(
    "output",
    [
        "The U.S. policy grants 16 weeks [1].",
        "The job job-17 started at 03:00 a.m. and failed [S4].",
        "A Ph.D. student also gets 16 weeks [1].",
    ],
)
def test_initialisms_do_not_split_sentences(output: str) -> None:
    verdict = check(output)
    assert len(verdict.claims) == 1
    assert verdict.status == "grounded"


def test_initialism_at_a_real_sentence_end_still_splits() -> None:
    verdict = check("Leave is 12 weeks in the U.S. The German plan pays 14 weeks [2].")
    assert [(c.text, c.reason) for c in verdict.claims] == [
        ("Leave is 12 weeks in the U.S.", "unmarked_claim"),
        ("The German plan pays 14 weeks.", None),
    ]
    assert verdict.status == "partial"


def test_list_items_and_headings() -> None:
    output = (
        "## Leave\nHere is what the policy says:\n- Employees get 16 weeks [1]\n"
        "- Germany pays 14 weeks [2]"
    )
    verdict = check(output)
    assert [c.text for c in verdict.claims] == ["Employees get 16 weeks", "Germany pays 14 weeks"]
    assert verdict.status == "grounded"


def test_a_list_item_that_is_a_fragment_is_dropped_when_strict_and_noted_otherwise() -> None:
    raw = "- Employees get 16 weeks [1]\n- Germany 14 [2]"
    verdict = check(raw, policy=Policy(strict=True))
    assert [(c.text, c.kept, c.reason) for c in verdict.claims] == [
        ("Employees get 16 weeks", True, None),
        ("Germany 14", False, "claim_fragment"),
    ]
    assert verdict.claims[1].citations[0].valid  # the citation itself passed its checks
    assert "complete sentence" in verdict.failures[0]
    noted = check(raw)
    assert [(c.kept, c.notes) for c in noted.claims] == [(True, ()), (True, ("a fragment",))]
    assert noted.status == "grounded" and noted.failures == []


def test_wrapped_lines_are_one_sentence() -> None:
    verdict = check("Employees are entitled to\n16 weeks of paid leave [1].")
    assert [c.text for c in verdict.claims] == ["Employees are entitled to 16 weeks of paid leave."]
    assert verdict.status == "grounded"


def test_inline_prose_quoting_a_json_object_stays_inline() -> None:
    verdict = check('The tool returned {"state": "failed"} for job-17 [S4].')
    assert verdict.format == "inline"
    assert verdict.status == "grounded"


# -- unmarked claims and no citation -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("Reimbursements settle in 14 days.", "unmarked_claim"),
        ("The policy changed in January.", "unmarked_claim"),
        ("Leave is 16 weeks long!", "unmarked_claim"),
        ("The policy is generous.", "no_citation"),
        ("I am sorry this happened.", "no_citation"),
    ],
)
def test_unmarked_claim_vs_no_citation(sentence: str, reason: str) -> None:
    verdict = check(f"Employees get 16 weeks [1]. {sentence}")
    assert verdict.status == "partial"
    assert [c.kept for c in verdict.claims] == [True, False]
    assert verdict.claims[1].reason == reason
    assert verdict.claims[1].citations == ()


def test_one_unknown_marker_beside_a_valid_one_is_reported_not_served() -> None:
    verdict = check("Employees get 16 weeks [1][9].")
    (c,) = verdict.claims
    assert c.kept
    assert [(x.source, x.valid, x.reason) for x in c.citations] == [
        ("S1", True, None),
        (None, False, "unknown_source"),
    ]
    assert verdict.to_dict()["counts"] == {
        "claims": 1,
        "kept": 1,
        "dropped": 0,
        "citations": 2,
        "valid_citations": 1,
    }
