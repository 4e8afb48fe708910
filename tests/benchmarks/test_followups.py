"""The two-turn conversations of ``benchmarks.quality.followups`` (issue 51): well-formed, each
second turn pointing at a question of its set, and the rule the endpoint runs reading every
topic switch of the file alone except where a word points back ("they")."""

from __future__ import annotations

import json

import pytest

from benchmarks.common import SHARED_DATA
from benchmarks.quality.followups import conversations
from quotebound.server.followups import asked


def test_the_conversations_are_well_formed() -> None:
    rows = conversations()
    assert len(rows) == 40
    assert {(r["set"], r["kind"]) for r in rows} == {
        ("contoso", "follow-up"),
        ("contoso", "switch"),
        ("clapnq", "follow-up"),
        ("clapnq", "switch"),
    }
    assert sum(r["kind"] == "follow-up" for r in rows) == 30
    for row in rows:
        assert set(row) == {"set", "kind", "meant", "first", "second"}
        assert row["first"].strip() and row["second"].strip() and row["first"] != row["second"]
        if row["set"] == "contoso":
            assert isinstance(row["meant"], int) and 0 <= row["meant"] < 50
        else:
            assert isinstance(row["meant"], str) and row["meant"].lstrip("-").isdigit()


def test_each_second_turn_means_a_question_of_its_set() -> None:
    if not (SHARED_DATA / "clapnq").exists():
        pytest.skip("the shared data are not here")
    ids = set()
    for name in ("answerable", "unanswerable"):
        path = SHARED_DATA / "clapnq" / f"clapnq_dev_{name}.jsonl"
        ids |= {json.loads(line)["id"] for line in path.read_text("utf-8").splitlines()}
    for row in conversations():
        if row["set"] == "clapnq":
            assert row["meant"] in ids, row


def test_the_endpoint_reads_a_switch_alone_unless_a_word_points_back() -> None:
    for row in conversations():
        if row["kind"] == "switch":
            joined = asked([row["first"], row["second"]]) != row["second"]
            assert joined == (" they " in f" {row['second']} " or " he " in f" {row['second']} ")
