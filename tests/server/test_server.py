"""The HTTP service in process (httpx's ASGI transport): every endpoint, auth, ACLs, owners,
limits, malformed input, streaming."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kits.fuzzing import scaled
from kits.serverkit import GERMANY, LEAVE, MERGER, call, doc, fill
from quotebound import Source, WorkingSet, verify
from quotebound.cli import cli
from quotebound.providers.base import Provider, ProviderError
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.providers.scripted import ScriptedProvider
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Env:
    def __init__(self, url: str, provider: Any = ExtractiveProvider, **config: Any) -> None:
        self.url = url
        with open_store(url) as store:
            fill(store)
            self.alice = store.create_key(name="alice")[1]
            self.bob = store.create_key(name="bob")[1]
            self.lawyer = store.create_key(["legal"], name="lawyer")[1]
        limits = {"max_body_bytes": 20_000, "max_sources": 50}
        self.app = create_app(ServerConfig(store_url=url, provider=provider, **limits | config))
        _opened.append(self)

    def close(self) -> None:
        self.app.state.stores.close()

    def call(self, method: str, path: str, key: str | None = None, **kw: Any) -> Any:
        return call(self.app, method, path, key, **kw)


_opened: list[Env] = []


@pytest.fixture(autouse=True)
def _close_pools() -> Iterator[None]:
    """The ASGI transport runs no lifespan: give the pooled store connections back here."""
    yield
    while _opened:
        _opened.pop().close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    yield Env(f"sqlite:///{tmp_path / 'qb.db'}")


def error_of(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


def ask(env: Env, question: str, key: str, **body: Any) -> dict[str, Any]:
    r = env.call("POST", "/v1/ask", key, json={"question": question, **body})
    assert r.status_code == 200, r.text
    return dict(r.json())


# -- the page, the description, health ---------------------------------------------------


def test_page_is_served_with_a_strict_content_security_policy(env: Env) -> None:
    r = env.call("GET", "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "every claim links to its source" in r.text.lower()
    assert "accurate" not in r.text.lower()
    js = env.call("GET", "/static/app.js")
    assert js.status_code == 200 and "textContent" in js.text and "innerHTML" not in js.text
    error_of(env.call("GET", "/static/secrets.txt"), 404, "not_found")
    error_of(env.call("GET", "/static/..%2Fapp.py"), 404, "not_found")


def test_openapi_describes_every_endpoint(env: Env) -> None:
    spec = env.call("GET", "/openapi.json").json()
    assert set(spec["paths"]) >= {
        "/v1/verify",
        "/v1/ask",
        "/v1/traces",
        "/v1/traces/{trace_id}",
        "/v1/traces/{trace_id}/sources/{sid}",
        "/v1/whoami",
        "/healthz",
    }
    assert "VerifyIn" in spec["components"]["schemas"]
    assert env.call("GET", "/healthz").json()["ok"] is True


# -- auth --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer qb_nothing",
        "Bearer " + "x" * 60,
    ],
)
def test_requests_without_a_valid_key_are_refused(env: Env, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    for method, path in [
        ("GET", "/v1/whoami"),
        ("GET", "/v1/traces"),
        ("POST", "/v1/verify"),
        ("POST", "/v1/ask"),
    ]:
        r = env.call(method, path, headers=headers, json={})
        error_of(r, 401, "unauthorized")
        assert r.headers["www-authenticate"] == "Bearer"


def test_a_revoked_key_stops_working_at_once(env: Env) -> None:
    me = env.call("GET", "/v1/whoami", env.bob).json()
    assert me["name"] == "bob" and me["groups"] == []
    with open_store(env.url) as store:
        assert store.revoke_key(me["id"])
    assert "revoked" in error_of(env.call("GET", "/v1/whoami", env.bob), 401, "unauthorized")


# -- verify ------------------------------------------------------------------------------


def test_verify_returns_the_same_verdict_as_the_library_and_cli(env: Env) -> None:
    sources = json.loads((EXAMPLES / "sources.json").read_text())
    for name in ("grounded.json", "partial.json", "abstained.txt"):
        output = (EXAMPLES / name).read_text()
        r = env.call("POST", "/v1/verify", env.alice, json={"sources": sources, "output": output})
        assert r.status_code == 200, r.text
        ws = WorkingSet(Source(**s) for s in sources)
        assert r.json() == verify(ws, output).to_dict()
    statuses = {
        name: env.call(
            "POST",
            "/v1/verify",
            env.alice,
            json={"sources": sources, "output": (EXAMPLES / name).read_text()},
        ).json()["status"]
        for name in ("grounded.json", "partial.json", "abstained.txt")
    }
    assert statuses == {
        "grounded.json": "grounded",
        "partial.json": "partial",
        "abstained.txt": "abstained",
    }


def test_verify_applies_the_policy_given(env: Env) -> None:
    body = {
        "sources": [{"id": "S1", "text": LEAVE}],
        "output": json.dumps(
            {
                "answerable": True,
                "claims": [
                    {
                        "text": "16 weeks of leave.",
                        "citations": [{"source": "S1", "quote": "16 weeks of"}],
                    }
                ],
            }
        ),
    }
    assert env.call("POST", "/v1/verify", env.alice, json=body).json()["status"] == "ungrounded"
    body["policy"] = {"min_quote_words": 3}
    assert env.call("POST", "/v1/verify", env.alice, json=body).json()["status"] == "grounded"
    body["policy"] = {"sentinels": ["NO IDEA"]}
    body["output"] = "NO IDEA"
    assert env.call("POST", "/v1/verify", env.alice, json=body).json()["status"] == "abstained"
    # a writing fault is a note on the claim, unless strict
    quote = "16 weeks of paid parental leave"
    fragment = {
        "text": "for 16 weeks of paid parental leave.",
        "citations": [{"source": "S1", "quote": quote}],
    }
    body = {
        "sources": [{"id": "S1", "text": LEAVE}],
        "output": json.dumps({"answerable": True, "claims": [fragment]}),
    }
    claim = env.call("POST", "/v1/verify", env.alice, json=body).json()["claims"][0]
    assert claim["kept"] and claim["notes"] == ["a piece of a sentence (it starts mid-sentence)"]
    body["policy"] = {"strict": True}
    claim = env.call("POST", "/v1/verify", env.alice, json=body).json()["claims"][0]
    assert not claim["kept"] and claim["reason"] == "claim_fragment"


def test_verify_reads_a_vendors_response(env: Env) -> None:
    text = "Employees get 16 weeks of paid parental leave."
    note = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": len(text),
        "url": "https://hr.example/leave?utm_source=openai",
        "title": "Leave",
    }
    part = {"type": "output_text", "text": text, "annotations": [note]}
    response = {"object": "response", "output": [{"type": "message", "content": [part]}]}
    body = {
        "sources": [{"id": "S1", "text": LEAVE, "url": "https://hr.example/leave"}],
        "output": json.dumps(response),
        "format": "openai",
    }
    verdict = env.call("POST", "/v1/verify", env.alice, json=body).json()
    assert verdict["format"] == "openai" and verdict["status"] == "grounded"
    # a malformed vendor response is a verdict that says so, never a 500
    for bad in ("{", '{"object": "response", "output": 7}', "[]"):
        reply = env.call("POST", "/v1/verify", env.alice, json={**body, "output": bad})
        assert reply.status_code == 200 and reply.json()["status"] == "unparseable", bad
    reply = env.call("POST", "/v1/verify", env.alice, json={**body, "format": "claude"})
    assert reply.status_code in (400, 422) and "error" in reply.json()


@pytest.mark.parametrize(
    ("content", "status", "code", "says"),
    [
        (b"{bad", 400, "malformed_json", "not valid JSON"),
        (b"[1, 2]", 400, "malformed_json", "JSON object"),
        (b'{"sources": []}', 422, "invalid_request", "output"),
        (b'{"sources": "S1", "output": "x"}', 422, "invalid_request", "sources"),
        (b'{"sources": [], "output": "x", "format": "yaml"}', 422, "invalid_request", "format"),
        (b'{"sources": [], "output": "x", "extra": 1}', 422, "invalid_request", "extra"),
        (b'{"sources": [{"id": "", "text": "t"}], "output": "x"}', 422, "invalid_request", "id"),
        (
            b'{"sources": [{"id": "S1", "text": "a"}, {"id": "S1", "text": "b"}], "output": "x"}',
            400,
            "bad_source",
            "S1",
        ),
        (
            b'{"sources": [], "output": "x", "policy": {"min_quote_words": 9, '
            b'"max_quote_words": 5}}',
            400,
            "bad_policy",
            "max_quote_words",
        ),
    ],
)
def test_malformed_verify_bodies_get_a_clear_4xx(
    env: Env, content: bytes, status: int, code: str, says: str
) -> None:
    r = env.call(
        "POST",
        "/v1/verify",
        env.alice,
        content=content,
        headers={"Content-Type": "application/json"},
    )
    assert says in error_of(r, status, code)


def test_oversized_bodies_are_refused_before_parsing(env: Env) -> None:
    big = {"sources": [{"id": "S1", "text": "x" * 30_000}], "output": "x"}
    error_of(env.call("POST", "/v1/verify", env.alice, json=big), 413, "too_large")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while read
        yield b'{"sources": [{"id": "S1", "text": "'
        for _ in range(40):
            yield b"y" * 1000
        yield b'"}], "output": "x"}'

    r = env.call(
        "POST",
        "/v1/verify",
        env.alice,
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    error_of(r, 413, "too_large")
    many = {"sources": [{"id": f"S{n}", "text": "t"} for n in range(51)], "output": "x"}
    assert "50 sources" in error_of(
        env.call("POST", "/v1/verify", env.alice, json=many), 413, "too_large"
    )


def test_unknown_endpoints_and_methods_are_json_errors(env: Env) -> None:
    assert "GET /v2/ask" in error_of(env.call("GET", "/v2/ask", env.alice), 404, "not_found")
    error_of(env.call("GET", "/v1/verify", env.alice), 405, "method_not_allowed")


# -- ask, traces, sources ----------------------------------------------------------------


def test_ask_answers_and_every_citation_reopens_from_the_trace(env: Env) -> None:
    a = ask(env, "How many weeks of parental leave do employees get?", env.alice)
    assert a["status"] == "grounded" and a["claims"]
    quote = a["cards"][0]["quotes"][0]
    for claim in a["claims"]:  # each claim names the source and span behind each citation
        assert claim["cites"] and {c["card"] for c in claim["cites"]} == set(claim["cards"])
    trace = env.call("GET", f"/v1/traces/{a['trace_id']}", env.alice).json()
    assert trace["question"].startswith("How many weeks") and trace["owner"]
    assert [c["kept"] for c in trace["claims"]] == [True] * len(a["claims"])
    view = env.call("GET", f"/v1/traces/{a['trace_id']}/sources/{quote['source']}", env.alice)
    assert view.status_code == 200
    data = view.json()
    start, end = quote["span"]
    assert data["source"]["text"][start:end] == quote["text"]
    assert [start, end] in data["spans"]
    assert data["link"].startswith("https://hr.example/leave.txt#:~:text=")
    assert data["source"]["title"] == "Leave policy" and data["source"]["updated"] == "2026-11-01"


def test_ids_not_sent_and_other_peoples_traces_are_404(env: Env) -> None:
    a = ask(env, "How many weeks of parental leave do employees get?", env.alice)
    tid = a["trace_id"]
    sent = {s["id"] for s in env.call("GET", f"/v1/traces/{tid}", env.alice).json()["sources"]}
    assert "S99" not in sent
    assert "S99 was not sent" in error_of(
        env.call("GET", f"/v1/traces/{tid}/sources/S99", env.alice), 404, "not_found"
    )
    for path in (f"/v1/traces/{tid}", f"/v1/traces/{tid}/sources/S1"):
        error_of(env.call("GET", path, env.bob), 404, "not_found")  # bob's view: no such trace
    error_of(env.call("GET", "/v1/traces/0000000000000000000000", env.alice), 404, "not_found")
    assert env.call("GET", "/v1/traces", env.bob).json() == {"traces": []}


def test_a_key_retrieves_only_its_groups_documents(env: Env) -> None:
    question = "When does the merger with Contoso close?"
    public = ask(env, question, env.alice)
    trace = env.call("GET", f"/v1/traces/{public['trace_id']}", env.alice).json()
    assert all(not (s["key"] or "").startswith("legal:") for s in trace["sources"])
    assert all(MERGER not in s["text"] for s in trace["sources"])
    assert public["status"] in ("abstained", "partial", "grounded")
    assert all("1 March 2027" not in c["text"] for c in public["claims"])
    lawyer = ask(env, question, env.lawyer)
    assert lawyer["status"] == "grounded"
    assert any(c["document"] == "legal:merger.txt" for c in lawyer["cards"])


def test_ask_with_no_readable_match_is_a_helpful_abstention(env: Env) -> None:
    a = ask(env, "zebra quantum saxophone", env.alice)
    assert a["status"] == "abstained" and a["claims"] == []
    assert a["abstention"]["searched"] == []
    assert "access groups" in a["abstention"]["next_step"]


def test_history_lists_only_the_callers_answers_newest_first(env: Env) -> None:
    ask(env, "How many weeks of parental leave do employees get?", env.alice)
    ask(env, "zebra quantum saxophone", env.alice)
    ask(env, "Germany parental allowance top up", env.bob)
    history = env.call("GET", "/v1/traces", env.alice).json()["traces"]
    assert [t["question"] for t in history] == [
        "zebra quantum saxophone",
        "How many weeks of parental leave do employees get?",
    ]
    assert history[1]["claims"] and history[1]["claims"][0]["citations"][0]["valid"] is True
    assert len(env.call("GET", "/v1/traces?limit=1", env.alice).json()["traces"]) == 1
    error_of(env.call("GET", "/v1/traces?limit=0", env.alice), 422, "invalid_request")
    error_of(env.call("GET", "/v1/traces?limit=abc", env.alice), 422, "invalid_request")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"question": ""}, "question"),
        ({"question": "q", "limit": 0}, "limit"),
        ({"question": "q", "format": "cites"}, "format"),
        ({}, "question"),
    ],
)
def test_malformed_ask_bodies_get_422(env: Env, body: dict[str, Any], says: str) -> None:
    assert says in error_of(
        env.call("POST", "/v1/ask", env.alice, json=body), 422, "invalid_request"
    )


# -- streaming ---------------------------------------------------------------------------


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def scripted_env(tmp_path: Path, outputs: list[Any]) -> Env:
    provider = ScriptedProvider(outputs)
    return Env(f"sqlite:///{tmp_path / 'qb.db'}", provider=lambda: provider)


def answer_json(*claims: tuple[str, str, str]) -> str:
    return json.dumps(
        {
            "answerable": True,
            "claims": [{"text": t, "citations": [{"source": s, "quote": q}]} for t, s, q in claims],
        }
    )


def test_stream_sends_claims_only_after_verification(tmp_path: Path) -> None:
    good = ("Employees get 16 weeks of paid parental leave.", "S1", LEAVE)
    bad = ("Germany tops up to full salary for 20 weeks.", "S1", "tops up to full salary for 20")
    env = scripted_env(tmp_path, [answer_json(good, bad), answer_json(good, bad)])
    r = env.call(
        "POST",
        "/v1/ask",
        env.alice,
        json={"question": "parental leave weeks Germany", "stream": True},
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    seq = events(r.text)
    kinds = [k for k, _ in seq]
    assert kinds[-1] == "answer" and kinds.count("answer") == 1
    stages = [d["stage"] for k, d in seq if k == "progress"]
    assert stages == [
        "searching",
        "retrieved",
        "generating",
        "verified",
        "repairing",
        "generating",
        "verified",
    ]
    # The first attempt's verified claim is sent as it passes, before the repair turn runs
    first_claim = kinds.index("claim")
    verified_at = [i for i, (k, d) in enumerate(seq) if d.get("stage") == "verified"]
    repairing_at = next(i for i, (k, d) in enumerate(seq) if d.get("stage") == "repairing")
    assert verified_at[0] < first_claim < repairing_at
    claims = [d for k, d in seq if k == "claim"]
    final = seq[-1][1]
    assert [c["text"] for c in claims] == [c["text"] for c in final["claims"]] == [good[0]]
    assert [c["index"] for c in claims] == [0]  # once, not again with the answer
    assert claims[0]["verified"] and claims[0]["trace_id"] is None  # the trace comes after
    assert (
        claims[0]["cards"] == [final["cards"][0]]
        and claims[0]["cites"] == final["claims"][0]["cites"]
    )
    assert final["status"] == "partial" and final["counts"]["dropped_claims"] == 1


def test_stream_sends_the_repaired_claims_after_the_early_ones(tmp_path: Path) -> None:
    good = ("Employees get 16 weeks of paid parental leave.", "S1", LEAVE)
    bad = ("Germany tops up to full salary for 20 weeks.", "S1", "tops up to full salary for 20")
    fixed = (GERMANY, "S1", GERMANY)  # S1 or not: a quote found in another source is re-anchored
    env = scripted_env(tmp_path, [answer_json(good, bad), answer_json(fixed)])
    r = env.call(
        "POST",
        "/v1/ask",
        env.alice,
        json={"question": "parental leave weeks Germany", "stream": True},
    )
    seq = events(r.text)
    claims = [d for k, d in seq if k == "claim"]
    final = seq[-1][1]
    assert [c["text"] for c in final["claims"]] == [good[0], fixed[0]]
    assert [(c["index"], c["text"]) for c in claims] == [(0, good[0]), (1, fixed[0])]
    assert [c["trace_id"] for c in claims] == [None, final["trace_id"]]
    stages = [d.get("stage") for k, d in seq]
    assert stages.index("repairing") < [k for k, _ in seq].index("claim", stages.index("repairing"))


def test_stream_of_an_unreadable_answer_sends_no_claim(tmp_path: Path) -> None:
    env = scripted_env(tmp_path, ['{"claims": [ {"text": "16 weeks', "not json either"])
    r = env.call(
        "POST", "/v1/ask", env.alice, json={"question": "parental leave weeks", "stream": True}
    )
    seq = events(r.text)
    assert "claim" not in [k for k, _ in seq]
    assert seq[-1][1]["status"] == "abstained"
    assert "could not be read" in seq[-1][1]["abstention"]["missing"]


class Exploding(Provider):
    name = "exploding"

    def complete(self, request: Any) -> Any:
        raise RuntimeError("secret internal detail")


def test_unexpected_failures_are_a_plain_500_and_provider_errors_a_status(tmp_path: Path) -> None:
    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", provider=lambda: Exploding("x"))
    r = env.call("POST", "/v1/ask", env.alice, json={"question": "parental leave weeks"})
    assert "server log" in error_of(r, 500, "internal")
    assert "secret internal detail" not in r.text
    r = env.call(
        "POST", "/v1/ask", env.alice, json={"question": "parental leave weeks", "stream": True}
    )
    kind, data = events(r.text)[-1]
    assert kind == "error" and data["code"] == "internal" and "server log" in data["message"]
    failing = scripted_env(tmp_path / "b", [ProviderError("timeout", "model timed out")])
    a = ask(failing, "parental leave weeks", failing.alice)
    assert a["status"] == "provider_error" and "timed out" in a["abstention"]["missing"]


def test_the_service_runs_on_postgresql_too(pg_url: str) -> None:
    env = Env(pg_url)
    a = ask(env, "How many weeks of parental leave do employees get?", env.alice)
    assert a["status"] == "grounded"
    sid = a["cards"][0]["quotes"][0]["source"]
    view = env.call("GET", f"/v1/traces/{a['trace_id']}/sources/{sid}", env.alice)
    assert view.status_code == 200 and view.json()["spans"]
    error_of(env.call("GET", f"/v1/traces/{a['trace_id']}", env.bob), 404, "not_found")
    assert ask(env, "When does the merger close?", env.lawyer)["status"] == "grounded"


# -- fuzz: any JSON body is answered with a verdict or a clear 4xx, never a 500 ---------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_source = st.fixed_dictionaries(
    {"id": st.text(max_size=6), "text": st.text(max_size=200)},
    optional={
        "kind": st.sampled_from(["document", "tool", "user", "other"]),
        "page": st.integers(-2, 5),
        "updated": st.text(max_size=12),
    },
)
_body = st.fixed_dictionaries(
    {"sources": st.lists(_source, max_size=4), "output": st.text(max_size=300)},
    optional={
        "format": st.sampled_from(["auto", "json", "inline", "evidence", "cites", "x"]),
        "policy": st.fixed_dictionaries(
            {},
            optional={
                "min_quote_words": st.integers(-1, 50),
                "max_quote_words": st.integers(-1, 50),
                "sentinels": st.lists(st.text(max_size=10), max_size=2),
            },
        ),
    },
)


@settings(max_examples=scaled(150))
@given(body=st.one_of(_json, _body))
def test_any_verify_body_gets_a_verdict_or_a_clear_4xx(fuzz_env: Env, body: Any) -> None:
    r = fuzz_env.call("POST", "/v1/verify", fuzz_env.alice, json=body)
    assert r.status_code in (200, 400, 413, 422), r.text
    data = r.json()
    if r.status_code == 200:
        assert data["status"] in ("grounded", "partial", "ungrounded", "abstained", "unparseable")
    else:
        assert data["error"]["code"] and data["error"]["message"]


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'qb.db'}")


# -- hardening (from review) ---------------------------------------------------------------


def test_stored_urls_that_are_not_http_never_become_links(tmp_path: Path) -> None:
    env = Env(f"sqlite:///{tmp_path / 'qb.db'}")
    with open_store(env.url) as store:
        text = "The evil portal closes at nine in the evening daily."
        store.ingest(
            "evil", *doc("a.txt", text, title="Evil"), url="javascript:alert(document.domain)//"
        )
    a = ask(env, "When does the evil portal close?", env.alice)
    assert a["status"] == "grounded"
    assert all(c["url"] is None and all(q["link"] is None for q in c["quotes"]) for c in a["cards"])
    sid = a["claims"][0]["cites"][0]["source"]
    assert (
        env.call("GET", f"/v1/traces/{a['trace_id']}/sources/{sid}", env.alice).json()["link"]
        is None
    )
    (tmp_path / "n.txt").write_text("A note.", encoding="utf-8")
    runner = CliRunner()
    bad = runner.invoke(
        cli,
        [
            "ingest",
            str(tmp_path / "n.txt"),
            "--corpus",
            "x",
            "--url-prefix",
            "javascript:alert(1)//",
            "--store",
            env.url,
        ],
    )
    assert bad.exit_code != 0 and "http" in str(bad.exception or bad.output)


def test_head_allow_and_api_headers(env: Env) -> None:
    assert env.call("HEAD", "/").status_code == 200
    assert env.call("HEAD", "/healthz").status_code == 200
    r = env.call("GET", "/v1/verify", env.alice)
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    me = env.call("GET", "/v1/whoami", env.alice)
    assert me.headers["x-content-type-options"] == "nosniff"
    assert me.headers["cache-control"] == "no-store"


def test_nul_bytes_and_blank_questions_are_4xx_on_both_backends(store_url: str) -> None:
    env = Env(store_url)
    for question in ("leave\x00weeks", "   "):
        r = env.call("POST", "/v1/ask", env.alice, json={"question": question})
        error_of(r, 422, "invalid_request")
    r = env.call("POST", "/v1/ask", env.alice, json={"question": "leave", "corpus": ["h\x00r"]})
    error_of(r, 422, "invalid_request")
    error_of(env.call("GET", "/v1/traces/ab%00cd", env.alice), 404, "not_found")
    a = ask(env, "How many weeks of parental leave?", env.alice)
    error_of(
        env.call("GET", f"/v1/traces/{a['trace_id']}/sources/S1%00", env.alice), 404, "not_found"
    )


def test_a_provider_that_cannot_be_made_is_a_generic_503(tmp_path: Path) -> None:
    def broken() -> Provider:
        raise ProviderError("config", "no GGUF file at /srv/secret/model.gguf")

    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", provider=broken)
    r = env.call("POST", "/v1/ask", env.alice, json={"question": "parental leave weeks"})
    assert "/srv/secret" not in error_of(r, 503, "provider_unavailable")
    r = env.call("POST", "/v1/ask", env.alice, json={"question": "leave", "stream": True})
    assert events(r.text)[-1][1]["code"] == "provider_unavailable"


class Gate(Provider):
    """A model that answers only when the test opens the gate."""

    name = "gate"
    thread_safe = False

    def __init__(self) -> None:
        super().__init__("gate")
        self.open = threading.Event()
        self.started = threading.Event()

    def complete(self, request: Any) -> Any:
        self.started.set()
        assert self.open.wait(30), "the gate was never opened"
        return ExtractiveProvider().complete(request)


def test_waiting_questions_never_block_other_endpoints_and_overflow_is_503(
    tmp_path: Path,
) -> None:
    gate = Gate()
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    env = Env(url, provider=lambda: gate, ask_workers=2, max_waiting=3)

    async def scenario() -> list[Any]:
        transport = httpx.ASGITransport(app=env.app, raise_app_exceptions=False)
        auth = {"Authorization": f"Bearer {env.alice}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=auth, timeout=60
        ) as client:
            asks = [
                asyncio.create_task(client.post("/v1/ask", json={"question": "leave weeks"}))
                for _ in range(3)
            ]
            for _ in range(3000):  # until all three are admitted and waiting on the model
                if gate.started.is_set() and env.app.state.admission.count == 3:
                    break
                await asyncio.sleep(0.01)
            overflow = await client.post("/v1/ask", json={"question": "leave weeks"})
            others = [
                await client.get("/v1/whoami"),
                await client.get("/v1/traces"),
                await client.get("/healthz"),
            ]
            still_waiting = not any(t.done() for t in asks)
            gate.open.set()
            answered = await asyncio.gather(*asks)
            return [overflow, others, still_waiting, answered]

    overflow, others, still_waiting, answered = asyncio.run(scenario())
    assert "already waiting" in error_of(overflow, 503, "busy")
    assert overflow.headers["retry-after"] == "5"
    assert [r.status_code for r in others] == [200, 200, 200] and still_waiting
    assert [r.json()["status"] for r in answered] == ["grounded"] * 3
    assert env.app.state.admission.count == 0  # every answer gave its place back


def test_store_connections_are_pooled_not_leaked(env: Env) -> None:
    for _ in range(30):
        assert env.call("GET", "/v1/whoami", env.alice).status_code == 200
        error_of(env.call("GET", "/v1/traces/0123abc", env.alice), 404, "not_found")
    assert env.app.state.stores.opened <= 2


def test_a_client_that_leaves_mid_stream_still_frees_its_place_and_gets_traced(
    tmp_path: Path,
) -> None:
    gate = Gate()
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    env = Env(url, provider=lambda: gate)
    app = env.app
    body = json.dumps({"question": "leave weeks", "stream": True}).encode()

    async def leave_at_once() -> list[Any]:
        request = [{"type": "http.request", "body": body, "more_body": False}]
        gone = asyncio.Event()

        async def receive() -> Any:
            if request:
                return request.pop(0)
            await gone.wait()
            return {"type": "http.disconnect"}

        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)
            if message["type"] == "http.response.start":
                gone.set()  # the client hangs up as soon as the headers arrive

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/ask",
            "raw_path": b"/v1/ask",
            "query_string": b"",
            "root_path": "",
            "scheme": "http",
            "http_version": "1.1",
            "server": ("test", 80),
            "client": ("client", 1),
            "headers": [
                (b"authorization", f"Bearer {env.alice}".encode()),
                (b"content-type", b"application/json"),
            ],
        }
        await app(scope, receive, send)
        return sent

    sent = asyncio.run(leave_at_once())
    assert sent[0]["status"] == 200
    assert app.state.admission.count == 1  # the answer is still being worked on
    gate.open.set()
    for _ in range(1000):
        if app.state.admission.count == 0:
            break
        threading.Event().wait(0.01)
    assert app.state.admission.count == 0
    with open_store(url) as store:
        owner = store.authenticate(env.alice)
        assert owner is not None and len(store.list_traces(owner.id)) == 1


def test_the_service_runs_its_entailment_tier_and_traces_each_judgement(tmp_path: Path) -> None:
    """ServerConfig.entailment (serve --entailment, default fast): every answer runs the
    tier, made once and shared by the answer threads; each kept citation's judgement is in
    the answer and in the trace."""
    from quotebound.entailment import make_backend

    made: list[object] = []

    def tier() -> Any:
        made.append(make_backend("fast"))
        return made[-1]

    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", entailment=tier)
    question = "How many weeks of parental leave do employees get?"
    first, second = ask(env, question, env.alice), ask(env, question, env.alice)
    assert len(made) == 1  # made on the first ask, reused
    for answer in (first, second):
        assert answer["status"] == "grounded"
        assert answer["verdicts"][-1]["tiers"] == ["code", "entailment:fast"]
    trace = env.call("GET", f"/v1/traces/{first['trace_id']}", env.alice).json()
    verdict = trace["attempts"][-1]["verdict"]
    judged = [c["entailment"] for claim in verdict["claims"] for c in claim["citations"]]
    assert judged and all(j and j["backend"] == "fast" for j in judged)


def test_the_service_runs_the_answer_check_beside_its_tier(tmp_path: Path) -> None:
    """ServerConfig.answer_check (serve --answer-check fast): made once, beside the tier (one
    MiniLM for both); an answer it accepts is served, one it refuses (here: a threshold no
    answer reaches) becomes an abstention, traced as such."""
    from dataclasses import replace

    from quotebound.answering.check import AnswerChecker, shipped_answer_weights
    from quotebound.entailment import make_backend

    made: list[AnswerChecker] = []
    tiers: list[Any] = []

    def tier() -> Any:
        tiers.append(make_backend("fast"))
        return tiers[-1]

    def check(backend: Any) -> AnswerChecker:
        made.append(AnswerChecker.beside(backend))
        return made[-1]

    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", entailment=tier, answer_check=check)
    question = "How many weeks of parental leave do employees get?"
    served = ask(env, question, env.alice)
    assert served["status"] == "grounded"
    assert served["answer_check"]["backend"] == "fast-answers"
    assert served["answer_check"]["label"] == "supported"
    made[0].weights = replace(shipped_answer_weights(), threshold=1.01)
    refused = ask(env, question, env.alice)
    assert refused["status"] == "abstained" and refused["claims"] == []
    assert "do not answer what was asked" in refused["abstention"]["missing"]
    assert len(made) == 1 and len(tiers) == 1 and made[0]._encoder is tiers[0].encoder
    trace = env.call("GET", f"/v1/traces/{refused['trace_id']}", env.alice).json()
    assert trace["status"] == "abstained" and trace["counts"]["answer_check_refused"] == 1


def test_the_service_reranks_beside_its_tier_and_traces_it(tmp_path: Path) -> None:
    """ServerConfig.rerank (serve --rerank dense): made once, beside the tier (one MiniLM),
    each answer's hits re-ordered and counted in its trace."""
    from quotebound.answering.rerank import DenseReranker
    from quotebound.entailment import make_backend

    made: list[DenseReranker] = []
    tiers: list[Any] = []

    def tier() -> Any:
        tiers.append(make_backend("fast"))
        return tiers[-1]

    def rerank(*holders: Any) -> DenseReranker:
        made.append(DenseReranker.beside(*holders))
        return made[-1]

    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", entailment=tier, rerank=rerank)
    for _ in range(2):
        served = ask(env, "How many weeks of parental leave do employees get?", env.alice)
        assert served["counts"]["reranked"] == 1
    assert len(made) == 1 and len(tiers) == 1 and made[0]._encoder is tiers[0].encoder
    trace = env.call("GET", f"/v1/traces/{served['trace_id']}", env.alice).json()
    assert trace["counts"]["reranked"] == 1
    plain = Env(f"sqlite:///{tmp_path / 'plain.db'}")
    assert "reranked" not in ask(plain, "How many weeks of parental leave?", plain.alice)["counts"]


