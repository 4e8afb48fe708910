"""Abstention: the exact sentinels in every format, configured sentinels, and
``answerable: false``."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import check, cit, claim
from quotebound import Policy


@pytest.mark.parametrize(
    "output",
    [
        "Not covered by the provided documents.",
        "INSUFFICIENT_CONTEXT",
        "  \n INSUFFICIENT_CONTEXT \n\t",
        "\nNot covered by the provided documents.\n",
    ],
)
def test_exact_sentinel_abstains(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "abstained"
    assert verdict.claims == ()
    assert verdict.answerable is False


@pytest.mark.parametrize(
    "output",
    [
        "Not covered by the provided documents",
        "not covered by the provided documents.",
        "NOT COVERED BY THE PROVIDED DOCUMENTS.",
        "Sorry: INSUFFICIENT_CONTEXT",
        "INSUFFICIENT_CONTEXT.",
        "insufficient_context",
    ],
)
def test_near_sentinels_do_not_abstain(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "ungrounded"
    assert verdict.answerable is True
    assert [c.reason for c in verdict.claims] == ["no_citation"]


def test_sentinel_inside_a_longer_answer_is_not_abstention() -> None:
    verdict = check("Not covered by the provided documents. But employees get 16 weeks [1].")
    assert verdict.status == "partial"
    assert [(c.kept, c.reason) for c in verdict.claims] == [(False, "no_citation"), (True, None)]


def test_configured_sentinel() -> None:
    added = Policy().with_sentinel("  NO_ANSWER ")
    assert added.sentinels[-1] == "NO_ANSWER"
    assert check("NO_ANSWER", policy=added).status == "abstained"
    assert check("INSUFFICIENT_CONTEXT", policy=added).status == "abstained"
    assert check("NO_ANSWER").status == "ungrounded"
    assert check("NO_ANSWER here", policy=added).status == "ungrounded"
    replaced = Policy(sentinels=("NO_ANSWER",))
    assert check("NO_ANSWER", policy=replaced).status == "abstained"
    assert check("INSUFFICIENT_CONTEXT", policy=replaced).status == "ungrounded"


@pytest.mark.parametrize("fmt", ["json", "inline", "evidence", "cites"])
def test_sentinel_abstains_in_every_explicit_format(fmt: str) -> None:
    verdict = check("INSUFFICIENT_CONTEXT", fmt=fmt)
    assert verdict.status == "abstained"
    assert verdict.format == fmt


def test_json_answerable_false_abstains_and_keeps_missing() -> None:
    raw = json.dumps(
        {
            "answerable": False,
            "claims": [claim("Employees get 99 weeks", cit("S9", "nothing"))],
            "missing": "No policy on home office furniture was provided.",
        }
    )
    verdict = check(raw)
    assert verdict.status == "abstained"
    assert verdict.claims == ()
    assert verdict.missing == "No policy on home office furniture was provided."


def test_evidence_then_sentinel_abstains() -> None:
    verdict = check("<evidence>\n</evidence>\nINSUFFICIENT_CONTEXT")
    assert verdict.status == "abstained"


@pytest.mark.parametrize(
    "output",
    [
        '{"answerable": false, "cites": []}',
        '{"answerable": false, "answer": "The documents do not cover this.", "cites": []}',
    ],
)
def test_cites_format_answerable_false_abstains(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "abstained"
    assert verdict.claims == ()


@pytest.mark.parametrize(
    "output",
    [
        '{"answer": "INSUFFICIENT_CONTEXT", "cites": []}',
        '{"answer": "Not covered by the provided documents.", "cites": []}',
        "INSUFFICIENT_CONTEXT\ncites: []",
    ],
)
def test_cites_format_sentinel_answer_abstains(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "abstained"
