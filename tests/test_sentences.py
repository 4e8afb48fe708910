"""One sentence splitter (quotebound.text.sentences) for the chunker, the inline parser, the
contract's quote enum and the extractive provider: they agree on where sentences end."""

from __future__ import annotations

import time

import pytest

from quotebound import Source, WorkingSet, verify
from quotebound.contract import answer_schema
from quotebound.parsing import parse
from quotebound.text.sentences import sentence_spans

PROSE = [
    "Leave is 12 weeks in the U.S. Germany pays 14 weeks. Dr. Smith agrees.",
    "See Fig. 3 for the rates, e.g. the hotel cap. The cap is 180 EUR per night!",
    "Is it paid? Yes. Contractors are not eligible (see No. 4). J. Smith said so.",
    "The U.S. policy applies everywhere. It was set in 2.5 days, resp. three.",
]


@pytest.mark.parametrize("text", PROSE)
def test_the_parser_splits_prose_where_the_splitter_does(text: str) -> None:
    ws = WorkingSet([Source("S1", text)])
    claims = [c.text for c in parse(ws, text, "inline", ()).claims]
    assert claims == [text[a:b] for a, b in sentence_spans(text)]
    # the contract offers those of the sentences that are 4-40 words long as quotes
    schema = answer_schema(ws)
    option = schema["properties"]["claims"]["items"]["properties"]["citations"]["items"]
    enum = option["anyOf"][0]["properties"]["quote"].get("enum", [])
    assert enum and set(enum) <= set(claims)


def test_markers_after_the_stop_stay_with_their_sentence() -> None:
    ws = WorkingSet([Source("S1", "a"), Source("S2", "b")])
    raw = "Leave is 16 weeks. [S1] Contractors get none. [S2][S1] Done."
    claims = parse(ws, raw, "inline", ()).claims
    assert [(c.text, [x.ref for x in c.citations]) for c in claims] == [
        ("Leave is 16 weeks.", ["S1"]),
        ("Contractors get none.", ["S2", "S1"]),
        ("Done.", []),
    ]


def _seconds(raw: str, ws: WorkingSet) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        verify(ws, raw, "inline")
        best = min(best, time.perf_counter() - start)
    return best


def test_inline_parsing_grows_linearly_with_the_paragraph() -> None:
    # The sentence-end look-back once rescanned the paragraph from its start at every stop:
    # ten times the text took a hundred times as long. A generous ratio, in one run.
    ws = WorkingSet([Source("S1", "Employees get 16 weeks of paid leave.")])
    line = "Employees get 16 weeks of paid leave [S1]. "
    small, large = _seconds(line * 1_000, ws), _seconds(line * 10_000, ws)
    assert large < 40 * small, (small, large)
    long_word = "a" * 200_000 + " x. [S1]"
    assert _seconds(long_word, ws) < 40 * _seconds("a" * 20_000 + " x. [S1]", ws) + 0.05
