"""Source ids in verify(): exact membership, never fuzzy; bare numbers are one-based
positions, an id of the set wins over a position."""

from __future__ import annotations

import pytest

from kits.verifykit import S2, WS, check, one, only_citation
from quotebound import Source, WorkingSet

IDS = WorkingSet(
    [
        Source("doc_9", "Refunds are issued within 7 days of the request being approved."),
        Source("doc_12", "The warranty covers parts and labour for 24 months from purchase."),
        Source("S2", "Shipping is free on orders above 50 euros within the European Union."),
    ]
)


@pytest.mark.parametrize(
    ("marker", "expected_ref"),
    [
        ("[doc_99]", "doc_99"),
        ("[doc_90]", "doc_90"),
        ("[doc_1]", "doc_1"),
        ("[DOC_9]", "DOC_9"),
        ("[doc-9]", "doc-9"),
        ("[s2]", "s2"),
        ("[S 2]", None),  # not a marker at all: a space inside a token
        ("[0]", "0"),
        ("[4]", "4"),
        ("[-1]", "-1"),
        ("[01x]", "01x"),
    ],
)
def test_inline_fuzzy_ids_are_unknown(marker: str, expected_ref: str | None) -> None:
    verdict = check(f"Refunds are issued within 7 days {marker}.", IDS)
    assert verdict.status == "ungrounded"
    (c,) = verdict.claims
    if expected_ref is None:
        assert c.reason == "unmarked_claim"
        assert c.citations == ()
    else:
        assert c.reason == "no_valid_citation"
        (citation,) = c.citations
        assert (citation.ref, citation.source, citation.reason) == (
            expected_ref,
            None,
            "unknown_source",
        )


@pytest.mark.parametrize("ref", ["doc_99", "doc_1", "s2", "S7", "0", "6", "２", "", "S2 S2"])
def test_json_fuzzy_ids_are_unknown(ref: str) -> None:
    ws = WorkingSet([*WS.sources[:4], Source("doc_9", "Refunds are issued within 7 days.")])
    verdict = check(one("Employees get 16 weeks", ref, "entitled to 16 weeks of paid"), ws)
    c = only_citation(verdict)
    assert c.reason == "unknown_source"
    assert c.source is None
    assert verdict.status == "ungrounded"
    assert f"cites {ref.strip()!r}, which was not sent" in (c.message or "")


@pytest.mark.parametrize(
    ("marker", "source"),
    [("[1]", "S1"), ("[S1]", "S1"), ("[5]", "S5"), ("[S5]", "S5")],
)
def test_inline_numbers_are_one_based_positions(marker: str, source: str) -> None:
    # (a claim about what its source says: one that shares nothing is unrelated_evidence)
    claim = {"S1": "Employees are entitled to leave", "S5": "Refunds are issued"}[source]
    verdict = check(f"{claim} {marker}.")
    assert only_citation(verdict).source == source
    assert verdict.status == "grounded"


@pytest.mark.parametrize("marker", ["[S7]", "[6]", "[0]", "[S0]", "[10]"])
def test_out_of_range_ids_with_five_sources(marker: str) -> None:
    verdict = check(f"Employees get 16 weeks {marker}.")
    c = only_citation(verdict)
    assert c.reason == "unknown_source"
    assert c.ref == marker[1:-1]


def test_exact_id_wins_over_position() -> None:
    ws = WorkingSet([Source("2", "The office opens at 9 every weekday."), Source("1", "Closed.")])
    verdict = check("The office opens at 9 [1].", ws)
    # "1" is an id of the set (the second source), so it is that source, not the first one.
    c = only_citation(verdict)
    assert c.source == "1"
    assert c.reason == "number_not_in_source"
    assert check("The office opens at 9 [2].", ws).claims[0].citations[0].source == "2"


def test_json_source_as_integer_is_a_position_and_whitespace_is_ignored() -> None:
    for ref in (2, " S2 ", "2"):
        verdict = check(one("Germany pays 14 weeks", ref, "full salary for the first 14 weeks"))
        c = only_citation(verdict)
        assert (c.source, c.valid) == ("S2", True)
        assert S2[c.span[0] : c.span[1]] == "full salary for the first 14 weeks"


def test_json_source_true_is_not_an_id() -> None:
    verdict = check(one("Germany pays 14 weeks", True, "full salary for the first 14 weeks"))
    assert verdict.status == "unparseable"
    assert "claims[0].citations[0].source" in (verdict.error or "")


def test_inline_doc_style_ids() -> None:
    verdict = check("Parts and labour are covered for 24 months [doc_12].", IDS)
    assert verdict.status == "grounded"
    assert only_citation(verdict).source == "doc_12"
