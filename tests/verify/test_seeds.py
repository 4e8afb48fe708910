"""The seeds' worked examples, as tests (seeds 000, 002, 003, 004)."""

from __future__ import annotations

import json

import pytest

from quotebound import Policy, Source, WorkingSet, normalize, verify

# -- seed 000: reimbursement, the inline contract ---------------------------------------------

REIMBURSEMENT = WorkingSet(
    [
        Source(id="S1", text="Refunds for cancelled orders are issued within 5-7 business days."),
        Source(
            id="S2",
            text="Reimbursements settle within 30 days of approval. Per diem claims are paid "
            "on the same schedule as other reimbursements.",
            title="Reimbursement",
            url="https://hr.example/policy",
        ),
        Source(id="S3", text="Questions about expenses go to the finance help desk."),
    ]
)


def test_seed000_contract_output_is_grounded() -> None:
    out = (
        "Reimbursements settle within 30 days of approval [2]. Claims for per diem are\n"
        "paid on the same schedule [2]."
    )
    verdict = verify(REIMBURSEMENT, out)
    assert verdict.format == "inline"
    assert verdict.status == "grounded"
    assert [c.citations[0].source for c in verdict.claims] == ["S2", "S2"]


def test_seed000_headline_failure_14_days_against_30() -> None:
    verdict = verify(REIMBURSEMENT, "Reimbursements settle in 14 days [2].")
    assert verdict.status == "ungrounded"
    assert verdict.claims[0].citations[0].reason == "number_not_in_source"
    assert "14" in (verdict.claims[0].citations[0].message or "")


def test_seed000_bad_id_and_unmarked_sentence() -> None:
    out = "Refunds take 14 days [7]. Reimbursements settle in 14 days."
    verdict = verify(REIMBURSEMENT, out)
    first, second = verdict.claims
    assert first.citations[0].reason == "unknown_source"
    assert first.citations[0].ref == "7"
    assert second.reason == "unmarked_claim"
    assert second.text == "Reimbursements settle in 14 days."
    assert verdict.status == "ungrounded"


def test_seed000_refusal_is_abstention() -> None:
    verdict = verify(REIMBURSEMENT, "  Not covered by the provided documents.\n")
    assert verdict.status == "abstained"
    assert verdict.claims == ()


# -- seed 004: parental leave, 14 vs 16, repaired ---------------------------------------------

LEAVE = WorkingSet(
    [
        Source(
            id="S1",
            text="Employees are entitled to 16 weeks of paid parental leave unless local law "
            "provides more.",
            updated="2025-01-01",
        ),
        Source(
            id="S2",
            text="In Germany, the company tops up statutory parental allowance to full salary "
            "for the first 14 weeks.",
            updated="2026-01-01",
        ),
        Source(id="S3", text="Contractors are not eligible for company-paid parental leave."),
    ]
)


def _json(*claims: tuple[str, str, str]) -> str:
    return json.dumps(
        {
            "answerable": True,
            "claims": [{"text": t, "citations": [{"source": s, "quote": q}]} for t, s, q in claims],
            "missing": "",
        }
    )


def test_seed004_first_attempt_rejects_the_16_weeks_quote() -> None:
    raw = _json(
        (
            "Employees get 16 weeks of paid parental leave unless local law provides more",
            "S1",
            "Employees are entitled to 16 weeks of paid parental leave unless local law "
            "provides more.",
        ),
        (
            "In Germany the company pays full salary for the first 16 weeks",
            "S2",
            "tops up statutory parental allowance to full salary for the first 16 weeks",
        ),
    )
    verdict = verify(LEAVE, raw)
    assert verdict.status == "partial"
    assert [c.kept for c in verdict.claims] == [True, False]
    assert verdict.claims[1].citations[0].reason == "quote_not_found"
    assert "claim 2: quote not found in S2" in verdict.failures
    ok = verdict.claims[0].citations[0]
    assert ok.span is not None
    assert LEAVE.get("S1").text[ok.span[0] : ok.span[1]].endswith("provides more.")  # type: ignore[union-attr]


def test_seed004_repaired_attempt_is_grounded() -> None:
    raw = _json(
        (
            "In Germany the company tops up the statutory allowance to full salary for the "
            "first 14 weeks",
            "S2",
            "tops up statutory parental allowance to full salary for the first 14 weeks",
        ),
    )
    verdict = verify(LEAVE, raw)
    assert verdict.status == "grounded"
    span = verdict.claims[0].citations[0].span
    assert span is not None
    text = LEAVE.get("S2").text  # type: ignore[union-attr]
    assert normalize(text[span[0] : span[1]]) == normalize(
        "tops up statutory parental allowance to full salary for the first 14 weeks"
    )


def test_seed004_short_quote_parental_leave_is_rejected() -> None:
    raw = _json(("Employees get parental leave", "S1", "parental leave"))
    assert verify(LEAVE, raw).claims[0].citations[0].reason == "quote_too_short"


def test_seed004_validator_checks_the_cited_source_not_the_set() -> None:
    raw = _json(("Contractors get no leave", "S1", "Contractors are not eligible"))
    verdict = verify(LEAVE, raw)
    assert verdict.claims[0].citations[0].reason == "quote_in_other_source"
    assert "S3" in (verdict.claims[0].citations[0].message or "")


