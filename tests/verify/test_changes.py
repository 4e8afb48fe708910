"""A near-copy of a quote that changes a word (issue 53): a reversal or a narrowing is dropped
as ``quote_word_changed`` and named; a faithful near-copy, a clause left out and a claim that
does not follow its quote are kept (the last is the support tier's to judge)."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import check, one, only_citation
from quotebound import Source, WorkingSet
from quotebound.text.changes import changed_word
from quotebound.text.normalize import normalize

# issue 53's one-word contradictions, each with its quote
CHANGED = [
    (
        "The forum promotes dialogue between similar viewpoints and political parties.",
        "The forum promotes dialogue between different viewpoints and political parties.",
        "'similar' for the quote's 'different'",
    ),
    (
        "A VideoGuard UK receiver is required to view unencrypted content.",
        "A VideoGuard UK receiver is required to view encrypted content.",
        "'unencrypted' for the quote's 'encrypted'",
    ),
    (
        "The busiest container port in the country is the Port of Long Beach.",
        "The second busiest container port in the country is the Port of Long Beach.",
        "the quote's 'second' left out",
    ),
    (
        "Contractors are eligible for company-paid parental leave.",
        "Contractors are not eligible for company-paid parental leave.",
        "the quote's 'not' left out",
    ),
    (
        "All employees in the Berlin office may work from home on Fridays.",
        "Almost all employees in the Berlin office may work from home on Fridays.",
        "the quote's 'almost' left out",
    ),
    (
        "The port handled 40 million tons of cargo in 2019.",
        "The port handled about 40 million tons of cargo in 2019.",
        "the quote's 'about' left out",
    ),
    (
        "Employees may not carry over their unused leave to the next year.",
        "Employees may carry over their unused leave to the next year.",
        "'not', which the quote does not say",
    ),
]


@pytest.mark.parametrize(("claim", "quote", "named"), CHANGED)
def test_a_near_copy_that_reverses_or_narrows_its_quote_is_dropped(
    claim: str, quote: str, named: str
) -> None:
    ws = WorkingSet([Source("S1", quote)])
    cited = only_citation(check(one(claim, "S1", quote), ws))
    assert cited.reason == "quote_word_changed"
    assert named in (cited.message or "")
    assert cited.span is not None  # the verbatim quote stays shown


@pytest.mark.parametrize(
    ("claim", "quote"),
    [
        # the quote's own words, less what stands around them
        (
            "Employees get 16 weeks of paid parental leave.",
            "Employees are entitled to 16 weeks of paid parental leave unless local law "
            "provides more.",
        ),
        # a clause left out, its negation with it: not a negation dropped
        (
            "We train a harmless AI assistant through self-improvement.",
            "We train a harmless AI assistant through self-improvement, without any human "
            "labels identifying harmful outputs.",
        ),
        # "about" as a preposition, not a hedge
        (
            "Information on leave is in the employee handbook.",
            "Information about leave is in the employee handbook.",
        ),
        # a true synonym
        (
            "Staff get 16 weeks of paid parental leave in Germany.",
            "Employees get 16 weeks of paid parental leave in Germany.",
        ),
        # the same negation kept, said otherwise
        (
            "Contractors cannot get company-paid parental leave.",
            "Contractors are not eligible for company-paid parental leave.",
        ),
    ],
)
def test_a_faithful_near_copy_is_kept(claim: str, quote: str) -> None:
    ws = WorkingSet([Source("S1", quote)])
    assert only_citation(check(one(claim, "S1", quote), ws)).reason is None


def test_a_claim_that_does_not_follow_its_quote_is_not_read() -> None:
    # few of the claim's words are the quote's: the support tier judges it, not this rule
    assert (
        changed_word(
            normalize("Most staff are eligible for the scheme."),
            normalize("The second scheme is open to all staff in Germany from 2020 onwards."),
        )
        is None
    )


def test_only_a_citation_with_a_quote_is_read() -> None:
    ws = WorkingSet([Source("S1", "Contractors are not eligible for company-paid parental leave.")])
    claim = "Contractors are eligible for company-paid parental leave."
    raw = json.dumps({"answerable": True, "claims": [{"text": claim, "cites": ["S1"]}]})
    assert only_citation(check(raw, ws)).reason != "quote_word_changed"


AMAZON = (
    "A study in 1999 found one square kilometer (247 acres) of Amazon rainforest can contain "
    "about 90,790 tonnes of living plants."
)


@pytest.mark.parametrize(
    ("claim", "quote", "named"),
    [
        # a number the quote gives only as an approximation, stated bare: in any claim
        (
            "90,790 tonnes of living plants are in the Amazon rainforest.",
            AMAZON,
            "the quote's 'about' before 90,790 left out",
        ),
        ("Membership costs $40 a month.", "Membership costs roughly $40 a month.", "'roughly'"),
        # kept: the approximation said, a bound (a limit can be what the quote says), the
        # number also given bare, another number
        ("About 90,790 tonnes of living plants grow there.", AMAZON, None),
        ("The PerksPlus limit is $1000.", "Employees can expense up to $1000 for fitness.", None),
        (
            "The board has 40 members.",
            "Of the 40 members of the board, about 40 attend each meeting.",
            None,
        ),
        ("The study was made in 1999.", AMAZON, None),
    ],
)
def test_a_number_the_quote_approximates_stated_bare_is_dropped(
    claim: str, quote: str, named: str | None
) -> None:
    ws = WorkingSet([Source("S1", quote)])
    cited = only_citation(check(one(claim, "S1", quote.rstrip(".")), ws))
    if named is None:
        assert cited.reason is None, cited.message
    else:
        assert cited.reason == "quote_word_changed" and named in (cited.message or "")
