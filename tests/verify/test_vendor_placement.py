"""Where each vendor puts its citations, and what the verifier makes of it: the claim is the
answer's sentence; OpenAI's link citations support the paragraph they close; a cited URL with
tracking parameters is the page sent; Anthropic's extracted sentences are not held to the quote
bounds; headings and lead-ins are structure unless they state a fact. Fixtures are this
project's own, in each vendor's documented shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kits.verifykit import check
from quotebound import Policy, Source, Verdict, WorkingSet
from quotebound.native import same_page

CHIPS = (
    "Huawei raised the yield rate of its Ascend 910C processors from 20% to nearly 40%, which "
    "made the production line profitable for the first time. Nvidia still leads the market."
)
APPLE = (
    "Apple will invest $500 billion in the United States over four years, creating 20,000 jobs "
    "and a server factory in Texas."
)
WS = WorkingSet(
    [
        Source("web_0", CHIPS, url="https://www.ft.com/content/f46b7f6d", title="Huawei chips"),
        Source("web_1", APPLE, url="https://example.com/apple-plan", title="Apple's plan"),
    ]
)
FT = "https://www.ft.com/content/f46b7f6d?utm_source=openai"


def _responses(text: str, *annotations: dict[str, Any]) -> str:
    part = {"type": "output_text", "text": text, "annotations": list(annotations)}
    message = {"type": "message", "role": "assistant", "content": [part]}
    return json.dumps({"object": "response", "output": [message]})


def _link(text: str, marker: str, url: str) -> dict[str, Any]:
    """A url_citation over ``marker`` where it stands in ``text`` (the API's placement)."""
    start = text.index(marker)
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": start + len(marker),
        "url": url,
        "title": "t",
    }


def _claims(verdict: Verdict) -> list[tuple[str, bool, list[str | None]]]:
    return [(c.text, c.kept, [x.source for x in c.citations]) for c in verdict.claims]


# -- OpenAI: a link citation supports the paragraph it closes ---


PARAGRAPH = (
    "Huawei raised the yield rate of its Ascend 910C processors from 20% to nearly 40%. "
    "The production line is now profitable for the first time."
)


def test_a_link_closing_a_paragraph_cites_its_sentences_and_is_no_claim() -> None:
    marker = " ([ft.com](https://www.ft.com/content/f46b7f6d?utm_source=openai))"
    text = f"{PARAGRAPH}{marker}\n\nThat is all for today."
    verdict = check(_responses(text, _link(text, marker, FT)), WS, "openai")
    assert _claims(verdict) == [
        (
            "Huawei raised the yield rate of its Ascend 910C processors from 20% to nearly 40%.",
            True,
            ["web_0"],
        ),
        ("The production line is now profitable for the first time.", True, ["web_0"]),
        ("That is all for today.", False, []),  # really uncited: listed as such
    ]
    cited = verdict.claims[0].citations[0]
    assert cited.native is not None and cited.native["url"] == FT  # what the provider said


def test_a_wrong_number_in_a_paragraph_cited_by_a_link_is_dropped() -> None:
    marker = " ([ft.com](https://www.ft.com/content/f46b7f6d?utm_source=openai))"
    wrong = PARAGRAPH.replace("40%", "60%")
    text = f"{wrong}{marker}"
    verdict = check(_responses(text, _link(text, marker, FT)), WS, "openai")
    assert [(c.kept, [x.reason for x in c.citations]) for c in verdict.claims] == [
        (False, ["number_not_in_source"]),
        (True, [None]),
    ]


def test_each_link_cites_back_to_the_link_before_it_in_its_paragraph() -> None:
    first = " ([ft.com](https://www.ft.com/content/f46b7f6d))"
    second = " ([example.com](https://example.com/apple-plan))"
    text = (
        f"Huawei made its 910C line profitable for the first time.{first} "
        f"Apple will invest $500 billion in the United States.{second}"
    )
    links = [
        _link(text, first, "https://www.ft.com/content/f46b7f6d"),
        _link(text, second, "https://example.com/apple-plan"),
    ]
    verdict = check(_responses(text, *links), WS, "openai")
    assert [(c.kept, [x.source for x in c.citations]) for c in verdict.claims] == [
        (True, ["web_0"]),
        (True, ["web_1"]),
    ]


