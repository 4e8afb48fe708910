"""``POST /v1/chat/completions`` and ``GET /v1/models`` in OpenAI's shape, spoken to with the
official ``openai`` SDK against a served app (the extractive model over the HR documents)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kits.serverkit import closed_after_test, fill, live_server
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store

openai = pytest.importorskip("openai")

QUESTION = "How many weeks of paid parental leave do employees get?"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        fill(store)
        keys = {"staff": store.create_key(name="staff")[1]}
        keys["lawyer"] = store.create_key(["legal"], name="lawyer")[1]
    with live_server(create_app(ServerConfig(store_url=url))) as base:
        yield base, keys


def _client(base: str, key: str) -> Any:
    return closed_after_test(openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0))


def test_models_are_the_corpora_the_key_reads(served: tuple[str, dict[str, str]]) -> None:
    base, keys = served
    staff = [m.id for m in _client(base, keys["staff"]).models.list()]
    lawyer = [m.id for m in _client(base, keys["lawyer"]).models.list()]
    assert staff[0] == "quotebound" and "quotebound/hr" in staff
    assert "quotebound/legal" not in staff and "quotebound/legal" in lawyer


def test_an_answer_is_markdown_whose_markers_link_to_the_cited_source(
    served: tuple[str, dict[str, str]],
) -> None:
    base, keys = served
    reply = _client(base, keys["staff"]).chat.completions.create(
        model="quotebound/hr", messages=[{"role": "user", "content": QUESTION}]
    )
    message = reply.choices[0].message
    text = message.content
    assert "16 weeks" in text and "Sources:" in text and reply.choices[0].finish_reason == "stop"
    annotations = message.annotations
    assert annotations
    for a in annotations:
        cited = a.url_citation
        assert re.fullmatch(r"\[\d+\]", text[cited.start_index : cited.end_index])
        assert f"({cited.url})" in text
        opened = httpx.get(cited.url, headers={"Authorization": f"Bearer {keys['staff']}"})
        assert opened.status_code == 200 and "16 weeks" in opened.text  # the source, as sent


def test_a_stream_carries_the_verified_text_annotations_and_source_events(
    served: tuple[str, dict[str, str]],
) -> None:
    base, keys = served
    stream = _client(base, keys["staff"]).chat.completions.create(
        model="quotebound", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "16 weeks" in text and "Sources:" in text
    # asked for, the usage chunk comes last, with no choices, as OpenAI sends it
    with _client(base, keys["staff"]) as client:
        chunks = list(
            client.chat.completions.create(
                model="quotebound",
                messages=[{"role": "user", "content": QUESTION}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 0  # (extractive)
    assert all(c.usage is None for c in chunks[:-1])
    raw = httpx.post(
        f"{base}/v1/chat/completions",
        json={
            "model": "quotebound",
            "stream": True,
            "messages": [{"role": "user", "content": QUESTION}],
        },
        headers={"Authorization": f"Bearer {keys['staff']}"},
    ).text
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    sources = [e["event"] for e in events if "event" in e]
    assert sources and all(s["type"] == "source" and s["data"]["document"] for s in sources)
    assert any("16 weeks" in quote for s in sources for quote in s["data"]["document"])
    assert any(
        e.get("choices", [{}])[0].get("delta", {}).get("annotations")
        for e in events
        if "choices" in e
    )
    assert raw.rstrip().endswith("data: [DONE]")


def test_an_abstention_an_unreadable_corpus_and_bad_requests(
    served: tuple[str, dict[str, str]],
) -> None:
    base, keys = served
    client = _client(base, keys["staff"])
    reply = client.chat.completions.create(
        model="quotebound/hr",
        messages=[{"role": "user", "content": "What is the price of a pension plan for dogs?"}],
    )
    assert reply.choices[0].message.content.startswith("Not answered from the documents")
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(
            model="quotebound/legal", messages=[{"role": "user", "content": "Merger?"}]
        )
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.AuthenticationError):
        _client(base, "qb_wrong").chat.completions.create(
            model="quotebound", messages=[{"role": "user", "content": "x"}]
        )
    for body in (
        {"model": "quotebound", "messages": []},
        {"messages": [{"role": "user", "content": "x"}]},
    ):
        bad = httpx.post(
            f"{base}/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {keys['staff']}"},
        )
        assert bad.status_code == 400 and set(bad.json()["error"]) == {
            "message",
            "type",
            "param",
            "code",
        }


def test_a_signed_link_opens_its_source_without_a_key_until_altered_or_expired(
    served: tuple[str, dict[str, str]],
) -> None:
    base, keys = served
    reply = _client(base, keys["staff"]).chat.completions.create(
        model="quotebound/hr", messages=[{"role": "user", "content": QUESTION}]
    )
    link = reply.choices[0].message.annotations[0].url_citation.url
    assert "/shared/" in link and "sig=" in link
    opened = httpx.get(link)  # no key
    assert opened.status_code == 200 and "16 weeks" in opened.text
    assert "sandbox" in opened.headers["content-security-policy"]
    altered = link.replace("sig=", "sig=0")
    other_source = re.sub(r"/S(\d+)\?", lambda m: f"/S{int(m.group(1)) + 1}?", link)
    expired = re.sub(r"exp=\d+", "exp=1000000000", link)
    for bad in (altered, other_source, expired, link.split("?")[0]):
        refused = httpx.get(bad)
        assert refused.status_code == 403 and "not valid" in refused.text, bad


def test_links_live_as_long_as_configured() -> None:
    from quotebound.server.links import LinkSigner

    signer = LinkSigner(b"k" * 32, days=1)
    path = signer.path("1a2b", "S1", now=1_000_000)
    exp, sig = re.findall(r"exp=(\d+)&sig=(\w+)", path)[0]
    assert int(exp) == 1_000_000 + 86400
    assert signer.valid("1a2b", "S1", exp, sig, now=1_000_000 + 86399)
    assert not signer.valid("1a2b", "S1", exp, sig, now=1_000_000 + 86401)
    assert not signer.valid("1a2c", "S1", exp, sig, now=1_000_000)
    assert not LinkSigner(b"x" * 32, days=1).valid("1a2b", "S1", exp, sig, now=1_000_000)


def test_every_worker_of_a_machine_signs_with_the_same_key(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from quotebound.server.links import link_secret

    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: link_secret(tmp_path / "home"), range(16)))
    assert len(keys) == 1 and len(next(iter(keys))) == 64
    assert [p.name for p in (tmp_path / "home").iterdir()] == ["link-secret"]
    assert (tmp_path / "home" / "link-secret").stat().st_mode & 0o077 == 0


def test_a_home_that_cannot_be_written_still_signs_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from quotebound.server.links import SECRET_ENV, link_secret

    monkeypatch.delenv(SECRET_ENV, raising=False)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    with caplog.at_level("WARNING", logger="quotebound.server"):
        key = link_secret(blocked / "home")
    assert len(key) == 64 and "no link key could be kept" in caplog.text
    monkeypatch.setenv(SECRET_ENV, "shared-by-every-host")
    assert link_secret(blocked / "home") == b"shared-by-every-host"


def test_a_follow_up_is_asked_with_the_question_it_leans_on(tmp_path: Path) -> None:
    from kits.serverkit import live_server as serve_app
    from quotebound.ingest import chunk_document, load_file
    from quotebound.server.followups import asked

    assert asked(["How long is leave?", "And for contractors?"]) == (
        "How long is leave? And for contractors?"
    )
    assert asked(["How long is leave?", "Which laptops do contractors get?"]) == (
        "Which laptops do contractors get?"
    )
    # a word pointing back at what was asked ("it", "him", "their") leans a short question
    # too, its case and its punctuation aside; the same letters inside a word ("items") do not,
    # nor "it" in a long question of its own
    assert asked(["What is Last Tango in Halifax?", "Where is It filmed?"]) == (
        "What is Last Tango in Halifax? Where is It filmed?"
    )
    assert asked(["Who is Simba?", "And the voice actor who plays him?"]).startswith("Who")
    assert asked(["Who is Simba?", "Which items are exempt from prior authorization?"]) == (
        "Which items are exempt from prior authorization?"
    )
    alone = "Is it possible to carry unused leave over into the next year?"
    assert asked(["Who is Simba?", alone]) == alone
    assert asked(["Who is Simba?", "Also, who voices him?"]).startswith("Who is Simba?")
    assert asked(["", "And for contractors?"]) == "And for contractors?"  # nothing before
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    handbook = Path(__file__).resolve().parents[2] / "examples" / "handbook"
    with open_store(url) as store:
        key = store.create_key(name="k")[1]
        for path in sorted(handbook.iterdir()):
            doc = load_file(path, path.name)
            store.ingest("handbook", doc, chunk_document(doc))
    with serve_app(create_app(ServerConfig(store_url=url))) as base:
        turns = [
            {"role": "user", "content": "How many weeks of paid parental leave do employees get?"},
            {"role": "assistant", "content": "Employees are entitled to 16 weeks. [1]"},
            {"role": "user", "content": "And for contractors?"},
        ]
        reply = _client(base, key).chat.completions.create(model="quotebound", messages=turns)
        text = reply.choices[0].message.content
        assert "Contractors are not eligible for company-paid parental leave" in text
        # (asked alone, "And for contractors?" is answered with their invoices and laptops too)
        assert "laptops" not in text and "invoice" not in text
        trace_id = reply.id.removeprefix("chatcmpl-")
        with open_store(url) as store:
            assert store.get_trace(trace_id).question.endswith("And for contractors?")
            assert store.get_trace(trace_id).question.startswith("How many weeks")


def test_a_failing_model_is_openais_error_and_ends_a_stream_with_an_error_chunk(
    tmp_path: Path,
) -> None:
    from quotebound.providers.base import ProviderError
    from quotebound.providers.scripted import ScriptedProvider

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        fill(store)
        key = store.create_key(name="k")[1]

    def broken() -> Any:
        raise ProviderError("config", "no model file at /nowhere.gguf")

    with live_server(create_app(ServerConfig(store_url=url, provider=broken, warm=False))) as base:
        with _client(base, key) as client, pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(
                model="quotebound", messages=[{"role": "user", "content": QUESTION}]
            )
        assert raised.value.status_code == 503
        assert set(raised.value.body) >= {"message", "type", "code"}
    spent = ScriptedProvider([])  # every call fails: the model cannot answer
    with live_server(create_app(ServerConfig(store_url=url, provider=lambda: spent))) as base:
        raw = httpx.post(
            f"{base}/v1/chat/completions",
            json={
                "model": "quotebound",
                "stream": True,
                "messages": [{"role": "user", "content": QUESTION}],
            },
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).text
        events = [line for line in raw.splitlines() if line.startswith("data: ")]
        assert json.loads(events[0][6:])["error"]["code"] == "upstream_error"
        assert events[-1] == "data: [DONE]"


def test_usage_is_the_models_tokens_in_openais_names() -> None:
    from quotebound.pipeline import Answer
    from quotebound.server.chat import usage

    spent = Answer("q", "grounded", counts={"input_tokens": 250, "output_tokens": 60})
    assert usage(spent) == {"prompt_tokens": 250, "completion_tokens": 60, "total_tokens": 310}
    assert usage(Answer("q", "grounded"))["total_tokens"] == 0  # a model that reports none


def test_a_body_over_the_limit_is_413_in_openais_envelope_whether_declared_or_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        fill(store)
        key = store.create_key(name="staff")[1]
    big = {"model": "quotebound", "messages": [{"role": "user", "content": "leave " * 1000}]}
    with live_server(create_app(ServerConfig(store_url=url, max_body_bytes=2048))) as base:
        with _client(base, key) as client, pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(**big)  # Content-Length declared
        assert raised.value.status_code == 413
        assert raised.value.body["code"] == "request_too_large"  # (the SDK unwraps "error")

        def undeclared() -> Iterator[bytes]:  # sent in chunks: no Content-Length
            yield json.dumps(big).encode()

        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        reply = httpx.post(f"{base}/v1/chat/completions", content=undeclared(), headers=headers)
        assert reply.status_code == 413
        assert set(reply.json()["error"]) == {"message", "type", "param", "code"}
        assert "Traceback" not in caplog.text
        bad = {**big, "messages": [{"role": "user", "content": "hi"}], "stream": "yes"}
        reply = httpx.post(f"{base}/v1/chat/completions", json=bad, headers=headers)
        assert reply.status_code == 400 and "stream" in reply.json()["error"]["message"]
