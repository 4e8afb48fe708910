"""Providers' own citations, read from responses shaped as each vendor's API reference
documents them (tests/data/native, written from the references, secrets-free), and verified
like any other output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kits.verifykit import check
from quotebound import Source, Verdict, WorkingSet
from quotebound.native import detect, load

DATA = Path(__file__).resolve().parent.parent / "data" / "native"
S1 = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
S2 = (
    "In Germany, the company tops up statutory parental allowance to full salary for the "
    "first 14 weeks."
)
WS = WorkingSet(
    [
        Source(
            "S1",
            S1,
            key="hr:leave.md#c1",
            title="Global leave policy",
            url="https://hr.example.com/leave",
        ),
        Source(
            "S2",
            S2,
            key="hr:germany.pdf#c1",
            title="Germany addendum",
            url="https://hr.example.com/germany.pdf",
            page=2,
        ),
    ]
)
Q1 = "Employees are entitled to 16 weeks of paid parental leave"


def fixture(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def run(raw: str, fmt: str = "auto") -> Verdict:
    return check(raw, WS, fmt)


def outcome(verdict: Verdict) -> list[tuple[bool, list[tuple[str | None, str | None]]]]:
    """Per claim: kept, and each citation's (source, reason)."""
    return [(c.kept, [(x.source, x.reason) for x in c.citations]) for c in verdict.claims]


# -- Anthropic -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["auto", "anthropic"])
def test_anthropic_citations_are_verified_with_their_offsets(fmt: str) -> None:
    verdict = run(fixture("anthropic_message.json"), fmt)
    assert verdict.format == "anthropic" and verdict.status == "partial"
    assert outcome(verdict) == [
        (True, [("S1", None)]),
        (True, [("S2", None)]),
        (False, [("S1", "unrelated_evidence")]),  # a verbatim quote about something else
        (False, [(None, "unknown_source")]),  # document_index 7 was never sent
    ]
    first, second = (verdict.claims[i].citations[0] for i in (0, 1))
    assert first.span == (0, len(Q1)) and first.native is not None
    assert first.native["offsets"] == [0, len(Q1)] and first.native["agrees"] is True
    # the provider's offsets [3, 50) do not hold the quote: said, and the verified span kept
    assert second.native is not None and second.native["agrees"] is False
    assert second.native["found"] == list(second.span or ())
    assert S2[slice(*second.span)] == (  # type: ignore[misc]
        "the company tops up statutory parental allowance to full salary for the first 14 weeks"
    )
    assert verdict.claims[3].citations[0].ref == "doc_7"  # a label, never a guess


def test_anthropic_offsets_of_a_second_occurrence_are_kept() -> None:
    text = "Leave is paid in full for new parents. Leave is paid in full for new parents here."
    ws = WorkingSet([Source("S1", text)])
    quote = "Leave is paid in full for new parents"
    at = text.index(quote, 5)
    raw = json.dumps(
        _message(_cited("New parents get fully paid leave.", quote, 0, at, at + len(quote)))
    )
    c = check(raw, ws).claims[0].citations[0]
    assert c.valid and c.span == (at, at + len(quote))
    assert c.native is not None and c.native["agrees"] is True


def test_anthropic_pages_are_checked_against_the_source_page() -> None:
    verdict = run(fixture("anthropic_pages.json"))
    assert verdict.status == "grounded"
    pages, blocks = (verdict.claims[i].citations[0].native for i in (0, 1))
    assert pages is not None and blocks is not None
    for said in (pages, blocks):  # where each cited piece stands in the answer, and what it is
        assert said.pop("answer_span") and said.pop("piece")
    assert pages == {"type": "page_location", "pages": [2, 3], "agrees": True}
    assert blocks == {"type": "content_block_location", "blocks": [0, 1], "agrees": None}
    data = json.loads(fixture("anthropic_pages.json"))
    data["content"][0]["citations"][0] |= {"start_page_number": 1, "end_page_number": 2}
    native = run(json.dumps(data)).claims[0].citations[0].native
    assert native is not None and native["agrees"] is False  # page 1: before the source starts
    data["content"][0]["citations"][0] |= {"start_page_number": 5, "end_page_number": 6}
    native = run(json.dumps(data)).claims[0].citations[0].native
    assert native is not None and native["agrees"] is None  # the source may run on to page 5