def test_seed004_answerable_false_with_missing() -> None:
    raw = '{"answerable": false, "claims": [], "missing": "No policy for Japan was provided."}'
    verdict = verify(LEAVE, raw)
    assert verdict.status == "abstained"
    assert verdict.missing == "No policy for Japan was provided."


def test_seed004_json_wrapped_in_fences_parses() -> None:
    raw = "```json\n" + _json(("Employees get 16 weeks", "S1", "entitled to 16 weeks of")) + "\n```"
    assert verify(LEAVE, raw).status == "grounded"


def test_seed004_truncated_output_is_unparseable_not_an_exception() -> None:
    raw = _json(("Employees get 16 weeks", "S1", "entitled to 16 weeks of"))[:-20]
    verdict = verify(LEAVE, raw)
    assert verdict.status == "unparseable"
    assert verdict.error and "JSON" in verdict.error


# -- seed 003: quote first, then answer -------------------------------------------------------


def test_seed003_evidence_then_answer() -> None:
    raw = (
        "<evidence>\n[S1] Employees are entitled to 16 weeks of paid parental leave\n"
        "[S2] tops up statutory parental allowance to full salary for the first 14 weeks\n"
        "</evidence>\n"
        "Employees get 16 weeks of paid parental leave. In Germany, pay is topped up to full "
        "salary for the first 14 weeks."
    )
    verdict = verify(LEAVE, raw)
    assert verdict.format == "evidence"
    assert verdict.status == "grounded"
    assert len(verdict.claims) == 2


def test_seed003_empty_evidence_and_sentinel_abstains() -> None:
    verdict = verify(LEAVE, "<evidence></evidence>\nINSUFFICIENT_CONTEXT")
    assert verdict.status == "abstained"


def test_seed003_altered_evidence_is_caught() -> None:
    raw = (
        "<evidence>[S2] tops up statutory parental allowance to full salary for the first "
        "16 weeks</evidence>\nIn Germany pay is topped up for 16 weeks [S2]."
    )
    verdict = verify(LEAVE, raw)
    assert verdict.status == "ungrounded"
    assert verdict.claims[0].citations[0].reason == "quote_not_found"


# -- seed 002: the eval slice and the job-17 example ------------------------------------------

AGENT = WorkingSet(
    [
        Source(
            id="tool_get_job",
            kind="tool",
            text='{"job": "job-17", "state": "failed", "error": "OOM after 512 MB"}',
        ),
        Source(id="doc_policy", text="Refunds take 5-7 business days after approval."),
        Source(id="doc_user", kind="user", text="I was told refunds take 2 days."),
    ]
)


@pytest.mark.parametrize(
    ("output", "status", "reason"),
    [
        # ok: job-17 is in the tool blob
        ('{"answer": "Job job-17 failed.", "cites": ["tool_get_job"]}', "grounded", None),
        # job-99 with a real id: the identifier is not in the source
        (
            '{"answer": "Job job-99 failed.", "cites": ["doc_policy"]}',
            "ungrounded",
            "identifier_not_in_source",
        ),
        # an invented id
        (
            '{"answer": "Refunds take 5-7 days.", "cites": ["doc_99"]}',
            "ungrounded",
            "unknown_source",
        ),
        # a real id but a wrong amount
        (
            '{"answer": "Refunds take 3 days.", "cites": ["doc_policy"]}',
            "ungrounded",
            "number_not_in_source",
        ),
        # no cite on a number
        ('{"answer": "Refunds take 5-7 days.", "cites": []}', "ungrounded", "unmarked_claim"),
        # citing the user's message: a policy choice, default fail
        (
            '{"answer": "Refunds take 2 days.", "cites": ["doc_user"]}',
            "ungrounded",
            "cites_user_message",
        ),
        # the trailing "cites:" line form
        ("Refunds take 5-7 business days.\ncites: [doc_policy]", "grounded", None),
    ],
)
def test_seed002_eval_slice(output: str, status: str, reason: str | None) -> None:
    verdict = verify(AGENT, output)
    assert verdict.format == "cites"
    assert verdict.status == status
    claim = verdict.claims[0]
    got = claim.citations[0].reason if claim.citations else claim.reason
    assert got == reason


def test_seed002_user_message_allowed_by_policy() -> None:
    out = '{"answer": "Refunds take 2 days.", "cites": ["doc_user"]}'
    verdict = verify(AGENT, out, policy=Policy(user_is_evidence=True))
    assert verdict.status == "grounded"


def test_seed002_fuzzy_neighbour_is_not_matched() -> None:
    ws = WorkingSet([Source(id="doc_9", text="The plan covers ergonomic chairs up to 300 EUR.")])
    verdict = verify(ws, "Chairs are covered up to 300 EUR [doc_99].")
    assert verdict.claims[0].citations[0].reason == "unknown_source"
    assert verify(ws, "Chairs are covered up to 300 EUR [doc_9].").status == "grounded"


def test_seed002_one_cite_cannot_bless_a_smuggled_amount() -> None:
    out = json.dumps(
        {"answer": "Refunds take 5-7 business days, or 1 day for members.", "cites": ["doc_policy"]}
    )
    verdict = verify(AGENT, out)
    assert verdict.claims[0].citations[0].reason == "number_not_in_source"
