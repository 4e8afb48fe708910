"""verify()'s own arguments, outputs with nothing to check, and the verdict as a dict."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import WS, check
from quotebound import InputError, Source, verify


def test_caller_errors_raise_input_error() -> None:
    with pytest.raises(InputError, match="needs a WorkingSet"):
        verify([Source("S1", "x")], "x")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown format 'xml'"):
        verify(WS, "x", format="xml")
    with pytest.raises(InputError, match="must be a string, got bytes"):
        verify(WS, b"x")  # type: ignore[arg-type]


@pytest.mark.parametrize("output", ["", "   ", "\n\n", "[1]", "...", "- \n- "])
def test_empty_and_marker_only_outputs_are_ungrounded(output: str) -> None:
    verdict = check(output)
    assert verdict.status == "ungrounded"
    assert verdict.claims == ()


def test_verdict_dict_round_trips_through_json() -> None:
    verdict = check("Employees get 16 weeks [1]. Germany pays 16 weeks [2]. It is nice.")
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["status"] == "partial"
    assert data["counts"] == {
        "claims": 3,
        "kept": 1,
        "dropped": 2,
        "citations": 2,
        "valid_citations": 1,
    }
    assert data["allowed_ids"] == ["S1", "S2", "S3", "S4", "S5"]
    assert data["failures"] == [
        "claim 2: number 16 not found in S2",  # the citation's own failure, not "no valid..."
        "claim 3 cites no source",
    ]