def test_an_anthropic_stream_is_assembled_and_a_cut_one_is_unparseable() -> None:
    verdict = run(fixture("anthropic_stream.sse"))
    assert verdict.format == "anthropic" and verdict.status == "grounded"
    assert [c.text for c in verdict.claims] == [
        "Employees get 16 weeks of paid parental leave.",
        "In Germany, the company tops up pay to full salary for the first 14 weeks.",
    ]
    cut = run(fixture("anthropic_stream_cut.sse"))
    assert cut.status == "unparseable"
    assert cut.error is not None and "before message_stop" in cut.error


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("content"), '"content"'),
        (lambda d: d["content"][1].__setitem__("citations", "S1"), "content[1].citations"),
        (lambda d: d["content"][1]["citations"][0].pop("cited_text"), "cited_text"),
        (
            lambda d: d["content"][1]["citations"][0].__setitem__("document_index", "0"),
            "document_index",
        ),
        (lambda d: d["content"][1]["citations"][0].pop("start_char_index"), "start_char_index"),
        (lambda d: d["content"][1].__setitem__("text", None), "content[1].text"),
    ],
)
def test_a_malformed_anthropic_response_names_the_field(mutate: Any, field: str) -> None:
    data = json.loads(fixture("anthropic_message.json"))
    mutate(data)
    verdict = run(json.dumps(data), "anthropic")
    assert verdict.status == "unparseable"
    assert verdict.error is not None and field in verdict.error


def test_a_web_search_citation_is_not_a_source_sent() -> None:
    block = {
        "type": "text",
        "text": "Employees get 16 weeks of paid parental leave.",
        "citations": [
            {
                "type": "web_search_result_location",
                "cited_text": Q1,
                "url": "https://hr.example.com/leave",
                "title": "Leave",
                "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
            }
        ],
    }
    c = run(json.dumps(_message(block))).claims[0].citations[0]
    assert c.reason == "unknown_source"


# -- OpenAI ----------------------------------------------------------------------------------------


def test_openai_responses_annotations_map_by_url_and_file() -> None:
    verdict = run(fixture("openai_responses.json"))
    assert verdict.format == "openai"
    assert outcome(verdict) == [
        (True, [("S1", None)]),  # url_citation: the source with that URL
        (True, [("S2", None)]),  # file_citation: the source of germany.pdf
        (False, [("S1", "unrelated_evidence")]),
    ]
    c = verdict.claims[1].citations[0]
    assert c.quote is None and c.span is None  # no quote: it carries none, and shows none
    assert c.native is not None and c.native["filename"] == "germany.pdf"


def test_openai_chat_annotations_and_a_page_never_sent() -> None:
    verdict = run(fixture("openai_chat.json"), "openai")
    assert outcome(verdict) == [(True, [("S1", None)]), (False, [(None, "unknown_source")])]
    assert verdict.claims[1].citations[0].ref == "https://elsewhere.example.org/vendors"


def test_an_openai_stream_is_read_from_its_completed_event() -> None:
    verdict = run(fixture("openai_responses_stream.sse"))
    assert verdict.format == "openai" and verdict.status == "partial"
    cut = fixture("openai_responses_stream.sse").split("event: response.completed")[0]
    verdict = run(cut)
    assert verdict.status == "unparseable" and "response.completed" in (verdict.error or "")


def test_an_openai_annotation_outside_the_answer_is_unparseable() -> None:
    data = json.loads(fixture("openai_responses.json"))
    note = data["output"][1]["content"][0]["annotations"][0]
    note["end_index"] = 10_000
    verdict = run(json.dumps(data))
    assert verdict.status == "unparseable" and "outside the answer" in (verdict.error or "")


# -- Cohere ----------------------------------------------------------------------------------------


def test_cohere_v2_citations_resolve_ids_and_doc_numbers() -> None:
    verdict = run(fixture("cohere_v2.json"))
    assert verdict.format == "cohere"
    assert outcome(verdict) == [
        (True, [("S1", None)]),
        (True, [("S2", None)]),  # doc:1, the second document sent
        (False, [("S1", "unrelated_evidence"), (None, "unknown_source")]),  # doc:9: never sent
    ]


def test_cohere_v1_and_a_v2_stream() -> None:
    v1 = run(fixture("cohere_v1.json"), "cohere")
    assert outcome(v1) == [(True, [("S1", None)]), (True, [("S2", None)]), (False, [])]
    assert v1.claims[2].reason == "no_citation"  # a statement no citation covers
    stream = run(fixture("cohere_v2_stream.sse"))
    assert stream.format == "cohere"
    assert outcome(stream)[:2] == [(True, [("S1", None)]), (True, [("S2", None)])]
    cut = fixture("cohere_v2_stream.sse").split("event: message-end")[0]
    assert run(cut).status == "unparseable"


# -- Gemini ----------------------------------------------------------------------------------------


def test_gemini_grounding_supports_count_utf8_bytes() -> None:
    verdict = run(fixture("gemini.json"))
    assert verdict.format == "gemini"
    assert outcome(verdict) == [
        (True, [("S1", None)]),  # by the chunk's uri
        (True, [("S2", None), (None, "unknown_source")]),  # by exact text; a web page never sent
    ]
    native = verdict.claims[0].citations[0].native
    assert native is not None and native["confidence"] == 0.97
    text = json.loads(fixture("gemini.json"))["candidates"][0]["content"]["parts"][0]["text"]
    start, end = native["answer_span"]  # characters, though the response counts bytes ("–")
    assert text[start:end] == "Employees get 16 weeks of paid parental leave."


