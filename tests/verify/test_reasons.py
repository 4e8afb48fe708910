"""The reason codes' table: each code has one stage, and docs/reasons.md says which."""

from __future__ import annotations

import re
from pathlib import Path

from quotebound.reasons import (
    CITATION_REASONS,
    ID_SPAN_FAILURES,
    REASON_STAGES,
    STAGES,
    reasons_of,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "reasons.md"


def test_every_citation_reason_has_one_stage() -> None:
    assert set(REASON_STAGES) == set(CITATION_REASONS)
    assert set(REASON_STAGES.values()) == set(STAGES)
    assert reasons_of(*STAGES) == frozenset(CITATION_REASONS)
    assert {
        "unknown_source",
        "cites_user_message",
        "quote_missing",
        "quote_too_short",
        "quote_too_long",
        "quote_not_found",
        "quote_in_other_source",
    } == ID_SPAN_FAILURES
    assert reasons_of("support") == {
        "unrelated_evidence",
        "identifier_not_in_source",
        "number_not_in_source",
        "quoted_text_not_in_source",
        "name_not_in_source",
        "quote_word_changed",
    }


def test_the_docs_table_of_stages_is_the_code_table() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", DOC.read_text(encoding="utf-8"), re.M)
    documented = {
        code: stage
        for stage, codes in rows
        if stage in STAGES
        for code in re.findall(r"`(\w+)`", codes)
    }
    assert documented == REASON_STAGES


def test_the_groupings_the_pipeline_acts_on_are_written_once_of_known_codes() -> None:
    from quotebound.reasons import AFTER_ENTAILMENT, NOT_CARRIED, REANCHORABLE, reasons_of

    known = set(CITATION_REASONS)
    assert known >= REANCHORABLE and known >= AFTER_ENTAILMENT and known >= NOT_CARRIED
    assert "quote_not_found" not in REANCHORABLE  # a made-up quote is the repair turn's
    assert {"not_entailed"} == AFTER_ENTAILMENT - REANCHORABLE
    # every support failure but quoted words is re-anchored; no entailment failure but
    # not_entailed, and only after the tier
    assert reasons_of("support") - REANCHORABLE == {"quoted_text_not_in_source"}
    assert (REANCHORABLE - {"quote_in_other_source"}) | {"not_entailed"} == NOT_CARRIED


def test_the_code_types_hold_exactly_the_tables_codes() -> None:
    from typing import get_args

    from quotebound.reasons import CLAIM_REASONS, CitationReason, ClaimReason

    assert set(get_args(CitationReason)) == set(CITATION_REASONS)
    assert set(get_args(ClaimReason)) == set(CLAIM_REASONS)


def test_a_stored_verdict_with_an_unknown_reason_is_refused_by_name() -> None:
    import pytest

    from quotebound import InputError, Verdict

    claim = {"text": "x", "kept": False, "reason": "no_valid_citation", "citations": []}
    cite = {"ref": "S1", "source": "S1", "quote": None, "valid": False, "reason": "made_up"}
    ok = Verdict.from_dict({"status": "ungrounded", "format": "json", "claims": [claim]})
    assert ok.claims[0].reason == "no_valid_citation"
    bad = {"status": "ungrounded", "format": "json", "claims": [{**claim, "citations": [cite]}]}
    with pytest.raises(InputError, match="unknown reason 'made_up'"):
        Verdict.from_dict(bad)
    with pytest.raises(InputError, match="unknown reason 'nope'"):
        Verdict.from_dict({**bad, "claims": [{**claim, "reason": "nope"}]})