def test_the_service_packs_the_named_documents_first_unless_told_not_to(tmp_path: Path) -> None:
    """ServerConfig.named_first (serve --named-first): on by default, counted in the trace."""
    question = "How many weeks of parental leave does the leave policy give?"
    on = Env(f"sqlite:///{tmp_path / 'on.db'}")
    served = ask(on, question, on.alice)
    assert served["counts"]["named_documents"] == 1  # "the leave policy": hr:leave.txt
    trace = on.call("GET", f"/v1/traces/{served['trace_id']}", on.alice).json()
    assert trace["counts"]["named_documents"] == served["counts"]["named_documents"]
    off = Env(f"sqlite:///{tmp_path / 'off.db'}", named_first=False)
    assert "named_documents" not in ask(off, question, off.alice)["counts"]


@pytest.mark.parametrize("fallback", [True, "covering"])
def test_the_service_serves_the_documents_own_sentences_when_the_model_fails(
    tmp_path: Path, fallback: bool | str
) -> None:
    """ServerConfig.fallback (serve --fallback extractive or covering): a model answer that
    does not verify becomes the extract of the sources, verified, with the attempt in the
    trace."""
    wrong = json.dumps(
        {
            "answerable": True,
            "missing": "",
            "claims": [
                {
                    "text": "Employees get 30 weeks of paid parental leave.",
                    "citations": [{"source": "S1", "quote": "paid parental leave"}],
                }
            ],
        }
    )
    scripted = ScriptedProvider([wrong, wrong])
    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", provider=lambda: scripted, fallback=fallback)
    answer = ask(env, "How many weeks of paid parental leave do employees get?", env.alice)
    assert answer["status"] in ("grounded", "partial") and answer["claims"]
    assert answer["counts"]["fallback_attempt"] == 3
    assert any("16 weeks" in c["text"] for c in answer["claims"])
    trace = env.call("GET", f"/v1/traces/{answer['trace_id']}", env.alice).json()
    assert len(trace["attempts"]) == 3 and trace["counts"]["fallback_attempt"] == 3


