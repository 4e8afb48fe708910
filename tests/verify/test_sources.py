"""Sources and working sets as verify() receives them: what is refused, and what is kept apart."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kits.verifykit import check, reasons
from quotebound import Source, SourceError, WorkingSet


@pytest.mark.parametrize(
    "kwargs",
    [
        {"id": "", "text": "x"},
        {"id": "   ", "text": "x"},
        {"id": " S1", "text": "x"},
        {"id": "S1\n", "text": "x"},
        {"id": 1, "text": "x"},
        {"id": None, "text": "x"},
        {"id": "S1", "text": None},
        {"id": "S1", "text": b"bytes"},
        {"id": "S1", "text": "x", "kind": "pdf"},
        {"id": "S1", "text": "x", "kind": "User"},
        {"id": "S1", "text": "x", "kind": None},
        {"id": "S1", "text": "x", "page": 0},
        {"id": "S1", "text": "x", "page": -3},
        {"id": "S1", "text": "x", "page": True},
        {"id": "S1", "text": "x", "page": "3"},
        {"id": "S1", "text": "x", "page": 2.0},
        {"id": "S1", "text": "x", "updated": "2026-13-01"},
        {"id": "S1", "text": "x", "updated": "last week"},
        {"id": "S1", "text": "x", "title": 5},
        {"id": "S1", "text": "x", "url": ["https://x"]},
    ],
)
def test_bad_sources_raise_source_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(SourceError):
        Source(**kwargs)


def test_good_source_edge_values() -> None:
    s = Source("S1", "", kind="tool", page=1, updated="2026-01-31T10:00:00")
    assert s.to_dict() == {
        "id": "S1",
        "text": "",
        "kind": "tool",
        "page": 1,
        "updated": "2026-01-31T10:00:00",
    }
    assert Source.from_dict(s.to_dict()) == s


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"id": "S1", "text": "x", "body": "y"}, "unknown field(s) body"),
        ({"id": "S1"}, "missing field 'text'"),
        ({"text": "x"}, "missing field 'id'"),
        (["S1", "x"], "must be a JSON object"),
    ],
)
def test_source_from_dict_errors(data: Any, fragment: str) -> None:
    with pytest.raises(SourceError, match=re.escape(fragment)):
        Source.from_dict(data)


def test_duplicate_ids_raise() -> None:
    with pytest.raises(SourceError, match="duplicate source id 'S1'"):
        WorkingSet([Source("S1", "a"), Source("S2", "b"), Source("S1", "c")])
    with pytest.raises(SourceError, match="duplicate"):
        WorkingSet.from_dicts([{"id": "a", "text": "x"}, {"id": "a", "text": "x"}])


def test_working_set_rejects_non_sources_and_keeps_near_ids_apart() -> None:
    with pytest.raises(SourceError, match="got dict at 1"):
        WorkingSet([Source("S1", "a"), {"id": "S2", "text": "b"}])  # type: ignore[list-item]
    ws = WorkingSet([Source("doc_9", "a"), Source("doc_99", "b"), Source("Doc_9", "c")])
    assert ws.ids == ("doc_9", "doc_99", "Doc_9")
    assert "doc_990" not in ws
    assert ws.get("doc_9 ") is None
    assert ws.nth(0) is None
    assert ws.nth(4) is None


def test_empty_working_set_rejects_every_citation() -> None:
    ws = WorkingSet([])
    verdict = check("Employees get 16 weeks [1].", ws)
    assert reasons(verdict) == [["unknown_source"]]
    assert verdict.allowed_ids == ()
