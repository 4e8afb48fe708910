"""The JSON format: framing, truncation, wrong shapes with a helpful error, quotes and cites
fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kits.verifykit import S2, answer, check, cit, claim, one, only_citation

GOOD = one("Germany pays 14 weeks", "S2", "to full salary for the first 14 weeks")


@pytest.mark.parametrize(
    "output",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"```JSON\n{GOOD}```",
        f"Here is the answer:\n```json\n{GOOD}\n```\nLet me know if you need more.",
        f"Sure! {GOOD} Hope this helps.",
        f"  \n{GOOD}\n\n",
    ],
)
def test_json_framings(output: str) -> None:
    verdict = check(output)
    assert verdict.format == "json"
    assert verdict.status == "grounded"
    c = only_citation(verdict)
    assert S2[c.span[0] : c.span[1]] == "to full salary for the first 14 weeks"


@pytest.mark.parametrize("cut", [1, 10, 40, 80, 120])
def test_truncated_json_is_unparseable(cut: int) -> None:
    verdict = check(GOOD[:-cut])
    assert verdict.status == "unparseable"
    assert verdict.format == "json"
    assert verdict.claims == ()
    assert verdict.error
    assert "JSON" in verdict.error


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"answerable": True, "claims": {"text": "x"}}, '"claims" must be a list'),
        ({"answerable": True}, '"claims" must be a list'),
        ({"answerable": "yes", "claims": []}, '"answerable" must be true or false, got str'),
        ({"answerable": True, "claims": [], "missing": 3}, '"missing" must be a string or null'),
        ({"answerable": True, "claims": ["text"]}, "claims[0] must be an object, got str"),
        (
            {"answerable": True, "claims": [{"citations": [cit("S1", "a b c d")]}]},
            "claims[0].text must be a string, got null",
        ),
        (
            {"answerable": True, "claims": [{"text": 5, "citations": []}]},
            "claims[0].text must be a string, got int",
        ),
        (
            {"answerable": True, "claims": [{"text": "x", "citations": "S1"}]},
            "claims[0].citations must be a list",
        ),
        (
            {"answerable": True, "claims": [claim("x", cit(["S1"], "a b c d"))]},
            "claims[0].citations[0].source must be a source id string, got list",
        ),
        (
            {"answerable": True, "claims": [claim("x", cit(None, "a b c d"))]},
            "claims[0].citations[0].source must be a source id string, got null",
        ),
        (
            {"answerable": True, "claims": [claim("x", cit("S1", "a b c d"), cit("S1", 7))]},
            "claims[0].citations[1].quote must be a string or null, got int",
        ),
        (
            {"answerable": True, "claims": [claim("ok"), claim("x", {"S1": "q"})]},
            "claims[1].citations[0].source",
        ),
        (
            {"answerable": True, "claims": [{"text": "x", "cites": "S1"}]},
            "claims[0].cites must be a list of source ids",
        ),
    ],
)
def test_wrong_shapes_are_unparseable_with_a_helpful_error(payload: Any, fragment: str) -> None:
    verdict = check(json.dumps(payload))
    assert verdict.status == "unparseable"
    assert verdict.claims == ()
    assert fragment in (verdict.error or "")
    assert verdict.failures == [f"the output could not be read: {verdict.error}"]


def test_top_level_list_is_unparseable() -> None:
    verdict = check(json.dumps([claim("x", cit("S1", "a b c d"))]), fmt="json")
    assert verdict.status == "unparseable"
    assert "expected a JSON object, got list" in (verdict.error or "")


def test_prose_forced_as_json_is_unparseable() -> None:
    verdict = check("Employees get 16 weeks [1].", fmt="json")
    assert verdict.status == "unparseable"
    assert "not JSON" in (verdict.error or "")


def test_empty_claims_and_empty_citations() -> None:
    verdict = check(answer())
    assert (verdict.status, verdict.claims) == ("ungrounded", ())
    verdict = check(answer(claim("Employees get 16 weeks")))
    assert verdict.claims[0].reason == "no_citation"


@pytest.mark.parametrize("quote", [None, "", "   \n"])
def test_missing_quote(quote: str | None) -> None:
    verdict = check(one("Employees get 16 weeks", "S1", quote))
    assert only_citation(verdict).reason == "quote_missing"


def test_bare_id_in_citations_needs_a_quote_but_cites_field_does_not() -> None:
    raw = answer({"text": "Employees get 16 weeks", "citations": ["S1"]})
    assert only_citation(check(raw)).reason == "quote_missing"
    verdict = check(answer({"text": "Employees get 16 weeks", "cites": ["S1", "S1"]}))
    c = only_citation(verdict)
    assert (c.valid, c.span) == (True, None)
    wrong = check(answer({"text": "Employees get 18 weeks", "cites": ["S1"]}))
    assert only_citation(wrong).reason == "number_not_in_source"


def test_markers_inside_json_claim_text_are_not_trusted() -> None:
    raw = answer(
        claim("Employees get 16 weeks [S1].", cit("S1", "entitled to 16 weeks of paid")),
        claim("Germany pays 14 weeks [S2]."),
    )
    verdict = check(raw)
    assert verdict.claims[0].text == "Employees get 16 weeks."
    assert [c.source for c in verdict.claims[0].citations] == ["S1"]
    assert verdict.claims[1].reason == "no_citation"
    assert verdict.status == "partial"
