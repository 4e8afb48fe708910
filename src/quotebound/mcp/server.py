"""quotebound as an MCP server, on the official ``mcp`` SDK (``MCPServer``): the tools
``search``, ``verify``, ``open`` and ``ask``, the traces as resources, and one prompt.

Each tool has an input schema (from its signature) and an output schema (its ``*Out`` model),
and answers with structured content and a short text for clients that show text. A bad
argument or a refused request is a tool error (``isError``) with quotebound's message; the
server goes on answering. Over stdio one process is one conversation; over streamable HTTP each
MCP session is one, under the API key that opened it (``Authorization: Bearer KEY``, as
``serve``: a key maps to its ACL groups; no key, no tools).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..errors import QuoteboundError
from ..parsing import FORMATS
from ..store import ApiKey
from ..store.pool import Connections
from .conversation import DEFAULT_LIMIT, MAX_LIMIT, Asker, Conversation

INSTRUCTIONS = (
    "quotebound gives you passages from the user's documents and checks, in code, that what "
    "you write from them is what they say. Search, answer citing the passages' ids (S1, S2, "
    "...) with verbatim quotes, call verify before you answer, mend what it names once, and "
    "leave out what it still drops."
)


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class PassageOut(_Out):
    id: str = Field(description="The id to cite, in this conversation (S1, S2, ...)")
    title: str | None
    page: int | None
    url: str | None
    key: str | None = Field(description="The chunk's document key and ordinal")
    text: str


class SearchOut(_Out):
    query: str
    trace_id: str = Field(description="The trace recording these passages as sent")
    passages: list[PassageOut]
    sent: int = Field(description="Passages sent in this conversation so far")


class CitationOut(_Out):
    id: str
    valid: bool
    reason: str | None = Field(description="quotebound's reason code (docs/reasons.md)")
    quote: str | None
    message: str | None


class ClaimOut(_Out):
    n: int
    text: str
    kept: bool
    reason: str | None
    message: str | None
    notes: list[str]
    citations: list[CitationOut]


class VerifyOut(_Out):
    status: str = Field(description="grounded, partial, ungrounded, abstained or unparseable")
    kept: int
    dropped: int
    claims: list[ClaimOut]
    repair: list[str] = Field(description="What to mend, one sentence per failure")
    error: str | None
    trace_id: str


class OpenOut(PassageOut):
    marked: str = Field(description="The text as sent, verified quotes within [[ and ]]")
    quotes: list[dict[str, Any]]
    trace_id: str
    resource: str


class AskOut(_Out):
    status: str = Field(description="grounded, partial, abstained or provider_error")
    claims: list[dict[str, Any]]
    cards: list[dict[str, Any]]
    abstention: dict[str, Any] | None
    unaddressed: list[str]
    trace_id: str | None
    resource: str | None


# Who is asking: a conversation for this call (stdio: the one; HTTP: the session's, made under
# the key of the request), or a ToolError saying why not.
Conversations = Callable[[Context], Conversation]


def build(conversations: Conversations) -> MCPServer:
    """The MCP server, each call answered in the conversation ``conversations`` gives it."""
    server = MCPServer(
        "quotebound", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    limiter: list[anyio.CapacityLimiter] = []  # (made in the event loop, on the first question)

    @server.tool(
        description="Search the user's documents. Returns passages, each with an id (S1, S2, "
        "...) to cite; cite only ids you were given, quoting their words verbatim.",
        annotations=read_only,
    )
    def search(
        query: Annotated[str, Field(description="What to look for")],
        ctx: Context,
        corpus: Annotated[str | None, Field(description="Search only this corpus")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    ) -> Annotated[CallToolResult, SearchOut]:
        data = _run(lambda: conversations(ctx).search(query, corpus, limit))
        lines = [f"{len(data['passages'])} passages for {data['query']!r}:"]
        for p in data["passages"]:
            where = f", page {p['page']}" if p.get("page") else ""
            lines.append(f"[{p['id']}] {p['title'] or p['key']}{where}: {p['text']}")
        return _result(data, "\n".join(lines))

    @server.tool(
        description="Check your answer before you give it: every claim must cite the ids "
        "search returned, with a verbatim quote of the passage cited. Send the answer as JSON "
        '{"claims": [{"text": "...", "citations": [{"source": "S1", "quote": "verbatim '
        'words"}]}]}, or as <evidence>[S1] verbatim sentence</evidence> blocks followed by the '
        "answer, or as sentences with [S1] markers (checked against the whole passage). "
        "Returns each claim kept or dropped with the reason, and what to mend: mend it once, "
        "then answer with the kept claims only.",
        annotations=read_only,
    )
    def verify(
        answer: Annotated[str, Field(description="The answer you wrote, with its citations")],
        ctx: Context,
        format: Annotated[
            str, Field(description=f"One of {', '.join(FORMATS)}; auto detects it")
        ] = "auto",
        question: Annotated[str, Field(description="The user's question, for the trace")] = "",
    ) -> Annotated[CallToolResult, VerifyOut]:
        data = _run(lambda: conversations(ctx).verify(answer, format, question))
        lines = [f"{data['status']}: {data['kept']} claims kept, {data['dropped']} dropped"]
        for claim in data["claims"]:
            failed = [f"{c['id']} {c['reason']}" for c in claim["citations"] if not c["valid"]]
            why = "" if claim["kept"] else f" ({', '.join(failed) or claim['reason']})"
            lines.append(f"claim {claim['n']} {'kept' if claim['kept'] else 'dropped'}{why}")
        lines += [f"- {r}" for r in data["repair"]]
        return _result(data, "\n".join(lines))

    @server.tool(
        name="open",
        description="Open a passage of this conversation as it was sent, the quotes verified "
        "from it marked [[like this]], with its document's link.",
        annotations=read_only,
    )
    def open_(
        citation: Annotated[str, Field(description="The id, as search returned it (S2)")],
        ctx: Context,
    ) -> Annotated[CallToolResult, OpenOut]:
        data = _run(lambda: conversations(ctx).open(citation))
        where = f" ({data['url']})" if data.get("url") else ""
        return _result(
            data, f"[{data['id']}] {data['title'] or data['key']}{where}\n{data['marked']}"
        )

    @server.tool(
        description="Answer a question from the user's documents with quotebound's whole "
        "pipeline: every claim verified against its quote, or a helpful abstention.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def ask(
        question: Annotated[str, Field(description="The user's question")],
        ctx: Context,
        corpus: Annotated[str | None, Field(description="Answer only from this corpus")] = None,
    ) -> Annotated[CallToolResult, AskOut]:
        # questions run in threads of their own, at most ASKS_AT_ONCE: however many wait,
        # the worker threads of search, verify and the resources stay free
        if not limiter:
            limiter.append(anyio.CapacityLimiter(ASKS_AT_ONCE))
        data = await anyio.to_thread.run_sync(
            lambda: _run(lambda: conversations(ctx).ask(question, corpus)), limiter=limiter[0]
        )
        if data["abstention"] is not None:
            a = data["abstention"]
            text = f"Not answered: {a['missing']}. {a['next_step']}"
        else:
            text = "\n".join(
                c["text"] + " " + "".join(f"[{n}]" for n in c["cards"]) for c in data["claims"]
            )
        return _result(data, text)

    @server.resource(
        "quotebound://trace/{trace_id}",
        name="trace",
        description="A trace: what was sent, every attempt and its verdict",
        mime_type="application/json",
    )
    def trace(trace_id: str, ctx: Context) -> str:
        return _read(lambda: conversations(ctx).trace(trace_id))

    @server.resource(
        "quotebound://trace/{trace_id}/sources/{sid}",
        name="source",
        description="A source of a trace as it was sent, its verified quotes' spans",
        mime_type="application/json",
    )
    def source(trace_id: str, sid: str, ctx: Context) -> str:
        return _read(lambda: conversations(ctx).traced_source(trace_id, sid))

    @server.prompt(
        name="answer_from_documents",
        title="Answer from my documents with verified citations",
        description="Search, quote, verify, repair once, answer with what holds",
    )
    def answer_from_documents(question: str) -> str:
        return (
            f"Answer this question from my documents: {question}\n\n"
            "1. Call search with the question (and again with other words if nothing fits).\n"
            "2. Write the answer as claims, each citing the passage ids it comes from with a "
            "verbatim quote of that passage.\n"
            "3. Call verify with your answer and the question.\n"
            "4. If claims were dropped, mend each as the repair list says (once), and verify "
            "again.\n"
            "5. Answer with the kept claims only, each with its ids; if none is kept, say the "
            "documents do not answer it and what you searched."
        )

    return server


def _run(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return call()
    except QuoteboundError as exc:
        raise ToolError(str(exc)) from exc


def _read(call: Callable[[], dict[str, Any]]) -> str:
    try:
        return json.dumps(call(), ensure_ascii=False)
    except QuoteboundError as exc:
        raise ResourceError(str(exc)) from exc


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class Sessions:
    """The conversations of a streamable HTTP server: one per MCP session and key. The key
    is read from each request's ``Authorization`` header (a revoked key stops at once)."""

    def __init__(self, make: Callable[[ApiKey], Conversation], stores: Connections) -> None:
        self._make = make
        self._stores = stores
        self._open: dict[tuple[str, str], Conversation] = {}

    def __call__(self, ctx: Context) -> Conversation:
        headers = ctx.headers or {}
        key = self.key_of(headers.get("authorization", ""))
        if key is None:
            raise ToolError("send Authorization: Bearer KEY (create one: quotebound keys create)")
        session = headers.get("mcp-session-id", "-")
        conversation = self._open.get((session, key.id))
        if conversation is None:
            conversation = self._open.setdefault((session, key.id), self._make(key))
        return conversation

    def key_of(self, header: str) -> ApiKey | None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        with self._stores.checkout() as store:
            return store.authenticate(token.strip())


def one_conversation(conversation: Conversation) -> Conversations:
    """Over stdio: every call is in the one conversation."""
    return lambda ctx: conversation


ASKS_AT_ONCE = 8  # questions answered at once over HTTP (as serve's ask pool: ask_workers)


def asker_of(provider: Any, options: Any) -> Asker:
    """``ask`` as the server runs it: the pipeline with ``options`` (``defaults().options()``)
    and the caller's corpora, groups, owner and work budget."""
    from dataclasses import replace

    from ..pipeline import ask

    # at most ASKS_AT_ONCE questions run at once, the rest wait their turn (searches and
    # verifications never wait for them); a model that takes one question at a time answers
    # the callers in turn, as serve does
    turns = threading.BoundedSemaphore(ASKS_AT_ONCE)
    guard: AbstractContextManager[Any] = nullcontext() if provider.thread_safe else threading.Lock()

    def run(question: str, stores: Connections, mine: Any) -> Any:
        merged = replace(
            options, corpora=mine.corpora, groups=mine.groups, owner=mine.owner, work=mine.work
        )
        with turns, guard, stores.checkout() as store:  # (a connection once its turn comes)
            return ask(question, store, provider, merged)

    return run