def test_a_heading_with_a_fact_is_checked_against_the_claims_under_it() -> None:
    marker = " ([example.com](https://example.com/apple-plan))"
    body = "Apple will invest in the United States over four years, creating 20,000 jobs."
    for heading, kept in (
        ("Apple's $500 Billion U.S. Investment Plan", True),
        ("Apple's $900 Billion Plan", False),
    ):
        text = f"**{heading}**\n\n{body}{marker}\n\n## Sources\n- [Apple](https://example.com/apple-plan)"
        verdict = check(
            _responses(text, _link(text, marker, "https://example.com/apple-plan")), WS, "openai"
        )
        assert [(c.text, c.kept) for c in verdict.claims] == [(heading, kept), (body, True)]
        assert verdict.claims[0].citations[0].source == "web_1"


def test_lead_ins_and_headings_without_a_fact_are_structure() -> None:
    marker = " ([ft.com](https://www.ft.com/content/f46b7f6d))"
    text = (
        "Here is what happened in chips:\n\n## Chips\n\n**Huawei**\n\n"
        f"1. Production:\n{PARAGRAPH}{marker}"
    )
    verdict = check(_responses(text, _link(text, marker, FT)), WS, "openai")
    assert [c.text for c in verdict.claims] == [
        "Huawei raised the yield rate of its Ascend 910C processors from 20% to nearly 40%.",
        "The production line is now profitable for the first time.",
    ]
    assert verdict.status == "grounded"


def test_a_file_citation_supports_the_sentence_ending_at_its_index() -> None:
    ws = WorkingSet([Source("file-1", CHIPS, title="chips.pdf")])
    first = "Huawei's production line is profitable for the first time."
    text = f"{first} Nvidia still leads the market in China."
    note = {
        "type": "file_citation",
        "index": len(first),
        "file_id": "file-1",
        "filename": "chips.pdf",
    }
    verdict = check(_responses(text, note, dict(note)), ws, "openai")  # the docs show it twice
    assert [(c.kept, len(c.citations)) for c in verdict.claims] == [(True, 1), (False, 0)]
    # a file_citation on a sentence its file does not say is dropped like any other
    text = "Huawei sold 9 million phones. Nvidia still leads the market."
    note = {"type": "file_citation", "index": text.index(" Nvidia"), "file_id": "file-1"}
    verdict = check(_responses(text, note), ws, "openai")
    assert verdict.claims[0].citations[0].reason == "number_not_in_source"


# -- the same page, and nothing looser ---


@pytest.mark.parametrize(
    ("cited", "sent", "same"),
    [
        (
            "https://www.ft.com/content/abc?utm_source=openai",
            "https://www.ft.com/content/abc",
            True,
        ),
        (
            "https://www.ft.com/content/abc?utm_source=chatgpt.com",
            "http://WWW.FT.com/content/abc/",
            True,
        ),
        ("https://www.ft.com/content/abc#top", "https://www.ft.com/content/abc", True),
        ("https://x.org/p?id=3&utm_medium=a", "https://x.org/p?id=3", True),
        ("https://www.ft.com/content/abd", "https://www.ft.com/content/abc", False),
        ("https://x.org/p?id=4", "https://x.org/p?id=3", False),
        ("https://ft.com/content/abc", "https://www.ft.com/content/abc", False),
    ],
)
def test_a_cited_url_names_the_page_sent(cited: str, sent: str, same: bool) -> None:
    assert (same_page(cited) == same_page(sent)) is same


def test_a_url_with_another_path_is_an_unknown_source_never_a_guess() -> None:
    text = "Huawei's 910C line is profitable for the first time."
    note = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": len(text),
        "url": "https://www.ft.com/content/other?utm_source=openai",
        "title": "t",
    }
    c = check(_responses(text, note), WS, "openai").claims[0].citations[0]
    assert c.reason == "unknown_source" and c.source is None


# -- Anthropic: extracted sentences, and forged scraps ---

