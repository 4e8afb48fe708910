"""A writing habit is not a grounding failure: how a claim is written (lower case, a piece of a
sentence, a one-line answer, a sentence leaning on the one before it) is a note on it, and
what it cites decides keep or drop, unless the caller asks for strict."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import check
from quotebound import Policy, Source, WorkingSet

OHIO = (
    "The Ohio State Buckeyes football team is a college football team that represents the Ohio "
    "State University. It competes in the Big Ten Conference."
)
KING = "George II was King of Great Britain and Ireland from 1727 until his death in 1760."
WS = WorkingSet([Source("1", OHIO), Source("2", KING)])
STRICT = Policy(strict=True)


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        # a chat answer in lower case
        (
            "the ohio state buckeyes football team is a college football team. [1]",
            "a piece of a sentence (it starts mid-sentence)",
        ),
        ("George II [2]", "a fragment"),  # a one-line answer to a question
        ("These compete in the Big Ten Conference. [1]", "leans on the one before it"),
    ],
)
def test_a_writing_fault_is_a_note_and_strict_drops_it(answer: str, note: str) -> None:
    verdict = check(answer, WS, "inline")
    [claim] = verdict.claims
    assert claim.kept and verdict.status == "grounded"
    assert len(claim.notes) == 1 and note in claim.notes[0]
    assert verdict.failures == []  # nothing for a repair turn to mend
    strict = check(answer, WS, "inline", STRICT)
    assert [(c.kept, c.reason, c.notes) for c in strict.claims] == [(False, "claim_fragment", ())]


def test_a_writing_note_never_keeps_a_claim_its_citation_does_not_hold() -> None:
    verdict = check("the ohio state buckeyes won 12 titles. [1]", WS, "inline")
    [claim] = verdict.claims
    assert not claim.kept and claim.citations[0].reason == "number_not_in_source"
    assert claim.notes == ()  # a dropped claim is not served: no note on how it is written


def test_a_leaning_sentence_is_read_with_the_one_before_it_in_the_answer() -> None:
    answer = (
        "The Buckeyes represent the Ohio State University [1]. "
        "These compete in the Big Ten Conference [1]."
    )
    verdict = check(answer, WS, "inline")
    assert [(c.kept, c.notes) for c in verdict.claims] == [(True, ()), (True, ())]
    # even when the one before it was dropped: the sentence is there to be read with
    dropped_first = answer.replace("Ohio State University", "Ohio State University since 1890")
    verdict = check(dropped_first, WS, "inline")
    assert [(c.kept, c.notes) for c in verdict.claims] == [(False, ()), (True, ())]
    # strict (ask): it leans on a claim that was dropped, so it says nothing alone
    strict = check(dropped_first, WS, "inline", STRICT)
    assert [(c.kept, c.reason) for c in strict.claims] == [
        (False, "no_valid_citation"),
        (False, "claim_fragment"),
    ]


# -- list answers: each item against its own citation ---------------------------------------------

YEARS = WorkingSet(
    [
        Source("1", "The first film was released in 2006 in Europe."),
        Source("2", "The second film was released in 1977 in Asia."),
        Source("3", "The third film was released in 2004 in Africa."),
    ]
)


def test_a_list_answer_is_checked_item_by_item() -> None:
    verdict = check("2006 [1], 1977 [2], 2004 [3].", YEARS, "inline")
    [claim] = verdict.claims
    assert claim.kept and [c.valid for c in claim.citations] == [True, True, True]
    assert claim.notes  # a list of numbers is no sentence: a note, not a drop
    # each item's number must be in its own source, not merely in one of the three
    swapped = check("2006 [1], 2004 [2], 1977 [3].", YEARS, "inline")
    [claim] = swapped.claims
    assert not claim.kept and claim.reason == "no_valid_citation"
    assert [c.reason for c in claim.citations] == [
        None,
        "number_not_in_source",
        "number_not_in_source",
    ]
    assert "item 2" in (claim.message or "")


@pytest.mark.parametrize(
    "answer",
    [
        "The films came out in 2006 [1], 1977 [2] and 2004 [3].",
        "The first came out in 2006 [1]; the second in 1977 [2].",
    ],
)
def test_clauses_each_with_its_marker_are_items(answer: str) -> None:
    assert check(answer, YEARS, "inline").status == "grounded"
    wrong = answer.replace("[1]", "[2]", 1)
    assert check(wrong, YEARS, "inline").status == "ungrounded"


def test_a_sentence_with_its_markers_at_the_end_is_one_claim() -> None:
    # no list: the markers cite the sentence together, as before
    verdict = check("The films came out in 2006, 1977 and 2004 [1][2][3].", YEARS, "inline")
    assert verdict.status == "grounded"


@pytest.mark.parametrize("markers", ["[1][2]", "[1] [2]", "[1], [2]"])
def test_an_item_may_carry_several_markers(markers: str) -> None:
    verdict = check(f"2006 {markers}, 2004 [3].", YEARS, "inline")
    [claim] = verdict.claims
    assert claim.kept  # 2006 is in its first source, 2004 in its own
    assert [c.reason for c in claim.citations] == [None, "unrelated_evidence", None]


GOUDA = 'Gouda ( , ; , "cheese from Gouda") is a mild, yellow cheese made from cow\'s milk.'
GAPPED = WorkingSet([Source("1", GOUDA)])


def test_a_sentence_with_a_gap_copied_from_its_source_is_a_note_and_strict_drops_it() -> None:
    # the source lost its pronunciation when it was extracted; the claim copies the hole
    def answer(text: str) -> str:
        quote = "cheese from Gouda\") is a mild, yellow cheese made from cow's milk"
        claim = {"text": text, "citations": [{"source": "1", "quote": quote}]}
        return json.dumps({"answerable": True, "claims": [claim]})

    verdict = check(answer(GOUDA), GAPPED, "json")
    [claim] = verdict.claims
    assert claim.kept and len(claim.notes) == 1 and "with a gap" in claim.notes[0]
    strict = check(answer(GOUDA), GAPPED, "json", STRICT)
    [dropped] = strict.claims
    assert (dropped.kept, dropped.reason) == (False, "claim_fragment")
    assert "with a gap" in (dropped.message or "")
    # written whole, the same claim and quote are kept, strict or not, with no note
    whole = answer('Gouda, "cheese from Gouda", is a mild, yellow cheese made from cow\'s milk.')
    assert [(c.kept, c.notes) for c in check(whole, GAPPED, "json", STRICT).claims] == [(True, ())]


@pytest.mark.parametrize(
    "text",
    [
        GOUDA,
        'The films are "Bridget Jones\'s Diary" (2001), "" (2004) and a third (2016).',
        "The purpose of the Chinese Imperial Dog is considered a .",
        "The purpose of the Chinese Imperial Dog is known as the.",
        "The river ( ) flows north into the sea.",
        "Its name, , comes from the Latin word for bread.",
        "The programme began \u201c\u201d in the spring of 1990.",
    ],
)
def test_a_gap_where_words_were_lost_is_a_fragment(text: str) -> None:
    from quotebound.fragments import fragment

    assert "with a gap" in (fragment(text) or "")


@pytest.mark.parametrize(
    "text",
    [
        "The framework (.NET) was first released in 2002.",
        "The policy [...] covers dental and vision care.",
        "The grade the committee gave it was an A.",
        "The letters used are a, b and c.",
        "Plan B costs $10, and Plan C costs $20.",
        "Glycogen is stored in the liver or , in muscle , as fat .",  # CLAPNQ's tokenised text
        "The survey ( ... ) found that most patients recovered .",
        # code in technical prose: a call, an empty list, an empty string, an image link
        "Call flush() before closing the file.",
        "The function main() returns 0 on success.",
        "An empty list [] is returned when nothing matches.",
        'Run `make test` with `ARGS=""` to pass nothing.',
        'The call print("") prints an empty line.',
        "The loop for(;;) runs forever in C.",
        "See the image ![](diagram.png) for the layout.",
        "Et chaque salarié en a.",  # French: a verb, not an article
    ],
)
def test_punctuation_that_loses_nothing_is_no_gap(text: str) -> None:
    from quotebound.fragments import fragment

    assert "with a gap" not in (fragment(text) or "")
