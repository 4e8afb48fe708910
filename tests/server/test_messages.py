"""``POST /v1/messages``: Anthropic's Messages API answered by quotebound, spoken to with the
official ``anthropic`` SDK against a served app (a scripted model, or the extractive one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kits.serverkit import closed_after_test, live_server
from quotebound.providers.base import Completion
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.providers.scripted import ScriptedProvider
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store

anthropic = pytest.importorskip("anthropic")

LEAVE = (
    "Employees are entitled to 16 weeks of paid parental leave unless local law provides more. "
    "Leave may be taken in up to three blocks within 12 months of the birth or adoption."
)
# a model that quotes the policy for one claim and makes up a quote for another
FABRICATED = json.dumps(
    {
        "answerable": True,
        "claims": [
            {
                "text": "Employees get 16 weeks of paid parental leave.",
                "citations": [
                    {
                        "source": "S1",
                        "quote": "Employees are entitled to 16 weeks of paid parental leave",
                    }
                ],
            },
            {
                "text": "Employees get a company car.",
                "citations": [{"source": "S1", "quote": "Every employee is given a company car"}],
            },
        ],
    }
)
GERMANY = "In Germany, the company tops up statutory parental allowance to full salary."


def _served(tmp_path: Path, provider: Any) -> Iterator[tuple[str, str]]:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="sdk")[1]
    app = create_app(ServerConfig(store_url=url, provider=lambda: provider))
    with live_server(app) as base:
        yield base, secret


@pytest.fixture
def extractive(tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield from _served(tmp_path, ExtractiveProvider())


def _client(base: str, secret: str) -> Any:
    return closed_after_test(anthropic.Anthropic(api_key=secret, base_url=base, max_retries=0))


def _turn(question: str, document: str = LEAVE) -> list[dict[str, Any]]:
    """One user turn: ``document`` as a text document with citations, then ``question``."""
    return [
        {
            "role": "user",
            "content": [_text_document(document), {"type": "text", "text": question}],
        }
    ]


def _text_document(text: str, title: str = "Leave policy") -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
        "title": title,
        "citations": {"enabled": True},
    }


def test_a_text_document_is_answered_with_char_locations_that_hold_their_text(
    extractive: tuple[str, str],
) -> None:
    base, secret = extractive
    document = LEAVE + " " + GERMANY
    message = _client(base, secret).messages.create(
        model="quotebound-extractive",
        max_tokens=512,
        messages=[
            {
                "role": "user",
                "content": [
                    _text_document(document),
                    {"type": "text", "text": "How many weeks of paid parental leave?"},
                ],
            }
        ],
    )
    assert message.role == "assistant" and message.stop_reason == "end_turn"
    cited = [c for block in message.content for c in (block.citations or [])]
    assert cited, message.content
    for c in cited:
        assert c.type == "char_location" and c.document_index == 0
        assert document[c.start_char_index : c.end_char_index] == c.cited_text
        assert c.document_title == "Leave policy"
    assert any("16 weeks" in c.cited_text for c in cited)


def test_custom_content_and_search_results_cite_their_blocks(
    extractive: tuple[str, str],
) -> None:
    base, secret = extractive
    blocks = [{"type": "text", "text": LEAVE}, {"type": "text", "text": GERMANY}]
    message = _client(base, secret).messages.create(
        model="quotebound-extractive",
        max_tokens=512,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "search_result",
                        "source": "https://handbook.example/leave",
                        "title": "Leave",
                        "content": blocks,
                        "citations": {"enabled": True},
                    },
                    {"type": "text", "text": "Who tops up the parental allowance in Germany?"},
                ],
            }
        ],
    )
    cited = [c for block in message.content for c in (block.citations or [])]
    assert cited and all(c.type == "search_result_location" for c in cited)
    for c in cited:
        assert c.search_result_index == 0 and c.source == "https://handbook.example/leave"
        texts = [b["text"] for b in blocks[c.start_block_index : c.end_block_index]]
        assert c.cited_text == "\n\n".join(texts)
    content = _client(base, secret).messages.create(
        model="quotebound-extractive",
        max_tokens=512,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "content", "content": blocks},
                        "title": "Leave",
                        "citations": {"enabled": True},
                    },
                    {"type": "text", "text": "How many weeks of paid parental leave?"},
                ],
            }
        ],
    )
    located = [c for block in content.content for c in (block.citations or [])]
    assert located and all(c.type == "content_block_location" for c in located)


def test_a_fabricated_quote_is_never_returned(tmp_path: Path) -> None:
    provider = ScriptedProvider([FABRICATED, FABRICATED])
    for base, secret in _served(tmp_path, provider):
        message = _client(base, secret).messages.create(
            model="quotebound-scripted",
            max_tokens=256,
            messages=_turn("What benefits?"),
        )
        text = " ".join(b.text for b in message.content)
        assert "16 weeks" in text and "company car" not in text
        cited = [c.cited_text for b in message.content for c in (b.citations or [])]
        assert all("company car" not in c for c in cited)


def test_usage_is_the_tokens_the_model_reported_over_its_attempts(tmp_path: Path) -> None:
    # the first attempt (OpenAI's names, as llama.cpp reports them) fabricates a quote, so the
    # repair turn runs (Anthropic's names): usage is both calls' tokens
    provider = ScriptedProvider(
        [
            Completion(FABRICATED, "scripted", {"prompt_tokens": 120, "completion_tokens": 40}),
            Completion(FABRICATED, "scripted", {"input_tokens": 130, "output_tokens": 20}),
        ]
    )
    for base, secret in _served(tmp_path, provider):
        message = _client(base, secret).messages.create(
            model="quotebound-scripted",
            max_tokens=256,
            messages=_turn("What benefits?"),
        )
        assert (message.usage.input_tokens, message.usage.output_tokens) == (250, 60)
        trace = httpx.get(
            f"{base}/v1/traces/{message.id.removeprefix('msg_')}",
            headers={"Authorization": f"Bearer {secret}"},
        ).json()
        assert trace["counts"]["input_tokens"] == 250 and trace["counts"]["output_tokens"] == 60


def test_langchains_chat_anthropic_pointed_at_the_server_keeps_the_citations(
    extractive: tuple[str, str],
) -> None:
    lc = pytest.importorskip("langchain_anthropic")
    from langchain_core.messages import HumanMessage

    base, secret = extractive
    llm = lc.ChatAnthropic(
        model="quotebound-extractive", api_key=secret, base_url=base, max_retries=0, max_tokens=512
    )
    asked = [
        HumanMessage(
            content=[
                _text_document(LEAVE + " " + GERMANY),
                {"type": "text", "text": "How many weeks of paid parental leave?"},
            ]
        )
    ]
    for reply in (llm.invoke(asked), _joined(llm.stream(asked))):
        blocks = [b for b in reply.content if isinstance(b, dict) and b.get("type") == "text"]
        cited = [c for b in blocks for c in b.get("citations") or []]
        assert any("16 weeks" in b["text"] for b in blocks) and cited
        for c in cited:
            assert c["type"] == "char_location" and c["document_title"] == "Leave policy"
            assert (LEAVE + " " + GERMANY)[c["start_char_index"] : c["end_char_index"]] == (
                c["cited_text"]
            )


def _joined(chunks: Iterator[Any]) -> Any:
    whole = None
    for chunk in chunks:
        whole = chunk if whole is None else whole + chunk
    return whole


# An earlier major release of the SDK (0.x: x-api-key, no later headers), in its own folder
# beside the venv (the Makefile installs it there: one venv cannot hold two releases).
OLD_SDK = Path(__file__).resolve().parents[2] / ".venv" / "sdk" / "anthropic-0"
OLD_CLIENT = """
import json, sys
import anthropic
assert anthropic.__version__.startswith("0."), anthropic.__version__
client = anthropic.Anthropic(api_key=sys.argv[2], base_url=sys.argv[1], max_retries=0)
message = client.messages.create(
    model="quotebound-extractive",
    max_tokens=256,
    messages=[{"role": "user", "content": [json.loads(sys.argv[3]),
              {"type": "text", "text": "How many weeks of paid parental leave?"}]}],
)
print(json.dumps([b.model_dump() for b in message.content]))
"""


def test_an_earlier_sdk_release_reads_the_same_answer(extractive: tuple[str, str]) -> None:
    if not (OLD_SDK / "anthropic").is_dir():
        pytest.skip("the 0.x SDK is not installed beside the venv (make test installs it)")
    base, secret = extractive
    env = {**os.environ, "PYTHONPATH": str(OLD_SDK)}
    done = subprocess.run(
        [sys.executable, "-c", OLD_CLIENT, base, secret, json.dumps(_text_document(LEAVE))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    blocks = json.loads(done.stdout)
    cited = [c for b in blocks for c in b.get("citations") or []]
    assert any("16 weeks" in b["text"] for b in blocks) and cited
    assert all(LEAVE[c["start_char_index"] : c["end_char_index"]] == c["cited_text"] for c in cited)


SENTENCE = (
    "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
)


def _claude(request: httpx.Request) -> httpx.Response:
    """Claude behind the Messages API, faked at the HTTP layer: it cites the document it was
    sent that holds the leave sentence (right), and makes up a company car (wrong)."""
    sent = json.loads(request.content)["messages"][0]["content"]
    documents = [b for b in sent if b.get("type") == "document"]
    at = next(n for n, d in enumerate(documents) if SENTENCE in json.dumps(d))

    def cited(text: str, quote: str) -> dict[str, Any]:
        location = {"type": "char_location", "cited_text": quote, "document_index": at}
        location |= {"start_char_index": 0, "end_char_index": len(quote)}
        return {"type": "text", "text": text, "citations": [location]}

    content = [
        cited("Employees get 16 weeks of paid parental leave.", SENTENCE),
        {"type": "text", "text": " "},
        cited("Every employee also gets a company car.", "Every employee is given a company car."),
    ]
    reply = {
        "id": "msg_claude",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 700, "output_tokens": 45},
    }
    return httpx.Response(200, json=reply)


def test_a_request_names_its_backend_and_claudes_own_citations_are_verified(
    tmp_path: Path,
) -> None:
    from quotebound.providers.anthropic import AnthropicProvider

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="sdk")[1]

    def claude() -> AnthropicProvider:
        return AnthropicProvider(
            "claude-test", api_key="sk-ant-test", transport=httpx.MockTransport(_claude)
        )

    config = ServerConfig(store_url=url, backends={"claude": claude})
    with live_server(create_app(config)) as base:
        client = _client(base, secret)
        assert [m.id for m in client.models.list()] == [
            "quotebound-extractive",
            "extractive",
            "claude",
        ]
        request = {
            "max_tokens": 256,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        _text_document(LEAVE + " " + GERMANY),
                        {"type": "text", "text": "What do employees get?"},
                    ],
                }
            ],
        }
        message = client.messages.create(model="claude", **request)
        assert message.model == "claude" and message.usage.output_tokens == 90  # with a repair
        text = " ".join(b.text for b in message.content)
        assert "16 weeks" in text and "company car" not in text
        cited = [c for b in message.content for c in (b.citations or [])]
        assert cited and all(
            (LEAVE + " " + GERMANY)[c.start_char_index : c.end_char_index] == c.cited_text
            for c in cited
        )
        # the served model still answers under its own names; an unknown one is a 404
        assert client.messages.create(model="quotebound-extractive", **request).content
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(model="claude-2", **request)


def test_a_follow_up_turn_is_asked_with_the_turn_it_leans_on() -> None:
    from quotebound.server.messages import read_request

    turns = [
        {
            "role": "user",
            "content": [_text_document(LEAVE), {"type": "text", "text": "How long is leave?"}],
        },
        {"role": "assistant", "content": "Sixteen weeks."},
        {"role": "user", "content": "And in Germany?"},
    ]
    body = {"model": "m", "max_tokens": 9, "messages": turns}
    assert read_request(body)[0] == "How long is leave? And in Germany?"
    turns[-1] = {"role": "user", "content": "Which laptops do contractors get?"}
    assert read_request(body)[0] == "Which laptops do contractors get?"  # a new question
    # a last turn that says nothing is an error, never the turn before it answered again
    from quotebound.server.messages import MessagesError

    for said in ("   ", [_text_document(LEAVE)]):
        turns[-1] = {"role": "user", "content": said}
        with pytest.raises(MessagesError, match="the last user turn asks nothing"):
            read_request(body)
    with pytest.raises(MessagesError, match="model: a string is required"):
        read_request({**body, "model": ["m"]})


def test_a_backend_that_cannot_be_made_leaves_the_worker_ready(tmp_path: Path) -> None:
    from quotebound.providers.base import ProviderError

    def broken() -> Any:
        raise ProviderError("config", "no such model file")

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="sdk")[1]
    config = ServerConfig(store_url=url, backends={"broken": broken})
    with live_server(create_app(config)) as base:
        assert httpx.get(f"{base}/readyz").status_code == 200
        reply = httpx.post(
            f"{base}/v1/messages",
            json={
                "model": "broken",
                "max_tokens": 9,
                "messages": _turn("?"),
            },
            headers={"x-api-key": secret},
        )
        assert reply.status_code >= 500 and reply.json()["type"] == "error"
        assert "Traceback" not in reply.text


def test_auth_both_ways_and_errors_in_anthropics_envelope(extractive: tuple[str, str]) -> None:
    base, secret = extractive
    ask = {
        "model": "quotebound-extractive",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": [_text_document(LEAVE), {"type": "text", "text": "Leave?"}]}
        ],
    }
    bearer = httpx.post(
        f"{base}/v1/messages", json=ask, headers={"Authorization": f"Bearer {secret}"}
    )
    assert bearer.status_code == 200 and bearer.headers["quotebound-trace-id"]
    cases = [
        ({}, ask, 401, "authentication_error"),
        ({"x-api-key": secret}, {**ask, "model": "claude-nope"}, 404, "not_found_error"),
        ({"x-api-key": secret}, {**ask, "messages": []}, 400, "invalid_request_error"),
        (
            {"x-api-key": secret},
            {k: v for k, v in ask.items() if k != "max_tokens"},
            400,
            "invalid_request_error",
        ),
        (
            {"x-api-key": secret},
            {
                **ask,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image", "source": {}}, {"type": "text", "text": "x"}],
                    }
                ],
            },
            400,
            "invalid_request_error",
        ),
    ]
    for headers, body, status, kind in cases:
        reply = httpx.post(
            f"{base}/v1/messages", json=body, headers={**headers, "anthropic-version": "2023-06-01"}
        )
        assert reply.status_code == status, reply.text
        assert reply.json() == {
            "type": "error",
            "error": {"type": kind, "message": reply.json()["error"]["message"]},
        }
    broken = httpx.post(f"{base}/v1/messages", content=b"{not json", headers={"x-api-key": secret})
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "invalid_request_error"
    image = httpx.post(
        f"{base}/v1/messages",
        json={**ask, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
        headers={"x-api-key": secret},
    )
    assert "'image'" in image.json()["error"]["message"]
    with pytest.raises(anthropic.AuthenticationError):
        _client(base, "qb_wrong").messages.create(**ask)
    models = _client(base, secret).models.list()
    assert "quotebound-extractive" in [m.id for m in models.data]


def test_the_docs_example_runs_against_the_server(
    extractive: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    page = Path(__file__).resolve().parents[2] / "docs" / "messages-api.md"
    blocks = re.findall(r"```py\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 2  # the SDK's, then LangChain's ChatAnthropic
    base, secret = extractive
    for block in blocks:
        code = (
            block.replace('"http://127.0.0.1:8000"', repr(base))
            .replace('"qb_..."', repr(secret))
            .replace('"quotebound-local"', '"quotebound-extractive"')
        )
        exec(compile(code, "docs/messages-api.md", "exec"), {})
        printed = capsys.readouterr().out
        assert "Employees are entitled to 16 weeks" in printed and "['Employees" in printed


NODE_SDK = Path(__file__).resolve().parents[2] / ".venv" / "sdk" / "node"


def test_the_typescript_sdk_reads_the_docs_answer_and_its_citations(
    extractive: tuple[str, str], tmp_path: Path
) -> None:
    """The docs' TypeScript block, run by Node.js as an ES module with the official
    ``@anthropic-ai/sdk`` (installed beside the venv by the Makefile) against the server."""
    import re
    import shutil

    node = shutil.which("node")
    if node is None or not (NODE_SDK / "node_modules" / "@anthropic-ai" / "sdk").is_dir():
        pytest.skip("Node.js and @anthropic-ai/sdk beside the venv (make test installs them)")
    page = Path(__file__).resolve().parents[2] / "docs" / "messages-api.md"
    (block,) = re.findall(r"```ts\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
    base, secret = extractive
    code = (
        block.replace('"http://127.0.0.1:8000"', json.dumps(base))
        .replace('"qb_..."', json.dumps(secret))
        .replace('"quotebound-local"', '"quotebound-extractive"')
    )
    script = NODE_SDK / f"docs_example_{os.getpid()}.mjs"  # beside node_modules, to import it
    script.write_text(code, encoding="utf-8")
    try:
        done = subprocess.run(
            [node, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
    finally:
        script.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Employees are entitled to 16 weeks" in done.stdout
    assert "[ 'Employees are entitled to 16 weeks" in done.stdout  # the citation's cited_text


def test_a_stream_carries_only_verified_claims_and_the_sdk_reads_its_citations(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider([FABRICATED] * 4)
    for base, secret in _served(tmp_path, provider):
        request = {
            "model": "quotebound-scripted",
            "max_tokens": 256,
            "messages": _turn("Benefits?"),
        }
        kinds: list[str] = []
        with _client(base, secret).messages.stream(**request) as stream:
            for event in stream:
                kinds.append(event.type)
            final = stream.get_final_message()
        text = " ".join(b.text for b in final.content)
        assert "16 weeks" in text and "company car" not in text
        cited = [c for b in final.content for c in (b.citations or [])]
        assert cited and all(
            LEAVE[c.start_char_index : c.end_char_index] == c.cited_text for c in cited
        )
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "citation" in kinds  # the SDK's own event for a citations_delta
        raw = httpx.post(
            f"{base}/v1/messages", json={**request, "stream": True}, headers={"x-api-key": secret}
        )
        assert "company car" not in raw.text and "event: message_stop" in raw.text
        # the script is spent: the model fails, and the stream ends with an error event
        failed = httpx.post(
            f"{base}/v1/messages", json={**request, "stream": True}, headers={"x-api-key": secret}
        )
        assert failed.text.startswith("event: error") and "api_error" in failed.text


def test_a_pdf_is_answered_with_page_locations_and_a_bad_one_is_named(
    extractive: tuple[str, str],
) -> None:
    import base64

    from kits.pdfkit import make_pdf

    pdf = make_pdf(
        [
            ["Travel is booked through the portal.", "Economy class is the rule."],
            ["Employees are entitled to 16 weeks of paid parental leave.", "Ask HR for forms."],
        ],
        title="Handbook",
    )
    base, secret = extractive
    document = {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(pdf).decode(),
        },
        "citations": {"enabled": True},
    }
    message = _client(base, secret).messages.create(
        model="quotebound-extractive",
        max_tokens=256,
        messages=[
            {
                "role": "user",
                "content": [
                    document,
                    {"type": "text", "text": "How many weeks of parental leave?"},
                ],
            }
        ],
    )
    cited = [c for b in message.content for c in (b.citations or [])]
    assert cited and all(c.type == "page_location" for c in cited)
    leave = next(c for c in cited if "16 weeks" in c.cited_text)
    assert (leave.start_page_number, leave.end_page_number) == (2, 3)
    for data, said in (
        ("%%%", "not valid base64"),
        (base64.b64encode(b"hello").decode(), "not a PDF"),
    ):
        broken = {**document, "source": {**document["source"], "data": data}}
        reply = httpx.post(
            f"{base}/v1/messages",
            json={
                "model": "quotebound-extractive",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": [broken, {"type": "text", "text": "?"}]}],
            },
            headers={"x-api-key": secret},
        )
        assert reply.status_code == 400 and said in reply.json()["error"]["message"]


def test_a_request_over_the_body_limit_is_request_too_large(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="sdk")[1]
    app = create_app(ServerConfig(store_url=url, max_body_bytes=2048))
    with live_server(app) as base:
        big = {
            "model": "quotebound-extractive",
            "max_tokens": 10,
            "messages": [
                {
                    "role": "user",
                    "content": [_text_document("word " * 1000), {"type": "text", "text": "?"}],
                }
            ],
        }
        reply = httpx.post(f"{base}/v1/messages", json=big, headers={"x-api-key": secret})
        assert reply.status_code == 413
        assert (
            reply.json()["type"] == "error" and reply.json()["error"]["type"] == "request_too_large"
        )
        with pytest.raises(anthropic.APIStatusError) as raised:
            _client(base, secret).messages.create(**big)
        assert raised.value.status_code == 413

        def undeclared() -> Iterator[bytes]:  # sent in chunks: no Content-Length
            yield json.dumps(big).encode()

        headers = {"x-api-key": secret, "content-type": "application/json"}
        reply = httpx.post(f"{base}/v1/messages", content=undeclared(), headers=headers)
        assert reply.status_code == 413 and reply.json()["error"]["type"] == "request_too_large"
        reply = httpx.post(
            f"{base}/v1/messages",
            json={**big, "messages": _turn("?"), "stream": "yes"},
            headers={"x-api-key": secret},
        )
        assert reply.status_code == 400 and "stream" in reply.json()["error"]["message"]


def test_a_model_that_cannot_be_made_is_an_api_error_in_anthropics_envelope(
    tmp_path: Path,
) -> None:
    from quotebound.providers.base import ProviderError

    def broken() -> Any:
        raise ProviderError("config", "no model file at /nowhere.gguf")

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="sdk")[1]
    app = create_app(ServerConfig(store_url=url, provider=broken, warm=False))
    with live_server(app) as base:
        request = {
            "model": "quotebound-local",
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": [_text_document(LEAVE), {"type": "text", "text": "?"}]}
            ],
        }
        reply = httpx.post(f"{base}/v1/messages", json=request, headers={"x-api-key": secret})
        assert reply.status_code == 500 and reply.json()["type"] == "error"
        assert reply.json()["error"]["type"] == "api_error"
        with _client(base, secret) as client, pytest.raises(anthropic.InternalServerError):
            client.models.list()


def test_the_pieces_of_the_documents_a_question_names_are_sent_first() -> None:
    from quotebound.retrieval import named_sources_first
    from quotebound.server.messages import read_request, sources_of
    from quotebound.sources import Source

    plus = "Northwind Health Plus requires prior authorization for imaging. " * 3
    standard = "Northwind Standard requires prior authorization for surgery."
    documents = [
        {**_text_document(plus, "Northwind_Health_Plus_Benefits_Details.pdf")},
        {**_text_document(standard, "Northwind_Standard_Benefits_Details.pdf")},
    ]
    body = {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {
                "role": "user",
                "content": [
                    *documents,
                    {
                        "type": "text",
                        "text": "Prior authorization for imaging, Northwind Standard?",
                    },
                ],
            }
        ],
    }
    question, read = read_request(body)
    ranked = sources_of(question, read)
    assert ranked[0].title == "Northwind_Standard_Benefits_Details.pdf"
    # off (serve --named-first off), the shared words decide: a tie, the Plus piece first
    assert sources_of(question, read, named_first=False)[0].title.startswith("Northwind_Health")
    # a question naming no document, or one document alone, keeps the order
    alone = [Source("P1", "a", key="doc0:0", title="Leave policy")]
    assert named_sources_first("Leave policy?", alone) == alone
    both = [Source("P1", "a", key="doc0:0", title="A"), Source("P2", "b", key="doc1:0", title="B")]
    assert named_sources_first("What is covered?", both) == both