PAGE = (
    "We experiment with methods for training a harmless AI assistant through self-improvement, "
    "without any human labels identifying harmful outputs. The only human oversight is provided "
    "through a list of rules or principles, and so we refer to the method as Constitutional AI. "
    "The process involves both a supervised learning and a reinforcement learning phase. "
    "Receipts are required.\n"
    "In the supervised phase we sample from an initial model, then generate self-critiques and "
    "revisions, and then finetune the original model on revised responses."
)
PDF = WorkingSet([Source("cai", PAGE, page=1)])


def _anthropic(*blocks: dict[str, Any]) -> str:
    return json.dumps(
        {"type": "message", "role": "assistant", "content": list(blocks), "stop_reason": "end_turn"}
    )


def _page_cited(text: str, cited_text: str) -> dict[str, Any]:
    location = {
        "type": "page_location",
        "cited_text": cited_text,
        "document_index": 0,
        "start_page_number": 1,
        "end_page_number": 2,
    }
    return {"type": "text", "text": text, "citations": [location]}


def test_an_extracted_quote_of_whole_sentences_passes_whatever_its_length() -> None:
    three = PAGE[: PAGE.index(" Receipts")]  # 52 words: three whole sentences
    claim = (
        "Constitutional AI trains a harmless assistant through self-improvement, with a list "
        "of principles as the only human oversight, in a supervised and a reinforcement "
        "learning phase."
    )
    verdict = check(_anthropic(_page_cited(claim, three)), PDF, "anthropic")
    assert verdict.status == "grounded", verdict.claims[0].citations
    # strict or not: the bounds are the quote's, not the writing's
    assert (
        check(_anthropic(_page_cited(claim, three)), PDF, "anthropic", Policy(strict=True)).status
        == "grounded"
    )
    short = check(
        _anthropic(_page_cited("Receipts are required.", "Receipts are required.")),
        PDF,
        "anthropic",
    )
    assert short.status == "grounded"  # a three-word sentence of the document


def test_a_forged_scrap_of_cited_text_is_held_to_the_bounds() -> None:
    verdict = check(
        _anthropic(_page_cited("Receipts are required for everything.", "Receipts")),
        PDF,
        "anthropic",
    )
    assert verdict.claims[0].citations[0].reason == "quote_too_short"
    # a piece of a sentence is no whole sentence either
    piece = "a list of rules or principles"
    verdict = check(
        _anthropic(_page_cited("Oversight is a list of rules.", piece)), PDF, "anthropic"
    )
    assert verdict.status == "grounded"  # six words: within the bounds as any quote
    scrap = "rules or principles"
    verdict = check(
        _anthropic(_page_cited("Oversight is a list of rules.", scrap)), PDF, "anthropic"
    )
    assert verdict.claims[0].citations[0].reason == "quote_too_short"


# -- every format: the claim is the sentence, the cited piece inside it ---


SENTENCE = "According to the policy, employees get 16 weeks of paid leave and keep their bonus."
PIECE = "employees get 16 weeks of paid leave"
LEAVE = WorkingSet(
    [Source("S1", "All employees get 16 weeks of paid leave.", url="https://hr.example.com/leave")]
)


