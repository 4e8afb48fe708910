"""Policy and WorkingSet built by the library from options and JSON (the CLI and the server
read them through these, so neither restates a default)."""

from __future__ import annotations

import pytest

from quotebound import Policy, Source, WorkingSet
from quotebound.errors import PolicyError, SourceError
from quotebound.parsing import DEFAULT_SENTINELS


def test_options_left_out_keep_the_default_policy() -> None:
    assert Policy.from_options() == Policy()
    assert Policy.from_options(max_quote_words=12) == Policy(max_quote_words=12)
    # both bounds at once, even where one alone would cross the other default
    assert Policy.from_options(45, 50) == Policy(min_quote_words=45, max_quote_words=50)
    got = Policy.from_options(allow_user_evidence=True, sentinels=["NO ANSWER"])
    assert got.user_is_evidence and got.sentinels == (*DEFAULT_SENTINELS, "NO ANSWER")
    with pytest.raises(PolicyError, match=r"max_quote_words \(3\) is below"):
        Policy.from_options(5, 3)


def test_a_working_set_from_json_takes_a_list_or_an_object_of_sources() -> None:
    items = [{"id": "S1", "text": "One."}, {"id": "S2", "text": "Two.", "kind": "tool"}]
    expected = WorkingSet([Source("S1", "One."), Source("S2", "Two.", kind="tool")])
    for data in (items, {"sources": items}):
        assert WorkingSet.from_json(data).sources == expected.sources
    for bad in ({"a": 1}, "S1", 3, {"sources": {"id": "S1"}}):
        with pytest.raises(SourceError, match="sources must be a JSON list"):
            WorkingSet.from_json(bad)
