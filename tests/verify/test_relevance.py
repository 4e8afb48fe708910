"""Decoration caught in code: each citation's own evidence must bear on its own claim
(``unrelated_evidence``), judged per citation, always on (issue 14, part 1)."""

from __future__ import annotations

import pytest

from kits.verifykit import WS, answer, check, cit, claim, reasons
from quotebound import Policy, Source, WorkingSet
from quotebound.cards import build_cards

LEAVE = "entitled to 16 weeks of paid parental leave"
CONTRACTORS = "Contractors are not eligible for company-paid parental leave"
HOTEL_WS = WorkingSet(
    [
        Source("S1", "The hotel cap is 180 EUR per night in tier 1 cities and 140 EUR elsewhere."),
        Source(
            "S2", "Receipts must be uploaded to the expense portal within 45 days of the purchase."
        ),
        Source("S3", "Contractors are not eligible for company-paid parental leave."),
    ]
)


def test_a_claim_whose_only_citation_is_decoration_is_dropped() -> None:
    verdict = check(answer(claim("Questions go to the vendor manager.", cit("S1", LEAVE))))
    [c] = verdict.claims[0].citations
    assert (c.valid, c.reason, c.span) == (False, "unrelated_evidence", None)
    assert "shares no word with the claim" in (c.message or "")
    assert verdict.status == "ungrounded" and not verdict.claims[0].kept


def test_a_decorative_citation_beside_a_relevant_one_is_dropped_alone() -> None:
    text = "The hotel cap is 180 EUR per night in tier 1 cities and 140 EUR elsewhere."
    raw = answer(
        claim(
            text,
            cit("S1", text),
            cit("S2", "Receipts must be uploaded to the expense portal within 45 days"),
            cit("S3", CONTRACTORS),
        )
    )
    verdict = check(raw, HOTEL_WS)
    assert reasons(verdict) == [[None, "unrelated_evidence", "unrelated_evidence"]]
    assert verdict.status == "grounded"
    cards, per_claim = build_cards(verdict, HOTEL_WS)
    assert [q.source for card in cards for q in card.quotes] == ["S1"]  # no card for decoration
    assert [c.source for c in per_claim[0]] == ["S1"]


def test_a_paraphrase_sharing_one_content_word_is_kept() -> None:
    # "leave" is the one word the claim and the quote share; stems make forms meet
    for text in ("New parents may take leave.", "Employees are entitled to time off."):
        verdict = check(answer(claim(text, cit("S1", LEAVE if "leave" in text else S1_HEAD))))
        assert verdict.status == "grounded", verdict.to_dict()


S1_HEAD = "Employees are entitled to 16 weeks"


def test_numbers_only_claims() -> None:
    # the relevance rule alone (the fragment rule, below, drops these claims first)
    alone = Policy(sentences=False)
    assert check(answer(claim("16 weeks.", cit("S1", LEAVE))), policy=alone).status == "grounded"
    # a number the evidence lacks is the more specific reason, checked first
    verdict = check(answer(claim("20.", cit("S1", LEAVE))), policy=alone)
    assert reasons(verdict) == [["number_not_in_source"]]
    # a claim with no content word at all is not judged by the rule
    assert check(answer(claim("It is so.", cit("S1", LEAVE))), policy=alone).status == "grounded"
    # strict (as ask verifies), a claim that is a fragment is dropped whatever its citation;
    # by default it is kept on its citation, with a note
    for text in ("16 weeks.", "It is so."):
        verdict = check(answer(claim(text, cit("S1", LEAVE))), policy=Policy(strict=True))
        assert [c.reason for c in verdict.claims] == ["claim_fragment"], text
        assert verdict.claims[0].citations[0].valid
        noted = check(answer(claim(text, cit("S1", LEAVE)))).claims[0]
        assert noted.kept and noted.notes and "fragment" in noted.notes[0], text


@pytest.mark.parametrize(
    ("source", "good", "bad"),
    [
        (
            "Arbeitnehmer haben Anspruch auf 16 Wochen bezahlten Elternurlaub.",
            "Arbeitnehmer bekommen bezahlten Urlaub.",
            "Die Kantine schließt am Abend.",
        ),
        ("员工享有十六周带薪育儿假。", "员工有带薪育儿假。", "食堂下午三点关门。"),
        ("พนักงานมีสิทธิ์ลาคลอดได้สิบหกสัปดาห์", "พนักงานลาคลอดได้", "รถเมล์มาช้าทุกเช้า"),
    ],
)
def test_non_english_text(source: str, good: str, bad: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    quote = source.rstrip("。.")
    policy = Policy(min_quote_words=1)
    assert check(answer(claim(good, cit("S1", quote))), ws, policy=policy).status == "grounded"
    verdict = check(answer(claim(bad, cit("S1", quote))), ws, policy=policy)
    assert reasons(verdict) == [["unrelated_evidence"]]


def test_the_rule_can_be_turned_off_and_applies_to_quote_less_formats() -> None:
    raw = answer(claim("Questions go to the vendor manager.", cit("S1", LEAVE)))
    assert check(raw, policy=Policy(relevance=False)).status == "grounded"
    # inline: the whole cited source is the evidence
    assert reasons(check("Questions go to the vendor manager [S1].", WS, fmt="inline")) == [
        ["unrelated_evidence"]
    ]
    assert check("Employees get 16 weeks of leave [S1].", WS, fmt="inline").status == "grounded"