def _shaped(vendor: str) -> str:
    a = SENTENCE.index(PIECE)
    b = a + len(PIECE)
    if vendor == "openai":  # a span citation (an older placement) over the piece
        note = {
            "type": "url_citation",
            "start_index": a,
            "end_index": b,
            "url": "https://hr.example.com/leave",
            "title": "Leave",
        }
        return _responses(SENTENCE, note)
    if vendor == "cohere":
        cite = {"start": a, "end": b, "text": PIECE, "sources": [{"type": "document", "id": "S1"}]}
        return json.dumps(
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": SENTENCE}],
                    "citations": [cite],
                }
            }
        )
    if vendor == "gemini":
        meta = {
            "groundingChunks": [{"web": {"uri": "https://hr.example.com/leave"}}],
            "groundingSupports": [
                {"segment": {"startIndex": a, "endIndex": b}, "groundingChunkIndices": [0]}
            ],
        }
        return json.dumps(
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": SENTENCE}]},
                        "finishReason": "STOP",
                        "groundingMetadata": meta,
                    }
                ]
            }
        )
    quote = "All employees get 16 weeks of paid leave."
    cited = {
        "type": "char_location",
        "cited_text": quote,
        "document_index": 0,
        "start_char_index": 0,
        "end_char_index": len(quote),
    }
    return _anthropic(
        {"type": "text", "text": SENTENCE[:a]},
        {"type": "text", "text": PIECE, "citations": [cited]},
        {"type": "text", "text": SENTENCE[b:]},
    )


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "cohere", "gemini"])
def test_a_cited_piece_of_a_sentence_makes_the_sentence_a_claim(vendor: str) -> None:
    verdict = check(_shaped(vendor), LEAVE, vendor)
    assert [(c.text, c.kept, c.notes) for c in verdict.claims] == [(SENTENCE, True, ())]
    native = verdict.claims[0].citations[0].native
    assert native is not None
    a, b = native["answer_span"]
    assert SENTENCE[a:b] == PIECE  # the piece the card marks inside the sentence


def test_the_card_marks_the_cited_piece_inside_the_sentence() -> None:
    from quotebound import verify
    from quotebound.cards import build_cards

    verdict = verify(LEAVE, _shaped("anthropic"), "anthropic")
    _, per_claim = build_cards(verdict, LEAVE)
    [[cite]] = per_claim
    assert cite.piece is not None and SENTENCE[slice(*cite.piece)] == PIECE
    assert cite.to_dict()["piece"] == list(cite.piece)
    # a citation of the whole sentence marks nothing in particular
    whole = json.dumps(
        {
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": SENTENCE}],
                "citations": [
                    {
                        "start": 0,
                        "end": len(SENTENCE),
                        "sources": [{"type": "document", "id": "S1"}],
                    }
                ],
            }
        }
    )
    _, per_claim = build_cards(verify(LEAVE, whole, "cohere"), LEAVE)
    assert per_claim[0][0].piece is None


def test_many_annotations_are_placed_in_linear_time_and_a_hostile_flood_is_refused() -> None:
    sentence = "Huawei's production line is profitable for the first time. "
    text = sentence * 2000
    one_each = [
        {
            "type": "url_citation",
            "start_index": k * len(sentence),
            "end_index": (k + 1) * len(sentence) - 1,
            "url": FT,
            "title": "t",
        }
        for k in range(2000)
    ]
    verdict = check(_responses(text, *one_each), WS, "openai")
    assert len(verdict.claims) == 2000 and verdict.status == "grounded"
    # every annotation over every sentence: more placements than any answer makes
    flood = [{**note, "start_index": 0, "end_index": len(text)} for note in one_each[:100]]
    verdict = check(_responses(text, *flood), WS, "openai")
    assert verdict.status == "unparseable" and "split the answer" in (verdict.error or "")


def test_a_heading_or_lead_in_with_a_fact_keeps_its_own_citation() -> None:
    ws = WorkingSet(
        [Source("S1", "Employees get 16 weeks of paid leave.", url="https://x.example/a")]
    )
    for text in (
        "Employees get 16 weeks of paid leave:\n- The policy covers all full-time staff.\n",
        "## Employees get 16 weeks of paid leave\n",
    ):
        start = text.index("Employees")
        note = {
            "type": "url_citation",
            "start_index": start,
            "end_index": start + len("Employees get 16 weeks of paid leave"),
            "url": "https://x.example/a",
            "title": "t",
        }
        claims = check(_responses(text, note), ws, "openai").claims
        assert (claims[0].text, claims[0].kept) == ("Employees get 16 weeks of paid leave", True)


def test_the_same_link_cited_again_is_read_once() -> None:
    from quotebound.native import read

    marker = " ([ft.com](https://www.ft.com/content/f46b7f6d))"
    text = f"{PARAGRAPH}{marker}"
    notes = [_link(text, marker, FT)] * 50
    response = json.loads(_responses(text, *notes))
    answer = read(WS, response, "openai")
    assert [len(c.citations) for c in answer.claims] == [1, 1]
    assert answer.claims[0].context == PARAGRAPH  # the paragraph once, not fifty times
