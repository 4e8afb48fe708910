"""The OpenAI-compatible and Anthropic adapters, faked at the HTTP layer (httpx.MockTransport).

Each handler asserts on the request the adapter sent (URL, headers, body); each answer is then
fed to ``quotebound.verify`` with the working set that was sent, so these tests check the whole
way from the wire to the verdict. No test reaches the network: every provider gets a transport.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from quotebound import Source, Verdict, WorkingSet, verify
from quotebound.contract import (
    SENTINEL,
    answer_schema,
    build_request,
    native_system_prompt,
    repair_request,
)
from quotebound.providers.anthropic import AnthropicProvider
from quotebound.providers.base import Completion, Provider, ProviderError, Request
from quotebound.providers.openai import OpenAIProvider, strict_subset

Handler = Callable[[httpx.Request], httpx.Response]

KEY = "sk-test-0123456789abcdefSECRET"
QUESTION = "How long is parental leave?"
LEAVE = "Parental leave is 14 weeks for all employees."
WS = WorkingSet(
    [
        Source(
            "S1",
            f"{LEAVE} Contractors are not eligible for parental leave.",
            title="Leave policy",
            updated="2026-01-15",
        ),
        Source("S2", "Expense claims are reimbursed within 30 days of submission."),
        Source("S3", "Remote work is allowed up to three days per week."),
    ]
)
LEAVE_SPAN = (0, len(LEAVE))


def body_of(request: httpx.Request) -> dict[str, Any]:
    data = json.loads(request.content)
    assert isinstance(data, dict)
    return data


def openai(handler: Handler, **kw: Any) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-test", base_url="http://llm.test/v1/", transport=httpx.MockTransport(handler), **kw
    )


def anthropic(handler: Handler, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-test", base_url="http://claude.test", transport=httpx.MockTransport(handler), **kw
    )


def ask(provider: Provider, ws: WorkingSet = WS) -> Completion:
    try:
        return provider.complete(build_request(QUESTION, ws, "json", provider.capabilities))
    finally:
        provider.close()


def chat_reply(content: str | None, finish: str = "stop", **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-test-2026",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


def claims_json(quote: str, source: str = "S1", text: str = "Parental leave is 14 weeks.") -> str:
    claim = {"text": text, "citations": [{"source": source, "quote": quote}]}
    return json.dumps({"answerable": True, "claims": [claim], "missing": ""})


def cited(text: str, index: int, quote: str, kind: str = "char_location") -> dict[str, Any]:
    location: dict[str, Any] = {"type": kind, "cited_text": quote, "document_index": index}
    if kind == "char_location":
        location |= {"start_char_index": 0, "end_char_index": len(quote)}
    elif kind == "page_location":
        location |= {"start_page_number": 1, "end_page_number": 2}
    else:
        location |= {"start_block_index": 0, "end_block_index": 1}
    return {"type": "text", "text": text, "citations": [location]}


def plain(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def messages_reply(*blocks: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-2026",
        "content": list(blocks),
        "stop_reason": stop,
        "usage": {"input_tokens": 900, "output_tokens": 40, "cache_read_input_tokens": None},
    }


def replying(payload: dict[str, Any]) -> Handler:
    return lambda request: httpx.Response(200, json=payload)


def verdict_of(provider: Provider) -> Verdict:
    return verify(WS, ask(provider).text)


# -- OpenAI-compatible: the request ------------------------------------------------------------


def test_openai_request_url_headers_and_body_with_schema() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=chat_reply(claims_json(LEAVE)))

    provider = openai(handler, api_key=KEY)
    request = build_request(QUESTION, WS, "json", provider.capabilities)
    provider.complete(request)
    sent = seen[0]
    assert sent.method == "POST"
    assert str(sent.url) == "http://llm.test/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["content-type"] == "application/json"
    body = body_of(sent)
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1024
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in request.messages]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "quotebound_answer",
            "schema": strict_subset(answer_schema(WS)),
            "strict": True,
        },
    }
    options = body["response_format"]["json_schema"]["schema"]["properties"]["claims"]["items"]
    citation = options["properties"]["citations"]["items"]["anyOf"]
    assert [o["properties"]["source"]["const"] for o in citation] == ["S1", "S2", "S3"]
    assert LEAVE in citation[0]["properties"]["quote"]["enum"]


def test_openai_without_json_schema_sends_no_response_format_and_no_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert "authorization" not in request.headers
        assert "response_format" not in body_of(request)
        return httpx.Response(200, json=chat_reply(claims_json(LEAVE)))

    provider = openai(handler, json_schema=False)
    assert provider.capabilities.json_schema is False
    assert OpenAIProvider("m", transport=httpx.MockTransport(handler)).capabilities.json_schema
    assert build_request(QUESTION, WS, "json", provider.capabilities).schema is None
    assert verdict_of(provider).status == "grounded"


# -- OpenAI-compatible: the answer, verified ---------------------------------------------------


def test_openai_verbatim_quote_is_grounded_with_its_span() -> None:
    completion = ask(openai(replying(chat_reply(claims_json(LEAVE)))))
    assert completion.model == "gpt-test-2026"
    assert completion.finish_reason == "stop"
    assert completion.usage == {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    verdict = verify(WS, completion.text)
    assert verdict.status == "grounded"
    assert verdict.claims[0].citations[0].span == LEAVE_SPAN


def test_openai_altered_quote_is_not_found() -> None:
    altered = LEAVE.replace("14", "16")
    verdict = verdict_of(openai(replying(chat_reply(claims_json(altered)))))
    assert verdict.status == "ungrounded"
    assert verdict.claims[0].citations[0].reason == "quote_not_found"


def test_openai_unknown_source_and_sentinel() -> None:
    verdict = verdict_of(openai(replying(chat_reply(claims_json(LEAVE, source="S9")))))
    assert verdict.claims[0].citations[0].reason == "unknown_source"
    assert verdict_of(openai(replying(chat_reply(SENTINEL)))).status == "abstained"


# -- Anthropic: the request --------------------------------------------------------------------


def test_anthropic_request_sends_documents_in_working_set_order() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=messages_reply(cited(LEAVE, 0, LEAVE)))

    provider = anthropic(handler, api_key=KEY)
    assert provider.capabilities.native_citations
    ask(provider)
    sent = seen[0]
    assert str(sent.url) == "http://claude.test/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    body = body_of(sent)
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 1024 and body["temperature"] == 0.0
    assert body["system"] == native_system_prompt(WS)
    [message] = body["messages"]
    assert message["role"] == "user"
    *documents, question = message["content"]
    assert question == {"type": "text", "text": f"Question: {QUESTION}"}
    assert [d["title"] for d in documents] == list(WS.ids)
    for doc, src in zip(documents, WS, strict=True):
        assert doc["type"] == "document"
        assert doc["source"] == {"type": "text", "media_type": "text/plain", "data": src.text}
        assert doc["citations"] == {"enabled": True}
    assert documents[0]["context"] == "title: Leave policy; updated: 2026-01-15"
    assert "context" not in documents[1]


def test_anthropic_repair_turn_follows_the_documents() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(body_of(request))
        return httpx.Response(200, json=messages_reply(cited(LEAVE, 0, LEAVE)))

    provider = anthropic(handler)
    first = build_request(QUESTION, WS, "json", provider.capabilities)
    provider.complete(repair_request(first, "first answer", ["quote for claim 1 not found"]))
    roles = [m["role"] for m in seen[0]["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert seen[0]["messages"][1]["content"] == "first answer"
    assert "quote for claim 1 not found" in seen[0]["messages"][2]["content"]


# -- Anthropic: native citations, read and verified ------------------------------------------


def test_anthropic_verbatim_native_citation_is_grounded_with_its_span() -> None:
    reply = messages_reply(cited("Parental leave is 14 weeks", 0, LEAVE), plain(".\n"))
    provider = anthropic(replying(reply))
    assert provider.capabilities.answers_in == "anthropic"
    completion = ask(provider)
    assert completion.model == "claude-test-2026"
    assert completion.finish_reason == "end_turn"
    assert completion.usage == {"input_tokens": 900, "output_tokens": 40}
    assert json.loads(completion.text) == reply  # exactly what was received, for the trace
    verdict = verify(WS, completion.text, "anthropic")
    assert verdict.status == "grounded" and verdict.format == "anthropic"
    assert [c.text for c in verdict.claims] == ["Parental leave is 14 weeks."]  # the sentence
    citation = verdict.claims[0].citations[0]
    assert citation.span == LEAVE_SPAN
    assert citation.native == {
        "type": "char_location",
        "answer_span": [0, len("Parental leave is 14 weeks")],  # the cited piece in the answer
        "piece": "Parental leave is 14 weeks",
        "offsets": list(LEAVE_SPAN),
        "agrees": True,
    }


@pytest.mark.parametrize("kind", ["page_location", "content_block_location"])
def test_anthropic_other_location_kinds_map_by_document_index(kind: str) -> None:
    claim = "Claims are reimbursed within 30 days"
    quote = "Expense claims are reimbursed within 30 days of submission."
    verdict = verdict_of(anthropic(replying(messages_reply(cited(claim, 1, quote, kind)))))
    assert verdict.status == "grounded"
    assert verdict.claims[0].citations[0].source == "S2"


def test_anthropic_altered_number_in_cited_text_is_not_found() -> None:
    altered = LEAVE.replace("14", "16")
    reply = messages_reply(cited("Parental leave is 16 weeks", 0, altered))
    verdict = verdict_of(anthropic(replying(reply)))
    assert verdict.status == "ungrounded"
    assert verdict.claims[0].citations[0].reason == "quote_not_found"


def test_anthropic_altered_number_in_claim_is_not_in_source() -> None:
    reply = messages_reply(cited("Parental leave is 16 weeks", 0, LEAVE))
    verdict = verdict_of(anthropic(replying(reply)))
    assert verdict.status == "ungrounded"
    assert verdict.claims[0].citations[0].reason == "number_not_in_source"


def test_anthropic_document_index_out_of_range_is_unknown_source() -> None:
    citation = verdict_of(anthropic(replying(messages_reply(cited(LEAVE, 7, LEAVE))))).claims[0]
    assert citation.citations[0].ref == "doc_7"
    assert citation.citations[0].reason == "unknown_source"


def test_out_of_range_label_never_names_a_source_of_the_set() -> None:
    ws = WorkingSet([Source("doc_5", LEAVE), Source("doc_0", "Something else entirely here.")])
    reply = messages_reply(
        cited(LEAVE, 5, LEAVE),
        cited(LEAVE, 1, LEAVE, "search_result_location"),
        {"type": "text", "text": LEAVE, "citations": [{"type": "7", "cited_text": LEAVE}]},
    )
    verdict = verify(ws, ask(anthropic(replying(reply)), ws).text)
    refs = [c.citations[0].ref for c in verdict.claims]
    assert refs[0] != "doc_5" and refs[0] not in ws
    assert refs[1] == "search_result_location"  # not a document location: never guessed
    assert refs[2] not in ws and not refs[2].isdigit()
    reasons = [c.citations[0].reason for c in verdict.claims]
    assert reasons == ["unknown_source", "unknown_source", "unknown_source"]


def test_anthropic_claims_are_the_answers_sentences_with_the_pieces_cited_in_them() -> None:
    reply = messages_reply(
        plain("According to the policy, "),
        cited("parental leave is 14 weeks", 0, LEAVE),
        plain(". "),
        plain("\n"),
        cited("Claims are paid within 30 days", 1, WS.sources[1].text),
        plain(" — "),
        plain("and managers say it is the most generous policy around. "),
        plain("Managers also plan cover for every absence."),
    )
    verdict = verdict_of(anthropic(replying(reply)))
    assert [(c.text, c.reason, len(c.citations)) for c in verdict.claims] == [
        ("According to the policy, parental leave is 14 weeks.", None, 1),
        (
            "Claims are paid within 30 days — and managers say it is the most generous "
            "policy around.",
            None,
            1,
        ),
        ("Managers also plan cover for every absence.", "no_citation", 0),
    ]
    assert [c.notes for c in verdict.claims] == [(), (), ()]  # no piece is a fragment now
    assert verdict.status == "partial"
    # the cited piece is where it was in the answer
    text = "".join(block["text"] for block in reply["content"])
    a, b = verdict.claims[0].citations[0].native["answer_span"]  # type: ignore[index]
    assert text[a:b] == "parental leave is 14 weeks"


@pytest.mark.parametrize(
    "glue",
    [
        [plain("According to the policy, ")],
        [plain("In addition, ")],
        [plain("In "), plain("addition, ")],  # joined, then judged
        [plain("As stated in the handbook: ")],  # 5 words
        [plain(" — ")],
        [plain("...\n\n")],
    ],
)
def test_anthropic_uncited_connective_is_not_a_claim(glue: list[dict[str, Any]]) -> None:
    # before the cited block it is part of the cited sentence; after it, glue left over
    reply = messages_reply(*glue, cited(LEAVE, 0, LEAVE), *glue)
    verdict = verdict_of(anthropic(replying(reply)))
    lead = "".join(block["text"] for block in glue).strip()
    lead = "" if lead.endswith("...") else lead  # a paragraph of its own
    assert [c.text for c in verdict.claims] == [f"{lead} {LEAVE}".strip()]
    assert verdict.status == "grounded"


@pytest.mark.parametrize(
    "uncited",
    [
        [plain("It was 16 weeks.")],  # short, but it states a number
        [plain("Since 2025, ")],
        [plain("Managers should plan cover for absences.")],  # 6 words
        [plain("Managers should "), plain("plan cover for absences.")],
        [plain("In addition, managers are told to plan cover early.")],
        [plain(" Aspirin cures cancer.")],  # short, but a whole sentence
    ],
)
def test_anthropic_uncited_statement_is_a_claim(uncited: list[dict[str, Any]]) -> None:
    reply = messages_reply(cited(LEAVE, 0, LEAVE), *uncited)
    verdict = verdict_of(anthropic(replying(reply)))
    text = "".join(block["text"] for block in uncited).strip()
    assert [(c.text, c.citations) for c in verdict.claims[1:]] == [(text, ())]
    assert [c.reason for c in verdict.claims] == [None, "no_citation"]


@pytest.mark.parametrize(
    "blocks",
    [
        [plain(SENTINEL)],
        [plain("Not covered by the "), plain("provided documents.\n")],
        [plain(f'"{SENTINEL}"')],
    ],
)
def test_anthropic_sentinel_is_abstention(blocks: list[dict[str, Any]]) -> None:
    assert verdict_of(anthropic(replying(messages_reply(*blocks)))).status == "abstained"


def test_anthropic_skips_non_text_blocks() -> None:
    thinking = {"type": "thinking", "thinking": "S1 says 16 weeks?", "signature": "x"}
    reply = messages_reply(thinking, cited(LEAVE, 0, LEAVE))
    assert verdict_of(anthropic(replying(reply))).status == "grounded"


def test_anthropic_error_object_in_a_200_is_quoted() -> None:
    error = error_of(anthropic(replying({"type": "error", "error": {"message": "overloaded"}})))
    assert error.kind == "bad_response" and "overloaded" in str(error)


# -- errors, both adapters ---------------------------------------------------------------------

Make = Callable[..., Provider]
ADAPTERS = [pytest.param(openai, id="openai"), pytest.param(anthropic, id="anthropic")]


def raising(exc_type: type[httpx.RequestError], message: str) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc_type(message, request=request)

    return handler


def error_of(provider: Provider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        ask(provider)
    assert KEY not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("make", ADAPTERS)
def test_timeout(make: Make) -> None:
    error = error_of(make(raising(httpx.ReadTimeout, "timed out"), api_key=KEY, timeout=2.5))
    assert error.kind == "timeout"
    assert "2.5s" in str(error)


@pytest.mark.parametrize("make", ADAPTERS)
def test_connection_error(make: Make) -> None:
    handler = raising(httpx.ConnectError, f"[Errno 111] Connection refused {KEY}")
    error = error_of(make(handler, api_key=KEY))
    assert error.kind == "http_error"
    assert "could not reach" in str(error) and "Connection refused" in str(error)


@pytest.mark.parametrize("make", ADAPTERS)
@pytest.mark.parametrize("status", [401, 403])
def test_auth_error_names_the_setting_and_hides_the_key(make: Make, status: int) -> None:
    body = {"error": {"type": "authentication_error", "message": f"Incorrect API key: {KEY}"}}
    error = error_of(make(lambda r: httpx.Response(status, json=body), api_key=KEY))
    assert error.kind == "auth"
    env = "OPENAI_API_KEY" if make is openai else "ANTHROPIC_API_KEY"
    assert env in str(error) and "--api-key" in str(error)
    assert str(status) in str(error) and "refused" in str(error)


@pytest.mark.parametrize("make", ADAPTERS)
def test_auth_error_without_a_key_says_none_was_sent(make: Make) -> None:
    error = error_of(make(lambda r: httpx.Response(401, json={"error": {"message": "no key"}})))
    assert error.kind == "auth"
    assert "no API key was sent" in str(error)


@pytest.mark.parametrize("make", ADAPTERS)
def test_rate_limit_is_an_http_error_with_the_message(make: Make) -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit hit"}}
    error = error_of(make(lambda r: httpx.Response(429, json=body), api_key=KEY))
    assert error.kind == "http_error"
    assert "HTTP 429" in str(error) and "Rate limit hit" in str(error)


@pytest.mark.parametrize("make", ADAPTERS)
def test_server_error_excerpt_is_short_and_secret_free(make: Make) -> None:
    body = f"upstream exploded; headers were Authorization: Bearer {KEY} " + "x" * 5000
    error = error_of(make(lambda r: httpx.Response(500, text=body), api_key=KEY))
    assert error.kind == "http_error"
    assert "HTTP 500" in str(error) and "upstream exploded" in str(error)
    assert "SECRET" not in str(error)
    assert len(str(error)) < 400


@pytest.mark.parametrize("make", ADAPTERS)
@pytest.mark.parametrize("body", ["not json{", "[1, 2]", ""])
def test_malformed_json_is_a_bad_response(make: Make, body: str) -> None:
    error = error_of(make(lambda r: httpx.Response(200, text=body), api_key=KEY))
    assert error.kind == "bad_response"


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"choices": []},
        {"choices": ["x"]},
        {"choices": [{"finish_reason": "stop"}]},
        {"choices": [{"message": {"role": "assistant"}, "finish_reason": "stop"}]},
        {"choices": [{"message": {"content": "hi"}, "finish_reason": 3}]},
        {"error": {"message": "model not loaded"}},
    ],
)
def test_openai_missing_fields_are_a_bad_response(payload: dict[str, Any]) -> None:
    assert error_of(openai(replying(payload))).kind == "bad_response"


def test_openai_error_object_in_a_200_is_quoted() -> None:
    error = error_of(openai(replying({"error": {"message": "model not loaded"}})))
    assert "model not loaded" in str(error)


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"content": "Parental leave is 14 weeks."},
        {"content": [{"text": "no type"}]},
        {"content": [{"type": "text"}]},
        {"content": [{"type": "text", "text": "x", "citations": "S1"}]},
        {"content": [{"type": "text", "text": "x", "citations": ["S1"]}]},
        {"content": [{"type": "text", "text": "x", "citations": [{"document_index": 0}]}]},
        {"content": [], "stop_reason": 1},
    ],
)
def test_anthropic_missing_fields_are_a_bad_response(payload: dict[str, Any]) -> None:
    assert error_of(anthropic(replying(payload))).kind == "bad_response"


def test_truncated() -> None:
    error = error_of(openai(replying(chat_reply('{"answerable": true, "cl', "length"))))
    assert error.kind == "truncated" and "max_tokens=1024" in str(error)
    cut = messages_reply(cited("Parental leave", 0, LEAVE), stop="max_tokens")
    assert error_of(anthropic(replying(cut))).kind == "truncated"


@pytest.mark.parametrize(
    "payload",
    [
        chat_reply(None, refusal="I can't help with that."),
        chat_reply("", "content_filter"),
    ],
)
def test_openai_refusal(payload: dict[str, Any]) -> None:
    error = error_of(openai(replying(payload)))
    assert error.kind == "refusal"


def test_openai_refusal_text_is_in_the_message() -> None:
    error = error_of(openai(replying(chat_reply(None, refusal="I can't help with that."))))
    assert "I can't help with that." in str(error)


def test_anthropic_refusal() -> None:
    error = error_of(anthropic(replying(messages_reply(stop="refusal"))))
    assert error.kind == "refusal"


@pytest.mark.parametrize("cls", [OpenAIProvider, AnthropicProvider])
@pytest.mark.parametrize("url", ["ftp://llm.test", "localhost:8000", "http://", ""])
def test_a_bad_base_url_is_a_config_error(
    cls: type[OpenAIProvider] | type[AnthropicProvider], url: str
) -> None:
    with pytest.raises(ProviderError) as caught:
        cls("m", base_url=url)
    assert caught.value.kind == "config"


def test_error_messages_hide_credentials_in_the_base_url() -> None:
    handler = raising(httpx.ConnectError, "refused")
    provider = OpenAIProvider(
        "m", base_url="http://user:pw-SECRET@llm.test/v1", transport=httpx.MockTransport(handler)
    )
    error = error_of(provider)
    assert "SECRET" not in str(error) and "llm.test/v1/chat/completions" in str(error)


# -- configuration from the environment --------------------------------------------------------


def expecting(url: str, header: str, value: str, reply: dict[str, Any]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        assert str(request.url) == url
        assert request.headers[header] == value
        return httpx.Response(200, json=reply)

    return handler


def test_openai_from_env_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    reply = chat_reply(claims_json(LEAVE))
    handler = expecting(
        "http://env.test/v1/chat/completions", "authorization", "Bearer env-key", reply
    )
    provider = OpenAIProvider.from_env("m", transport=httpx.MockTransport(handler))
    assert verify(WS, ask(provider).text).status == "grounded"


def test_openai_from_env_explicit_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    reply = chat_reply(claims_json(LEAVE))
    handler = expecting("http://arg.test/v1/chat/completions", "authorization", "Bearer arg", reply)
    provider = OpenAIProvider.from_env(
        "m",
        base_url="http://arg.test/v1",
        api_key="arg",
        json_schema=False,
        transport=httpx.MockTransport(handler),
    )
    assert not provider.capabilities.json_schema
    ask(provider)


def test_openai_from_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAIProvider.from_env("m", transport=httpx.MockTransport(replying({})))
    assert provider.base_url == "https://api.openai.com/v1"
    assert error_of(provider).kind == "bad_response"


def test_anthropic_from_env_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    reply = messages_reply(cited(LEAVE, 0, LEAVE))
    handler = expecting("http://env.test/v1/messages", "x-api-key", "env-key", reply)
    provider = AnthropicProvider.from_env("claude-test", transport=httpx.MockTransport(handler))
    assert verify(WS, ask(provider).text).status == "grounded"


def test_anthropic_from_env_explicit_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    reply = messages_reply(cited(LEAVE, 0, LEAVE))
    handler = expecting("http://arg.test/v1/messages", "x-api-key", "arg", reply)
    provider = AnthropicProvider.from_env(
        "m", base_url="http://arg.test", api_key="arg", transport=httpx.MockTransport(handler)
    )
    ask(provider)


def test_anthropic_from_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = AnthropicProvider.from_env("m", transport=httpx.MockTransport(replying({})))
    assert provider.base_url == "https://api.anthropic.com"
    assert error_of(provider).kind == "bad_response"


def test_request_schema_is_only_built_for_schema_capable_providers() -> None:
    never: Handler = replying({})
    assert isinstance(build_request(QUESTION, WS, "json", openai(never).capabilities), Request)
    assert build_request(QUESTION, WS, "json", openai(never).capabilities).schema is not None
    assert build_request(QUESTION, WS, "json", anthropic(never).capabilities).schema is None


def test_strict_subset_drops_only_what_strict_mode_refuses() -> None:
    schema = answer_schema(WS)
    strict = strict_subset(schema)
    text = json.dumps(strict)
    assert all(k not in text for k in ('"maxLength"', '"maxItems"', '"minItems"'))
    assert '"additionalProperties": false' in text and '"enum"' in text and '"const"' in text
    assert json.dumps(schema) != text  # the local model still gets the bounds


def test_openai_judge_reads_the_first_tokens_log_probabilities() -> None:
    """The scored judge over an OpenAI-compatible API: ``logprobs`` and ``top_logprobs`` sent,
    one token asked for, and ``choices[0].logprobs.content[0].top_logprobs`` read back in the
    shape OpenAI's chat completions reference documents; a one-token answer stopped at
    ``length`` is what a scored call expects, not a truncation."""
    from quotebound.entailment.judge import JudgeBackend

    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(body_of(request))
        top = [
            {"token": "Yes", "logprob": -0.2, "bytes": [89, 101, 115]},
            {"token": "No", "logprob": -1.8, "bytes": [78, 111]},
            {"token": " Yes", "logprob": -4.0, "bytes": [32, 89, 101, 115]},
        ]
        reply = chat_reply("Yes", finish="length")
        reply["choices"][0]["logprobs"] = {
            "content": [
                {"token": "Yes", "logprob": -0.2, "bytes": [89, 101, 115], "top_logprobs": top}
            ],
            "refusal": None,
        }
        return httpx.Response(200, json=reply)

    judge = JudgeBackend(openai(handler, api_key=KEY), threshold=0.6)
    judgement = judge.judge("Parental leave is 14 weeks.", LEAVE)
    body = seen[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 10 and body["max_tokens"] == 1
    assert "response_format" not in body  # one free token, read by its probabilities
    p = (math.exp(-0.2) + math.exp(-4.0)) / (math.exp(-0.2) + math.exp(-4.0) + math.exp(-1.8))
    assert judgement.supported and judgement.score == pytest.approx(p)
    assert judgement.version == "judge-2+openai:gpt-test+p>=0.6"


def test_openai_answers_cut_at_length_are_still_truncated() -> None:
    provider = openai(lambda r: httpx.Response(200, json=chat_reply("{", finish="length")))
    with pytest.raises(ProviderError) as caught:
        ask(provider)
    assert caught.value.kind == "truncated"
