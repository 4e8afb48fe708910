"""Policy: what a Policy accepts, and the user message (not evidence unless the policy says so)
beside tool sources."""

from __future__ import annotations

from typing import Any

import pytest

from kits.verifykit import S1, S4, check, one, only_citation
from quotebound import Policy, PolicyError, Source, WorkingSet

# -- constructing a policy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs", [{"min_quote_words": 0}, {"min_quote_words": 5, "max_quote_words": 4}]
)
def test_nonsense_policy_raises(kwargs: dict[str, int]) -> None:
    with pytest.raises(PolicyError):
        Policy(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sentinels": "NO_ANSWER"},
        {"user_is_evidence": "no"},
        {"min_quote_words": "4"},
        {"max_quote_words": None},
        {"sentinels": ("NO_ANSWER", 5)},
    ],
)
def test_policy_of_the_wrong_type_raises_policy_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        Policy(**kwargs)


@pytest.mark.parametrize("bad", [("",), ("   ",), ("ok", "\n")])
def test_empty_sentinel_is_a_policy_error(bad: tuple[str, ...]) -> None:
    with pytest.raises(PolicyError):
        Policy(sentinels=bad)


# -- user message and tool sources -------------------------------------------------------------


USER = WorkingSet(
    [
        Source("S1", S1),
        Source("doc_user", "My manager told me I get 20 weeks of parental leave.", kind="user"),
        Source("tool_get_job", S4, kind="tool"),
    ]
)


@pytest.mark.parametrize(
    "output",
    [
        "You get 20 weeks [doc_user].",
        "You get 20 weeks [2].",
        '{"answer": "You get 20 weeks.", "cites": ["doc_user"]}',
        "You get 20 weeks.\ncites: [doc_user]",
        one("You get 20 weeks", "doc_user", "I get 20 weeks of parental leave"),
        "<evidence>[doc_user] I get 20 weeks of parental leave</evidence>\nYou get 20 weeks.",
    ],
)
def test_citing_the_user_message_fails_by_default(output: str) -> None:
    verdict = check(output, USER)
    c = only_citation(verdict)
    assert (c.source, c.reason, c.span) == ("doc_user", "cites_user_message", None)
    assert verdict.status == "ungrounded"
    allowed = check(output, USER, policy=Policy(user_is_evidence=True))
    assert allowed.status == "grounded"
    assert only_citation(allowed).valid


def test_user_is_evidence_still_checks_numbers() -> None:
    policy = Policy(user_is_evidence=True)
    verdict = check("You get 30 weeks [doc_user].", USER, policy=policy)
    assert only_citation(verdict).reason == "number_not_in_source"


def test_tool_payload_is_citable() -> None:
    verdict = check("Job job-17 exited with code 137 [tool_get_job].", USER)
    assert verdict.status == "grounded"
