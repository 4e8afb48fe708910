"""Packing ranked hits into the WorkingSet: order, dense ids, dedup, budget, keys."""

from __future__ import annotations

import pytest

from quotebound import verify
from quotebound.packing import chunk_key, pack
from quotebound.sources import Source, valid_date
from quotebound.store import Hit, TraceSource


def hit(n: int, text: str, key: str = "handbook:leave.txt", **kw: object) -> Hit:
    start = kw.pop("start", n * 100)
    return Hit(
        key=key,
        version=1,
        text=text,
        hash=f"h{n}",
        start=start,
        end=start + len(text),  # type: ignore[arg-type,operator]
        score=10.0 - n,
        ordinal=n,
        **kw,
    )  # type: ignore[arg-type]


LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = "In Germany, the company tops up statutory parental allowance for the first 14 weeks."


def test_order_ids_and_keys() -> None:
    packed = pack(
        [hit(3, LEAVE, title="Leave", url="https://x/leave", pages=(4,)), hit(7, GERMANY)]
    )
    assert packed.working_set.ids == ("S1", "S2")
    first = packed.working_set.get("S1")
    assert first is not None
    assert (first.text, first.key, first.title, first.url, first.page) == (
        LEAVE,
        "handbook:leave.txt#c3",
        "Leave",
        "https://x/leave",
        4,
    )
    assert [chunk_key(h) for h in packed.hits] == ["handbook:leave.txt#c3", "handbook:leave.txt#c7"]


def test_near_duplicates_are_packed_once() -> None:
    copy = LEAVE.upper().replace(" ", "  ")  # the same after normalisation
    nearly = LEAVE.replace("more.", "more!")  # one token differs: trigram overlap stays high
    packed = pack(
        [hit(1, LEAVE), hit(2, copy, key="vendor:leave.txt"), hit(3, nearly), hit(4, GERMANY)]
    )
    assert [s.text for s in packed.working_set] == [LEAVE, GERMANY]
    assert [(d.reason, d.duplicate_of) for d in packed.dropped] == [
        ("duplicate", "S1"),
        ("duplicate", "S1"),
    ]
    assert packed.working_set.ids == ("S1", "S2")  # dense after trimming


def test_budget_skips_whole_chunks_and_keeps_ranking() -> None:
    big = "word " * 400
    packed = pack([hit(1, LEAVE), hit(2, big.strip()), hit(3, GERMANY)], budget_chars=200)
    assert [s.text for s in packed.working_set] == [LEAVE, GERMANY]
    assert [d.reason for d in packed.dropped] == ["budget"]
    assert sum(len(s.text) for s in packed.working_set) <= 200


def test_max_sources() -> None:
    hits = [hit(n, f"Distinct sentence number {n} about topic {n * 7}.") for n in range(5)]
    packed = pack(hits, max_sources=3)
    assert packed.working_set.ids == ("S1", "S2", "S3")
    assert [d.reason for d in packed.dropped] == ["max_sources", "max_sources"]


def test_packed_set_is_the_allowlist_the_verifier_uses() -> None:
    packed = pack([hit(1, LEAVE), hit(2, GERMANY)])
    raw = (
        '{"answerable": true, "claims": [{"text": "In Germany pay is topped up for 14 weeks.", '
        '"citations": [{"source": "S2", "quote": "parental allowance for the first 14 weeks"}]}, '
        '{"text": "x", "citations": [{"source": "S3", "quote": "a b c d"}]}]}'
    )
    verdict = verify(packed.working_set, raw)
    assert [c.kept for c in verdict.claims] == [True, False]
    assert verdict.claims[1].citations[0].reason == "unknown_source"


def test_trace_sources_keep_offsets_and_version() -> None:
    packed = pack([hit(2, LEAVE, start=40)])
    [traced] = TraceSource.of_pack(packed)
    assert (traced.id, traced.start, traced.end, traced.version) == ("S1", 40, 40 + len(LEAVE), 1)
    assert traced.to_source() == packed.working_set.get("S1")


def test_bad_dates_from_the_store_do_not_break_a_pack() -> None:
    packed = pack([hit(1, LEAVE, updated="last week"), hit(2, GERMANY, updated="2026-02-01")])
    assert [s.updated for s in packed.working_set] == [None, "2026-02-01"]


@pytest.mark.parametrize(
    "value, kept",
    [
        ("2026-02-01", True),
        ("2026-02-01T09:30:00", True),
        ("2026-02-01 09:30", True),
        ("2026-02-30", False),
        ("last week", False),
        ("", False),
        (None, False),
        (20260201, False),
    ],
)
def test_valid_date_keeps_what_a_source_accepts(value: object, kept: bool) -> None:
    assert valid_date(value) == (value if kept else None)  # type: ignore[arg-type]
    if kept:
        assert Source(id="S1", text="x", updated=valid_date(value)).updated == value  # type: ignore[arg-type]