def test_the_service_reads_the_fast_check_and_the_judge_on_its_own_model(tmp_path: Path) -> None:
    """serve --answer-check both (auto's choice beside the packaged 1.5B): the fast check and
    the judge, on the very model that answers (no second model), averaged; the judgement is
    the answer's and the trace's; closing the check leaves the served model to the app."""
    import math

    from quotebound.answering.check import BothAnswerCheck
    from quotebound.providers.base import Completion
    from quotebound.server.workers import ServeOptions

    answer = json.dumps(
        {
            "answerable": True,
            "missing": "",
            "claims": [{"text": LEAVE, "citations": [{"source": "S1", "quote": LEAVE}]}],
        }
    )
    yes = Completion("Yes", "m", top_logprobs=(("Yes", math.log(0.9)), ("No", math.log(0.1))))
    model = ScriptedProvider([answer, yes], model="m", logprobs=True)
    made = ServeOptions(answer_check="both").checker(model)
    assert made is not None
    env = Env(f"sqlite:///{tmp_path / 'qb.db'}", provider=lambda: model, answer_check=made)
    served = ask(env, "How many weeks of paid parental leave do employees get?", env.alice)
    assert served["status"] == "grounded" and [c["text"] for c in served["claims"]] == [LEAVE]
    check = served["answer_check"]
    assert check["backend"] == "fast+judge" and "judge P(yes) 0.900" in check["detail"]
    assert len(model.requests) == 2  # the answer, then the judge's one token, on one model
    trace = env.call("GET", f"/v1/traces/{served['trace_id']}", env.alice).json()
    assert trace["answer_checks"] == [{"attempt": 1, **check}]
    both = made(None)
    assert isinstance(both, BothAnswerCheck) and not both.owns_judge
    assert both.judge.provider is model
    both.close()


