"""``quotebound mcp`` started as a subprocess and spoken to with the official SDK's own client
(``ClientSession`` over stdio, and over streamable HTTP with and without a key)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import click
import httpx
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from kits.serverkit import listening_url

ROOT = Path(__file__).resolve().parents[2]
QB = str(Path(sys.executable).with_name("quotebound"))
LEAVE = "Employees are entitled to 16 weeks of paid parental leave"
Session = Callable[[ClientSession], Awaitable[Any]]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The example handbook (public), and one document only the group "secret" may read."""
    folder = tmp_path_factory.mktemp("mcp")
    url = f"sqlite:///{folder}/q.db"
    _qb("ingest", str(ROOT / "examples" / "handbook"), "--corpus", "handbook", "--store", url)
    secret = folder / "board.txt"
    secret.write_text("The board approved a merger code-named Bluebird in March.\n")
    _qb("ingest", str(secret), "--corpus", "board", "--acl", "secret", "--store", url)
    return url


def _qb(*args: str) -> str:
    done = subprocess.run([QB, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _stdio(store: str, *extra: str) -> Callable[[Session], Any]:
    params = StdioServerParameters(
        command=QB,
        args=["mcp", "--store", store, "--provider", "extractive", *extra],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )

    def run(body: Session) -> Any:
        async def main() -> Any:
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return await body(s)

        return anyio.run(main)

    return run


def _verify_answer(*claims: tuple[str, str, str]) -> str:
    return json.dumps(
        {
            "claims": [
                {"text": text, "citations": [{"source": sid, "quote": quote}]}
                for text, sid, quote in claims
            ]
        }
    )


def test_the_tools_are_listed_with_input_and_output_schemas(store: str) -> None:
    async def body(s: ClientSession) -> Any:
        return (await s.list_tools()).tools, (await s.list_prompts()).prompts

    tools, prompts = _stdio(store, "--no-ask")(body)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"search", "verify", "open", "ask"}
    for tool in tools:
        assert tool.input_schema["type"] == "object" and tool.output_schema, tool.name
        assert tool.description
    assert "query" in by_name["search"].input_schema["required"]
    assert "repair" in by_name["verify"].output_schema["properties"]
    assert "cite" in by_name["verify"].description and "before you" in by_name["verify"].description
    assert [p.name for p in prompts] == ["answer_from_documents"]


def test_search_then_verify_keeps_an_honest_quote_and_names_each_failure(store: str) -> None:
    async def body(s: ClientSession) -> Any:
        found = await s.call_tool("search", {"query": "parental leave weeks", "corpus": "handbook"})
        passages = found.structured_content["passages"]
        sid = next(p["id"] for p in passages if LEAVE in p["text"])
        answer = _verify_answer(
            ("Employees get 16 weeks of paid parental leave.", sid, LEAVE),
            ("Employees get 20 weeks of paid parental leave.", sid, LEAVE.replace("16", "20")),
            ("Leave lasts a year.", "S99", "leave lasts for one whole year"),
        )
        checked = await s.call_tool("verify", {"answer": answer, "question": "How long?"})
        opened = await s.call_tool("open", {"citation": sid})
        again = await s.call_tool("search", {"query": "parental leave weeks"})
        return found, checked, opened, again

    found, checked, opened, again = _stdio(store, "--no-ask")(body)
    assert not found.is_error and found.content[0].text.startswith(
        f"{len(found.structured_content['passages'])} passages"
    )
    result = checked.structured_content
    assert result["status"] == "partial" and result["kept"] == 1 and result["dropped"] == 2
    first, forged, unknown = result["claims"]
    assert first["kept"] and first["citations"][0]["valid"]
    assert forged["citations"][0]["reason"] == "quote_not_found"
    assert unknown["citations"][0]["reason"] == "unknown_source"
    assert any("S99" in line and "not sent" in line for line in result["repair"])
    assert "quote_not_found" in checked.content[0].text and result["trace_id"]
    marked = opened.structured_content["marked"]
    assert f"[[{LEAVE}]]" in marked and opened.structured_content["resource"].startswith(
        "quotebound://trace/"
    )
    # the same chunk returned again keeps its id in this conversation
    ids = {p["key"]: p["id"] for p in found.structured_content["passages"]}
    assert all(ids.get(p["key"], p["id"]) == p["id"] for p in again.structured_content["passages"])


def test_an_id_the_store_holds_but_this_conversation_never_sent_is_unknown(store: str) -> None:
    async def body(s: ClientSession) -> Any:
        await s.call_tool("search", {"query": "contractors"})
        # S1 of another conversation would be a real chunk; here only what was sent counts
        return await s.call_tool(
            "verify", {"answer": _verify_answer(("Leave is paid.", "S40", LEAVE))}
        )

    result = _stdio(store, "--no-ask")(body).structured_content
    assert result["claims"][0]["citations"][0]["reason"] == "unknown_source"


def test_bad_input_is_a_tool_error_and_the_server_answers_after(store: str) -> None:
    too_many = json.dumps(
        {
            "claims": [
                {"text": f"Claim {n}.", "citations": [{"source": "S1", "quote": LEAVE}]}
                for n in range(201)
            ]
        }
    )

    async def body(s: ClientSession) -> Any:
        out = [
            await s.call_tool("verify", {"answer": _verify_answer(("x y z", "S1", LEAVE))}),
            await s.call_tool("search", {"query": "   "}),
            await s.call_tool("search", {"query": "leave", "corpus": "no-such-corpus"}),
            await s.call_tool("search", {"query": "leave", "corpus": "board"}),  # not readable
            await s.call_tool("search", {"query": "leave", "limit": 500}),
            await s.call_tool("search", {"limit": 3}),
            await s.call_tool("open", {"citation": "S1"}),
        ]
        await s.call_tool("search", {"query": "parental leave"})
        out += [
            await s.call_tool("verify", {"answer": too_many}),
            await s.call_tool("open", {"citation": "S404"}),
            await s.call_tool("ask", {"question": "How many weeks of leave?"}),  # --no-ask
        ]
        out.append(await s.call_tool("search", {"query": "parental leave"}))
        return out

    results = _stdio(store, "--no-ask")(body)
    *errors, last = results
    messages = [r.content[0].text for r in errors]
    assert all(r.is_error for r in errors), messages
    assert "search first" in messages[0]
    assert "query is empty" in messages[1]
    assert "no-such-corpus" in messages[2] and "'board'" in messages[3]
    assert "at most 200" in messages[7] and "split the answer" in messages[7]
    assert "S404" in messages[8] and "never sent" in messages[8]
    assert "--no-ask" in messages[9]
    assert not last.is_error and last.structured_content["passages"]


def test_ask_answers_on_the_demo_data_and_its_trace_is_a_resource(store: str) -> None:
    async def body(s: ClientSession) -> Any:
        answer = await s.call_tool(
            "ask", {"question": "How many weeks of paid parental leave do employees get?"}
        )
        trace = await s.read_resource(answer.structured_content["resource"])
        card = answer.structured_content["cards"][0]
        source = await s.read_resource(
            f"quotebound://trace/{answer.structured_content['trace_id']}/sources/"
            f"{card['quotes'][0]['source']}"
        )
        missing = None
        try:
            await s.read_resource("quotebound://trace/nope")
        except Exception as exc:  # the SDK raises the resource error as an MCP error
            missing = str(exc)
        prompt = await s.get_prompt("answer_from_documents", {"question": "Leave?"})
        return answer, trace, source, missing, prompt

    answer, trace, source, missing, prompt = _stdio(store)(body)
    data = answer.structured_content
    assert not answer.is_error and data["status"] in ("grounded", "partial"), data
    assert any("16 weeks" in c["text"] for c in data["claims"])
    assert json.loads(trace.contents[0].text)["id"] == data["trace_id"]
    assert json.loads(source.contents[0].text)["spans"]
    assert missing is not None and "nope" in missing
    assert "verify" in prompt.messages[0].content.text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(store: str) -> Iterator[tuple[str, dict[str, str]]]:
    keys = {
        group: json.loads(_qb("keys", "create", "--name", group, *acl, "--store", store, "--json"))[
            "secret"
        ]
        for group, acl in (("public", ()), ("secret", ("--acl", "secret")))
    }
    port = _free_port()
    proc = subprocess.Popen(
        [QB, "mcp", "--http", f"127.0.0.1:{port}", "--store", store, "--no-ask", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield listening_url(proc), keys
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()


def _http(url: str, key: str, body: Session) -> Any:
    import httpx2

    async def main() -> Any:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            return await body(s)

    return anyio.run(main)


def test_over_http_no_key_is_401_and_a_keys_groups_decide_what_search_returns(
    http_server: tuple[str, dict[str, str]],
) -> None:
    url, keys = http_server
    bare = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
    assert bare.status_code == 401 and bare.json()["error"] == "unauthorized"
    wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer qb_nope"}, timeout=10)
    assert wrong.status_code == 401

    async def body(s: ClientSession) -> Any:
        found = await s.call_tool("search", {"query": "merger Bluebird board"})
        return [p["text"] for p in found.structured_content["passages"]]

    assert not any("Bluebird" in t for t in _http(url, keys["public"], body))
    assert any("Bluebird" in t for t in _http(url, keys["secret"], body))


def test_the_docs_client_configurations_parse_and_name_real_options() -> None:
    """Each configuration in docs/mcp.md: the JSON parses, and the command it starts is
    ``quotebound mcp`` with options the command has."""
    from quotebound.cli import cli

    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```json\n")[1:]]
    shells = [b.split("```", 1)[0] for b in text.split("```sh\n")[1:]]
    commands: list[list[str]] = []
    for block in blocks:
        data = json.loads(block)
        for server in data.get("mcpServers", {}).values():
            if "command" in server:
                commands.append([server["command"], *server["args"]])
            else:
                assert server["url"].endswith("/mcp") and "Authorization" in server["headers"]
    for block in shells:
        for line in block.splitlines():
            if line.startswith("claude mcp add"):
                commands.append(shlex.split(line.split(" -- ", 1)[1]))
    assert len(commands) >= 3
    command = cli.commands["mcp"]
    for argv in commands:
        assert argv[:2] == ["quotebound", "mcp"], argv
        command.make_context("mcp", argv[2:])  # raises on an unknown option
    with pytest.raises(click.UsageError):
        command.make_context("mcp", ["--no-such-option"])


def test_a_search_is_traced_as_sent_and_left_out_of_the_answers_evaluated(store: str) -> None:
    from quotebound.evaluation.sample import recent_traces
    from quotebound.store import open_store

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("search", {"query": "contractors holidays"})

    found = _stdio(store, "--no-ask")(body).structured_content
    with open_store(store) as db:
        trace = db.get_trace(found["trace_id"])
        assert trace.status == "searched" and not trace.attempts
        sent = {s.id: s for s in trace.sources}
        for p in found["passages"]:  # recorded as sent: the text, its offsets, its version
            assert sent[p["id"]].text == p["text"] and sent[p["id"]].version is not None
        assert found["trace_id"] not in {t.id for t in recent_traces(db, None, 500)}


def test_over_http_two_callers_questions_are_answered_side_by_side(tmp_path: Path) -> None:
    """Over HTTP each call takes its own store connection (``store.pool.Stores``, as
    ``mcp --http`` serves): two assistants' questions run at once. Each ask waits inside for
    the other; answered one at a time, the first would wait alone and fail."""
    import httpx2

    from kits.serverkit import fill, live_server
    from quotebound import mcp
    from quotebound.mcp.server import asker_of
    from quotebound.pipeline import AskOptions
    from quotebound.providers import ExtractiveProvider
    from quotebound.store import open_store
    from quotebound.store.pool import Stores

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as db:
        fill(db)
        secret = db.create_key(name="assistant")[1]
    real = asker_of(ExtractiveProvider(), AskOptions())
    both_in = threading.Barrier(2)
    connections: list[int] = []

    def asker(question: str, stores: Any, options: Any) -> Any:
        with stores.checkout() as store:
            connections.append(id(store))
            both_in.wait(timeout=30)
        return real(question, stores, options)

    stores = Stores(url, idle=4)
    app = mcp.http_app(lambda key: mcp.conversation_for(stores, key, (), None, asker), stores)
    answers: list[Any] = []
    refused: list[bool] = []

    async def one(base: str) -> None:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as client,
            streamable_http_client(f"{base}/mcp", http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            answers.append(await s.call_tool("ask", {"question": "How many weeks of leave?"}))
            empty = await s.call_tool("ask", {"question": "   "})  # in the ask's own threads too
            refused.append(empty.is_error and "question is empty" in empty.content[0].text)

    async def both(base: str) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(one, base)
            group.start_soon(one, base)

    try:
        with live_server(app) as base:
            anyio.run(both, base)
    finally:
        stores.close()
    assert len(answers) == 2 and not any(a.is_error for a in answers), answers
    for answer in answers:
        assert any("16 weeks" in c["text"] for c in answer.structured_content["claims"])
    assert len(set(connections)) == 2  # a connection each
    assert refused == [True, True]


def test_over_http_a_store_that_cannot_be_reached_is_a_503_not_a_traceback() -> None:
    from kits.serverkit import live_server
    from quotebound import mcp
    from quotebound.store.pool import Stores

    stores = Stores("postgresql://qb@127.0.0.1:1/none", idle=1)  # (nothing listens on port 1)
    app = mcp.http_app(lambda key: mcp.conversation_for(stores, key, (), None, None), stores)
    with live_server(app) as base:
        reply = httpx.post(
            f"{base}/mcp", json={}, headers={"Authorization": "Bearer qb_x"}, timeout=30
        )
        # the official client: its own error at once, not a hang
        started = time.monotonic()
        with pytest.raises(BaseException) as raised:
            _http(f"{base}/mcp", "qb_x", lambda s: s.list_tools())
        assert time.monotonic() - started < 20
    assert reply.status_code == 503 and reply.json()["error"] == "store_error"
    assert "Server returned an error response" in repr(raised.value)
