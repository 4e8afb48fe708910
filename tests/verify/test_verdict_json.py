"""Verdict.from_dict: the one reader of stored verdicts, the inverse of to_dict."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quotebound import Source, WorkingSet, verify
from quotebound.entailment.base import Backend, Judgement
from quotebound.entailment.tier import check_entailment
from quotebound.errors import InputError
from quotebound.verdict import Verdict

WS = WorkingSet(
    [
        Source("S1", "Employees are entitled to 16 weeks of paid parental leave."),
        Source("S2", "Contractors are not eligible for company-paid parental leave."),
    ]
)
OUTPUTS = [
    (
        '{"answerable": true, "claims": [{"text": "Employees get 16 weeks.", "citations": '
        '[{"source": "S1", "quote": "entitled to 16 weeks of paid parental leave"}, '
        '{"source": "S9", "quote": "x"}]}, {"text": "Leave is 20 weeks.", "citations": '
        '[{"source": "S1", "quote": "entitled to 16 weeks of paid"}]}], "missing": ""}',
        "json",
    ),
    ("Employees get 16 weeks of leave [S1]. Contractors get none [2].", "inline"),
    ('{"answerable": false, "claims": [], "missing": "the pay rate"}', "json"),
    ("not json at all {", "json"),
]


class _Says(Backend):
    name = "says"
    version = "1"

    def judge(self, claim: str, evidence: str) -> Judgement:
        label = "supported" if "16" in claim else "unrelated"
        return Judgement(label, 0.9, self.name, self.version)


@pytest.mark.parametrize(("raw", "fmt"), OUTPUTS)
def test_a_verdict_reads_back_as_it_was(raw: str, fmt: str) -> None:
    for verdict in (verify(WS, raw, fmt), check_entailment(verify(WS, raw, fmt), WS, _Says())):
        stored = json.loads(json.dumps(verdict.to_dict()))  # as a trace stores it
        back = Verdict.from_dict(stored)
        assert back == verdict
        assert back.to_dict() == stored


def test_a_stored_verdict_keeps_its_normalisation_version() -> None:
    stored = verify(WS, OUTPUTS[0][0], "json").to_dict()
    stored["normalization"] = "qb-norm-0"
    assert Verdict.from_dict(stored).to_dict()["normalization"] == "qb-norm-0"


def _stored() -> dict[str, Any]:
    return json.loads(json.dumps(verify(WS, OUTPUTS[0][0], "json").to_dict()))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(version=99), "version 99 is newer"),
        (lambda d: d.update(status="fine"), "unknown status 'fine'"),
        (lambda d: d.update(claims={}), "claims must be a list"),
        (lambda d: d["claims"][0].update(kept="yes"), "claims[0]: kept must be a bool"),
        (
            lambda d: d["claims"][1]["citations"][0].update(span=[1]),
            "claims[1].citations[0]: span must be [start, end]",
        ),
        (lambda d: d["claims"][0]["citations"].append(3), "citations[2] must be a JSON object"),
        (lambda d: d.update(tiers="code"), "tiers must be a list of strings"),
    ],
)
def test_a_malformed_stored_verdict_is_a_clear_input_error(change: Any, message: str) -> None:
    data = _stored()
    change(data)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Verdict.from_dict(data, "trace t1: verdict")
    assert Verdict.from_dict(_stored()) == verify(WS, OUTPUTS[0][0], "json")


def test_an_older_verdict_without_the_newer_fields_reads() -> None:
    data = _stored()
    for key in ("tiers", "normalization", "version", "allowed_ids"):
        del data[key]
    for claim in data["claims"]:
        for c in claim["citations"]:
            del c["entailment"]
    back = Verdict.from_dict(data)
    assert back.tiers == ("code",) and back.allowed_ids == ()
    assert back.claims == verify(WS, OUTPUTS[0][0], "json").claims