def test_serve_options_run_the_fallback_only_with_the_answer_check() -> None:
    """serve --answer-check/--fallback reach every worker's config; the fallback only with a
    check (unchecked, the extract would overrule a right abstention)."""
    import threading
    from types import SimpleNamespace

    from quotebound.answering.check import AnswerChecker
    from quotebound.server.workers import ServeOptions

    made = ExtractiveProvider()
    on = ServeOptions(answer_check="fast", fallback="extractive").config(made)
    assert on.fallback == "extractive" and on.answer_check is not None
    tier = SimpleNamespace(encoder=object(), encoder_lock=threading.Lock())  # (nothing loads)
    check = on.answer_check(tier)  # type: ignore[arg-type]
    assert isinstance(check, AnswerChecker) and check.encoder is tier.encoder  # beside the tier
    covering = ServeOptions(answer_check="fast", fallback="covering").config(made)
    assert covering.fallback == "covering"
    off = ServeOptions(answer_check="off", fallback="extractive").config(made)
    assert off.fallback == "off" and off.answer_check is None
    assert ServeOptions(answer_check="fast", fallback="off").config(made).fallback == "off"
    # what the supervisor hands its workers: the same options, through the environment
    again = ServeOptions(**json.loads(ServeOptions(answer_check="fast").to_env()))
    assert again.answer_check == "fast" and again.fallback == "off"