def test_a_gemini_stream_and_a_cut_one() -> None:
    assert outcome(run(fixture("gemini_stream.json"))) == outcome(run(fixture("gemini.json")))
    chunks = json.loads(fixture("gemini_stream.json"))[:1]
    verdict = run(json.dumps(chunks), "gemini")
    assert verdict.status == "unparseable" and "finishReason" in (verdict.error or "")


def test_a_gemini_segment_past_the_answer_is_unparseable() -> None:
    data = json.loads(fixture("gemini.json"))
    data["candidates"][0]["groundingMetadata"]["groundingSupports"][0]["segment"]["endIndex"] = 9999
    verdict = run(json.dumps(data))
    assert verdict.status == "unparseable" and "groundingSupports[0].segment" in (
        verdict.error or ""
    )


# -- every vendor ----------------------------------------------------------------------------------


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "cohere", "gemini"])
def test_an_abstention_in_each_vendors_shape(vendor: str) -> None:
    sentinel = "Not covered by the provided documents."
    shapes = {
        "anthropic": _message({"type": "text", "text": sentinel}),
        "openai": _responses(sentinel),
        "cohere": {
            "message": {"role": "assistant", "content": [{"type": "text", "text": sentinel}]}
        },
        "gemini": {
            "candidates": [{"content": {"parts": [{"text": sentinel}]}, "finishReason": "STOP"}]
        },
    }
    verdict = run(json.dumps(shapes[vendor]))
    assert verdict.format == vendor and verdict.status == "abstained"


@pytest.mark.parametrize(
    "raw",
    ["", "{}", "[1, 2]", "data: {not json", '{"type": "message", "content": {}}', "[{}]"],
)
def test_garbage_is_a_clear_status_never_a_crash(raw: str) -> None:
    for vendor in ("anthropic", "openai", "cohere", "gemini"):
        verdict = run(raw, vendor)
        assert verdict.status == "unparseable" and verdict.error, (vendor, raw)


def test_detection_leaves_our_own_contract_alone() -> None:
    ours = {"answerable": True, "claims": []}
    assert detect(ours) is None
    assert run(json.dumps(ours)).format == "json"
    assert detect(load(fixture("anthropic_stream.sse"))) == "anthropic"


def test_the_native_record_round_trips() -> None:
    verdict = run(fixture("anthropic_message.json"))
    again = Verdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
    assert again.to_dict() == verdict.to_dict()
    data = verdict.to_dict()
    data["claims"][0]["citations"][0]["native"] = "char_location"
    with pytest.raises(Exception, match="native must be"):
        Verdict.from_dict(data)


def _cited(text: str, quote: str, index: int, start: int, end: int) -> dict[str, Any]:
    return {
        "type": "text",
        "text": text,
        "citations": [
            {
                "type": "char_location",
                "cited_text": quote,
                "document_index": index,
                "document_title": None,
                "start_char_index": start,
                "end_char_index": end,
            }
        ],
    }


def _message(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
        "stop_reason": "end_turn",
    }


# -- what a cold review found --------------------------------------------------------------------


@pytest.mark.parametrize("vendor", ["openai", "cohere", "gemini", "anthropic"])
def test_a_short_uncited_sentence_is_still_a_claim(vendor: str) -> None:
    cited = "Employees get 16 weeks of paid parental leave."
    text = f"{cited} Aspirin cures cancer."
    shapes: dict[str, Any] = {
        "openai": _responses(text, _url(0, len(cited), "https://hr.example.com/leave")),
        "cohere": {
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "citations": [
                    {
                        "start": 0,
                        "end": len(cited),
                        "text": cited,
                        "sources": [{"type": "document", "id": "S1"}],
                    }
                ],
            }
        },
        "gemini": {
            "candidates": [
                {
                    "content": {"parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "groundingMetadata": {
                        "groundingChunks": [{"web": {"uri": "https://hr.example.com/leave"}}],
                        "groundingSupports": [
                            {"segment": {"endIndex": len(cited)}, "groundingChunkIndices": [0]}
                        ],
                    },
                }
            ]
        },
        "anthropic": _message(
            _cited(cited, Q1, 0, 0, len(Q1)), {"type": "text", "text": " Aspirin cures cancer."}
        ),
    }
    verdict = run(json.dumps(shapes[vendor]))
    assert verdict.format == vendor
    assert [(c.text.strip(), c.reason) for c in verdict.claims] == [
        (cited, None),
        ("Aspirin cures cancer.", "no_citation"),
    ]


