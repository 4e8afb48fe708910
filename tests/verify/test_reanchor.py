"""``reanchor.reanchor``: a claim whose citations did not carry it, re-cited in code to the sentence
of the sources sent that does, and kept only if that sentence passes every check."""

from __future__ import annotations

import pytest

from kits.verifykit import WS, answer, assert_spans, check, cit, claim
from quotebound import Policy, Source, Verdict, WorkingSet
from quotebound.coverage import nearest_sentences
from quotebound.reanchor import reanchor

GERMANY = "In Germany, pay is topped up to full salary for the first 14 weeks."
LEAVE = "Employees are entitled to 16 weeks of paid parental leave"


def _placed(verdict: Verdict, ws: WorkingSet = WS) -> Verdict:
    out = reanchor(verdict, ws)
    assert_spans(ws, out)  # a placed quote's span is its text, as any other
    return out


def test_a_number_its_quote_lacks_is_found_in_the_sentence_that_states_it() -> None:
    verdict = check(answer(claim(GERMANY, cit("S1", LEAVE))))
    assert verdict.status == "ungrounded"
    out = _placed(verdict)
    assert out.status == "grounded" and out.tiers == ("code", "anchor")
    placed, own = out.claims[0].citations
    assert (placed.source, placed.valid, placed.anchored) == ("S2", True, True)
    assert placed.quote == WS.get("S2").text  # type: ignore[union-attr]
    assert (own.source, own.valid, own.anchored) == ("S1", False, False)
    assert own.reason == "number_not_in_source"
    assert Verdict.from_dict(out.to_dict()).claims[0].citations[0].anchored  # round-trips


def test_a_decorative_quote_is_replaced_by_the_sentence_about_the_claim() -> None:
    text = "Contractors are not eligible for company-paid parental leave."
    verdict = check(answer(claim(text, cit("S5", "Refunds for cancelled orders are issued"))))
    assert verdict.claims[0].citations[0].reason == "unrelated_evidence"
    out = _placed(verdict)
    assert out.claims[0].kept and out.claims[0].citations[0].source == "S3"


def test_a_quote_in_another_source_is_cited_where_it_is() -> None:
    verdict = check(answer(claim(GERMANY, cit("S1", "tops up statutory parental allowance"))))
    assert verdict.claims[0].citations[0].reason == "quote_in_other_source"
    out = _placed(verdict)
    assert out.claims[0].kept and out.claims[0].citations[0].source == "S2"


@pytest.mark.parametrize(
    "text",
    [
        "In Germany, pay is topped up to full salary for the first 18 weeks.",  # 18: nowhere
        "Germany pays the salary.",  # too little of it in any one sentence to be its evidence
        "The pension plan in Germany matches contributions up to 5 percent.",  # not said
    ],
)
def test_a_claim_no_sentence_carries_stays_dropped(text: str) -> None:
    verdict = check(answer(claim(text, cit("S1", LEAVE))))
    assert not verdict.claims[0].kept
    out = reanchor(verdict, WS)
    assert out == verdict and not out.claims[0].kept


def test_only_claims_dropped_for_their_evidence_are_reanchored() -> None:
    kept = claim("Employees get 16 weeks of paid parental leave.", cit("S1", LEAVE))
    unknown = claim(GERMANY, cit("S9", LEAVE))  # an invented id is the model's error to own
    short = claim(GERMANY, cit("S2", "full salary"))  # too short a quote: the same
    fragment = claim("14 weeks", cit("S1", LEAVE))
    verdict = check(answer(kept, unknown, short, fragment))
    out = reanchor(verdict, WS)
    assert out == verdict
    assert [c.kept for c in out.claims] == [True, False, False, False]


def test_the_placed_sentence_meets_the_policy() -> None:
    long = " ".join(["Germany tops up pay to full salary for the first 14 weeks"] * 4) + "."
    ws = WorkingSet([Source("S1", LEAVE + "."), Source("S2", long)])
    verdict = check(answer(claim(GERMANY, cit("S1", LEAVE))), ws)
    assert not reanchor(verdict, ws).claims[0].kept  # 44 words: over the 40-word quote limit
    loose = Policy(max_quote_words=60)
    relaxed = check(answer(claim(GERMANY, cit("S1", LEAVE))), ws, policy=loose)
    assert reanchor(relaxed, ws, loose).claims[0].kept


def test_the_users_own_message_is_never_the_placed_evidence() -> None:
    ws = WorkingSet([Source("S1", LEAVE + "."), Source("S2", GERMANY, kind="user")])
    allowed = Policy(user_is_evidence=True)  # even where the policy lets a claim cite it
    verdict = check(answer(claim(GERMANY, cit("S1", LEAVE))), ws, policy=allowed)
    assert not reanchor(verdict, ws, allowed).claims[0].kept
    document = WorkingSet([Source("S1", LEAVE + "."), Source("S2", GERMANY)])
    assert reanchor(verdict, document, allowed).claims[0].kept  # the same sentence, not the user's


def test_a_made_up_quote_is_not_reanchored() -> None:
    text = "Contractors are not eligible for company-paid parental leave."
    verdict = check(answer(claim(text, cit("S3", "Contractors may never get parental leave"))))
    assert verdict.claims[0].citations[0].reason == "quote_not_found"
    assert reanchor(verdict, WS) == verdict  # the repair turn names it; the code does not hide it


def test_a_claim_is_never_placed_on_a_sentence_that_negates_it() -> None:
    ws = WorkingSet(
        [
            Source("S1", "Refunds for cancelled orders are issued within 5 business days."),
            Source("S2", "Contractors are not eligible for company-paid parental leave."),
        ]
    )
    text = "Contractors are eligible for company-paid parental leave."
    verdict = check(answer(claim(text, cit("S1", "Refunds for cancelled orders are issued"))), ws)
    assert verdict.claims[0].citations[0].reason == "unrelated_evidence"
    assert not reanchor(verdict, ws).claims[0].kept


def test_the_next_nearest_sentence_is_tried_when_the_nearest_fails() -> None:
    near = "In Germany, pay is topped up to full salary for the first weeks of leave."
    right = "In Germany pay is topped up for 14 weeks to full salary."
    ws = WorkingSet([Source("S1", LEAVE + ". " + near), Source("S2", right)])
    ranked = nearest_sentences(GERMANY, [(s.id, s.text) for s in ws], least=3, share=2 / 3)
    assert [sentence for _, sentence in ranked[:2]] == [near, right]
    verdict = check(answer(claim(GERMANY, cit("S1", LEAVE))), ws)
    out = reanchor(verdict, ws)  # the nearest lacks 14; the next one has it
    assert out.claims[0].kept and out.claims[0].citations[0].quote == right


def test_with_nothing_to_judge_it_next_every_word_must_be_there() -> None:
    text = "In Germany, pay is topped up to full salary for the first 14 weeks by the state."
    verdict = check(answer(claim(text, cit("S1", LEAVE))))
    assert reanchor(verdict, WS).claims[0].kept  # two thirds of its words, the rest judged next
    assert not reanchor(verdict, WS, share=1.0).claims[0].kept  # "state" is in no sentence