@pytest.mark.parametrize(
    "extra", [{"output": []}, {"message": {"role": "assistant"}}, {"choices": []}]
)
def test_our_contract_with_an_extra_key_is_still_our_contract(extra: dict[str, Any]) -> None:
    ours = {
        "answerable": True,
        "claims": [
            {
                "text": "Employees get 16 weeks of paid parental leave.",
                "citations": [{"source": "S1", "quote": Q1}],
            }
        ],
        **extra,
    }
    verdict = run(json.dumps(ours))
    assert (verdict.format, verdict.status) == ("json", "grounded")


def test_a_stream_of_json_lines_is_detected() -> None:
    lines = [
        ln[6:] for ln in fixture("anthropic_stream.sse").splitlines() if ln.startswith("data: ")
    ]
    verdict = run("\n".join(lines))
    assert (verdict.format, verdict.status) == ("anthropic", "grounded")
    lines = [
        ln[6:] for ln in fixture("cohere_v2_stream.sse").splitlines() if ln.startswith("data: ")
    ]
    assert run("\n".join(lines)).format == "cohere"


def test_provider_offsets_inside_another_number_are_not_adopted() -> None:
    text = "Staff in Berlin get 14 weeks of paid leave. Staff in Paris get 4 weeks of paid leave."
    ws = WorkingSet([Source("S1", text)])
    quote = "4 weeks of paid leave"
    inside = text.index("4 weeks")  # the "4" of "14 weeks"
    raw = json.dumps(
        _message(
            _cited("Paris staff get 4 weeks of paid leave.", quote, 0, inside, inside + len(quote))
        )
    )
    c = check(raw, ws).claims[0].citations[0]
    assert c.valid and text[slice(*c.span)] == quote and c.span[0] == text.index("get 4") + 4  # type: ignore[misc]
    assert c.native is not None and c.native["agrees"] is False


@pytest.mark.parametrize(
    "events",
    [
        [
            {"type": "message_start", "message": {"type": "message", "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "citations": 5},
            },
            {"type": "message_stop"},
        ],
        [
            {"type": "message_start", "message": {"type": "message", "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            },
            {"type": "message_stop"},
        ],
        [
            {"type": "message_start", "message": {"type": "message", "content": []}},
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ],
        [{"type": "message_start", "message": None}],
        [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
        ["message_start"],
    ],
)
def test_a_malformed_stream_is_unparseable_never_a_crash(events: list[Any]) -> None:
    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    verdict = run(raw, "anthropic")
    assert verdict.status == "unparseable" and verdict.error


def test_a_url_of_several_chunks_cites_each_and_the_one_that_says_it_keeps_the_claim() -> None:
    ws = WorkingSet(
        [
            Source(
                "S1",
                "The handbook covers travel and expenses.",
                url="https://hr.example/handbook#p1",
            ),
            Source("S2", S1, url="https://hr.example/handbook#p2"),
        ]
    )
    text = "Employees get 16 weeks of paid parental leave."
    raw = json.dumps(_responses(text, _url(0, len(text), "https://hr.example/handbook")))
    verdict = check(raw, ws)
    assert verdict.status == "grounded"
    assert [(c.source, c.valid) for c in verdict.claims[0].citations] == [
        ("S1", False),
        ("S2", True),
    ]


def _responses(text: str, *annotations: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI Responses API response: one message, one output_text with ``annotations``."""
    part = {"type": "output_text", "text": text, "annotations": list(annotations)}
    return {"object": "response", "output": [{"type": "message", "content": [part]}]}


def _url(start: int, end: int, url: str, title: str = "Leave") -> dict[str, Any]:
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": end,
        "url": url,
        "title": title,
    }


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_each_documented_shape_is_claimed_by_its_own_reader_alone(name: str) -> None:
    """The readers' shapes do not overlap on any vendor's documented response: precedence
    (``native.READERS``' order) decides nothing on real responses, only on made-up ones."""
    from quotebound.native import READERS

    data = load(fixture(name))
    if isinstance(data, list):
        claimed = [r.vendor for r in READERS if r.claims_stream(data[0])]
    else:
        claimed = [r.vendor for r in READERS if r.claims_response(data)]
    assert claimed == [name.split(".")[0].split("_")[0]]
    assert detect(data) == claimed[0]


def test_a_shape_two_readers_would_claim_goes_to_the_first() -> None:
    from quotebound.native import READERS, VENDORS

    assert {r.vendor for r in READERS} == set(VENDORS)
    both = {"type": "message", "content": [], "choices": []}  # Anthropic's and Chat Completions'
    assert [r.vendor for r in READERS if r.claims_response(both)] == ["anthropic", "openai"]
    assert detect(both) == "anthropic"
