"""Anthropic's Messages API, answered by quotebound: ``POST /v1/messages`` and ``GET
/v1/models`` in the shape the official SDKs parse, every citation verified.

A request's documents (``document`` blocks: a ``text`` source, or ``content`` of text blocks;
``search_result`` blocks, at the top level or in a ``tool_result``) become the working set:
each cut into pieces of whole sentences (a content block or a search result's block: one
unit each), keyed back to where it stands in its document, ranked against the question when
there are more than the budget holds. The last user turn's text is the question (read with
the turn before it when it leans on it: ``followups.asked``); the model
``serve`` runs answers under the contract with ``serve``'s parts (support tier, answer check,
fallback), verified, repaired once, or abstained. Each kept claim is a text block whose
``citations`` point at the whole sentences (``char_location``), blocks
(``content_block_location``) or search-result blocks (``search_result_location``) that hold
its verified quote, ``cited_text`` exactly the document's text there. An abstention is one
plain text block. Nothing unverified is returned.

Errors are Anthropic's envelope (``{"type": "error", "error": {"type", "message"}}``).
With ``"stream": true``, Anthropic's event sequence (``message_start``, per kept claim
``content_block_start``, ``citations_delta`` per citation, ``text_delta``,
``content_block_stop``, then ``message_delta`` and ``message_stop``; ``ping`` while the model
works), emitted once the answer is verified: nothing unverified is ever streamed; a failure
ends the stream with an ``error`` event. A base64 PDF is read as ingest reads one (its text
layer, page by page) and cited with ``page_location``. Not served (an
``invalid_request_error`` naming it): images, URL or file documents, tools
(docs/messages-api.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from ..corpus import LoadedDocument, Page
from ..ingest.chunker import chunk_document
from ..pipeline import Answer
from ..retrieval import PIECE_CHARS, by_shared_words, named_sources_first
from ..sources import Source
from ..store import ApiKey, TraceRecord
from ..text.sentences import sentences_around
from .answers import run_ask_sources, tokens
from .errors import ApiError, json_body
from .followups import asked
from .state import ServerState

log = logging.getLogger("quotebound.server")

router = APIRouter()

MAX_DOCUMENTS = 100


class MessagesError(Exception):
    """A request Anthropic's API would refuse, in its words: ``kind`` and HTTP ``status``."""

    def __init__(self, kind: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status

    def reply(self) -> JSONResponse:
        body = {"type": "error", "error": {"type": self.kind, "message": str(self)}}
        return JSONResponse(body, status_code=self.status)


def _invalid(message: str) -> MessagesError:
    return MessagesError("invalid_request_error", message)


def _unexpected(exc: Exception) -> MessagesError:
    """A failure the route did not foresee, in Anthropic's words: the service busy is
    ``overloaded_error`` (529), anything else ``api_error`` (500), its reason in the log."""
    if isinstance(exc, ApiError) and exc.code == "busy":
        return MessagesError("overloaded_error", exc.message, 529)
    if isinstance(exc, ApiError):
        return MessagesError("api_error", exc.message, 500)
    log.exception("POST /v1/messages failed")
    return MessagesError("api_error", "the answer failed; the server's log says why", 500)


# -- the documents ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Document:
    """One document of the request: ``index`` in its kind's order (documents and search
    results are numbered apart, as Anthropic numbers them), its text as a citation indexes it,
    and its units: ``(start, end)`` in that text per content block (none for plain text)."""

    kind: str  # "text" | "content" | "pdf" | "search_result"
    index: int
    title: str | None
    text: str
    blocks: tuple[tuple[int, int], ...]
    cited: bool  # citations enabled
    source: str | None = None  # a search result's source
    pages: tuple[tuple[int, int, int], ...] = ()  # a PDF's pages: (start, end, number)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _invalid(f"{where}: expected a string")
    return value


def _text_blocks(value: Any, where: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    if not isinstance(value, list) or not value:
        raise _invalid(f"{where}: expected a non-empty list of text blocks")
    parts: list[str] = []
    blocks: list[tuple[int, int]] = []
    at = 0
    for j, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text":
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise _invalid(f"{where}.{j}: a {kind!r} block cannot be served; text blocks only")
        text = _string(block.get("text"), f"{where}.{j}.text")
        if parts:
            parts.append("\n\n")
            at += 2
        parts.append(text)
        blocks.append((at, at + len(text)))
        at += len(text)
    return "".join(parts), tuple(blocks)


def _cited(block: dict[str, Any]) -> bool:
    citations = block.get("citations")
    return isinstance(citations, dict) and citations.get("enabled") is True


def read_request(body: Any) -> tuple[str, list[Document]]:
    """The question (the last user turn's text) and the documents of a Messages request."""
    if not isinstance(body, dict):
        raise _invalid("the request body must be a JSON object")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise _invalid(f"{field}: Field required")
    if not isinstance(body["model"], str):
        raise _invalid("model: a string is required")
    if body.get("stream") not in (None, True, False):
        raise _invalid("stream: a boolean is required")
    if body.get("tools"):
        raise _invalid("tools: tool use is not served; quotebound answers from documents")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages: at least one message is required")
    documents: list[Document] = []
    counts = {"document": 0, "search_result": 0}
    turns: list[str] = []  # what each user turn said
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise _invalid(f"messages.{n}: a message with role user or assistant")
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            raise _invalid(f"messages.{n}.content: a string or a list of content blocks")
        said: list[str] = []
        for j, block in enumerate(blocks):
            where = f"messages.{n}.content.{j}"
            if not isinstance(block, dict):
                raise _invalid(f"{where}: a content block object")
            kind = block.get("type")
            if kind == "text":
                said.append(_string(block.get("text"), f"{where}.text"))
            elif kind == "document" and message["role"] == "user":
                documents.append(_document(block, counts, where))
            elif kind == "search_result" and message["role"] == "user":
                documents.append(_search_result(block, counts, where))
            elif kind == "tool_result" and message["role"] == "user":
                inner = block.get("content")
                for k, item in enumerate(inner if isinstance(inner, list) else []):
                    if isinstance(item, dict) and item.get("type") == "search_result":
                        documents.append(_search_result(item, counts, f"{where}.content.{k}"))
                    elif isinstance(item, dict) and item.get("type") == "text":
                        said.append(_string(item.get("text"), f"{where}.content.{k}.text"))
            else:
                raise _invalid(f"{where}: a {kind!r} block cannot be served by quotebound")
        if message["role"] == "user":
            turns.append(" ".join(s.strip() for s in said if s.strip()))
    if len(documents) > MAX_DOCUMENTS:
        raise MessagesError(
            "request_too_large", f"more than {MAX_DOCUMENTS} documents in one request", 413
        )
    question = asked(turns)  # the last user turn (a follow-up: read with the turn before it)
    if not question.strip():
        raise _invalid("messages: the last user turn asks nothing (no text block)")
    if documents and len({d.cited for d in documents}) > 1:
        raise _invalid("citations must be enabled on all or none of the documents of a request")
    return question.strip(), documents


def _document(block: dict[str, Any], counts: dict[str, int], where: str) -> Document:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _invalid(f"{where}.source: Field required")
    kind = source.get("type")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    blocks: tuple[tuple[int, int], ...] = ()
    if kind == "text":
        text = _string(source.get("data"), f"{where}.source.data")
    elif kind == "content":
        content = source.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        text, blocks = _text_blocks(content, f"{where}.source.content")
        kind = "content"
    elif kind == "base64":
        return _pdf(block, source, counts, where, title)
    elif kind in ("url", "file"):
        raise _invalid(
            f"{where}.source: a {kind} document is not served; send the PDF as base64 or its "
            "text as a text source"
        )
    else:
        raise _invalid(f"{where}.source.type: {kind!r} is not a document source")
    index = counts["document"]
    counts["document"] += 1
    return Document(kind, index, title, text, blocks, _cited(block))


MAX_PDF_BYTES = 32 << 20  # a base64 PDF, decoded, at most (Anthropic's request limit)


def _pdf(
    block: dict[str, Any],
    source: dict[str, Any],
    counts: dict[str, int],
    where: str,
    title: str | None,
) -> Document:
    """A base64 PDF: its text layer page by page, as ingest reads it (``ingest.pdf``)."""
    import base64
    import binascii

    from ..errors import QuoteboundError
    from ..ingest.pdf import load_pdf

    if source.get("media_type") != "application/pdf":
        raise _invalid(f"{where}.source.media_type: base64 documents must be application/pdf")
    data = _string(source.get("data"), f"{where}.source.data")
    if len(data) > MAX_PDF_BYTES * 4 // 3 + 4:
        raise MessagesError("request_too_large", f"{where}: the PDF is over 32 MB", 413)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid(f"{where}.source.data: not valid base64") from None
    if not raw.startswith(b"%PDF"):
        raise _invalid(f"{where}.source.data: the data is not a PDF")
    name = f"document {counts['document']}"
    try:
        loaded = load_pdf(Path(name), name, raw)
    except QuoteboundError as exc:
        raise _invalid(f"{where}.source: {exc}") from None
    index = counts["document"]
    counts["document"] += 1
    pages = tuple((p.start, p.end, p.number) for p in loaded.pages if p.end > p.start)
    return Document(
        "pdf", index, title or loaded.title, loaded.text, (), _cited(block), None, pages
    )


def _search_result(block: dict[str, Any], counts: dict[str, int], where: str) -> Document:
    text, blocks = _text_blocks(block.get("content"), f"{where}.content")
    index = counts["search_result"]
    counts["search_result"] += 1
    source = block.get("source")
    title = block.get("title")
    return Document(
        "search_result",
        index,
        title if isinstance(title, str) else None,
        text,
        blocks,
        _cited(block),
        source if isinstance(source, str) else None,
    )


def _key(doc: Document) -> str:
    return f"{'sr' if doc.kind == 'search_result' else 'doc'}{doc.index}"


def sources_of(question: str, documents: list[Document], named_first: bool = True) -> list[Source]:
    """The documents cut into pieces of whole sentences (a block: a unit of its own), each
    keyed ``doc{i}:{start}`` (``sr{i}:{start}``) by where it starts in its document's text;
    those sharing more of the question's words first (then in their order), and with
    ``named_first`` (``serve --named-first``) the pieces of the documents the question names
    before the others (``retrieval.named_sources_first``)."""
    pieces: list[Source] = []
    for doc in documents:
        for start, end, page in _units(doc):
            text = doc.text[start:end]
            if not text.strip():
                continue
            pieces.append(
                Source(
                    id=f"P{len(pieces) + 1}",
                    text=text,
                    key=f"{_key(doc)}:{start}",
                    title=doc.title,
                    url=doc.source,
                    page=page,
                )
            )
    ranked = by_shared_words(question, pieces)
    return named_sources_first(question, ranked) if named_first else ranked


def _units(doc: Document) -> list[tuple[int, int, int | None]]:
    """Where a document's pieces stand: each block; else the chunker's whole-sentence chunks
    (``ingest.chunk_document``, as ingest cuts a document), each with its first page."""
    if doc.blocks:
        return [(a, b, None) for a, b in doc.blocks]
    pages = tuple(Page(number, start, end) for start, end, number in doc.pages)
    loaded = LoadedDocument(_key(doc), doc.text, "text/plain", doc.title, pages)
    return [
        (c.start, c.end, c.pages[0] if c.pages else None)
        for c in chunk_document(loaded, max_chars=PIECE_CHARS)
    ]


# -- the response -------------------------------------------------------------------------


def _citation(doc: Document, a: int, b: int) -> dict[str, Any]:
    if doc.blocks:
        first = next(j for j, (s, e) in enumerate(doc.blocks) if a < e)
        last = next(j for j, (s, e) in enumerate(doc.blocks) if b <= e)
        s, e = doc.blocks[first][0], doc.blocks[last][1]
        cited = doc.text[s:e]
        if doc.kind == "search_result":
            return {
                "type": "search_result_location",
                "cited_text": cited,
                "search_result_index": doc.index,
                "source": doc.source,
                "title": doc.title,
                "start_block_index": first,
                "end_block_index": last + 1,
            }
        return {
            "type": "content_block_location",
            "cited_text": cited,
            "document_index": doc.index,
            "document_title": doc.title,
            "start_block_index": first,
            "end_block_index": last + 1,
        }
    s, e = sentences_around(doc.text, a, b) or (a, b)
    if doc.pages:
        numbers = [n for start, end, n in doc.pages if start < e and s < end] or [1]
        return {
            "type": "page_location",
            "cited_text": doc.text[s:e],
            "document_index": doc.index,
            "document_title": doc.title,
            "start_page_number": min(numbers),
            "end_page_number": max(numbers) + 1,
        }
    return {
        "type": "char_location",
        "cited_text": doc.text[s:e],
        "document_index": doc.index,
        "document_title": doc.title,
        "start_char_index": s,
        "end_char_index": e,
    }


def content_of(
    answer: Answer, trace: TraceRecord | None, documents: list[Document]
) -> list[dict[str, Any]]:
    """The response's content blocks: each kept claim a text block with the citations of its
    verified quotes in the documents (none for documents without citations enabled), or one
    block saying why nothing is answered."""
    if not answer.claims:
        a = answer.abstention
        text = (
            "The documents do not answer this."
            if a is None
            else f"{a.missing[:1].upper()}{a.missing[1:]}. {a.next_step}"
        )
        return [{"type": "text", "text": text}]
    by_key = {_key(d): d for d in documents}
    sent = {s.id: s for s in (trace.sources if trace is not None else ())}
    blocks: list[dict[str, Any]] = []
    for claim in answer.claims:
        citations: list[dict[str, Any]] = []
        for cite in claim.cites:
            src = sent.get(cite.source)
            if src is None or src.key is None or cite.span is None:
                continue
            name, _, offset = src.key.rpartition(":")
            doc = by_key.get(name)
            if doc is None or not doc.cited or not offset.isdigit():
                continue
            spans = cite.spans or (cite.span,)
            for start, end in spans:
                made = _citation(doc, int(offset) + start, int(offset) + end)
                if made not in citations:
                    citations.append(made)
        block: dict[str, Any] = {"type": "text", "text": claim.text + " "}
        if citations:
            block["citations"] = citations
        blocks.append(block)
    blocks[-1]["text"] = blocks[-1]["text"].rstrip()
    return blocks


# -- the routes ---------------------------------------------------------------------------


def _key_of(request: Request, state: ServerState) -> ApiKey:
    key = state.key_for(request.headers, x_api_key=True)
    if key is None:
        raise MessagesError(
            "authentication_error",
            "send x-api-key: KEY (or Authorization: Bearer KEY); create a key with: "
            "quotebound keys create",
            401,
        )
    return key


def list_models(request: Request) -> JSONResponse:
    """The models ``/v1/messages`` answers with, as Anthropic's Models API lists them
    (``GET /v1/models`` answers with it to Anthropic's clients: ``server.chat``)."""
    state: ServerState = request.app.state.server
    try:
        _key_of(request, state)
        names = list(state.models())
    except MessagesError as exc:
        return exc.reply()
    except Exception as exc:
        return _unexpected(exc).reply()
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
        for m in names
    ]
    return JSONResponse(
        {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
    )


@router.post("/v1/messages", tags=["messages"], response_model=None)
async def create_message(request: Request) -> Response:
    """A Messages request answered from its documents, every citation verified."""
    state: ServerState = request.app.state.server
    try:
        key = _key_of(request, state)
        try:
            body = await json_body(request)
        except ApiError as exc:  # not JSON, or over the body limit while read
            if exc.http_status == 413:
                raise MessagesError("request_too_large", exc.message, 413) from None
            raise _invalid(exc.message) from None
        question, documents = read_request(body)
        model = body["model"]
        backend = state.models().get(model)
        if backend is None:
            raise MessagesError("not_found_error", f"model: {model!r} is not served here", 404)
        if not documents:
            raise _invalid("messages: no document or search result to answer from")
        sources = sources_of(question, documents, state.config.named_first)
        try:
            state.admit()
        except Exception:
            raise MessagesError("overloaded_error", "too many requests are waiting", 529) from None
        future = state.start(run_ask_sources, state, key, question, sources, backend)
        future.add_done_callback(state.release)
        if body.get("stream") is True:
            return StreamingResponse(
                _events(future, model, documents),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        answer, trace = await asyncio.wrap_future(future)
    except MessagesError as exc:
        return exc.reply()
    except Exception as exc:  # never quotebound's envelope, never a traceback
        return _unexpected(exc).reply()
    if answer.status == "provider_error":
        return MessagesError("api_error", f"the model failed: {answer.error}", 500).reply()
    response = _message(answer, model, content_of(answer, trace, documents))
    return JSONResponse(response, headers=_trace_headers(answer))


def _message(answer: Answer, model: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_{answer.trace_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": tokens(answer),
    }


def _trace_headers(answer: Answer) -> dict[str, str]:
    return {
        "quotebound-trace-id": answer.trace_id or "",
        "quotebound-trace": f"/v1/traces/{answer.trace_id}",
    }


PING_SECONDS = 5.0  # a ping this often while the model works


def _event(kind: str, data: dict[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n"


async def _events(
    future: Future[tuple[Answer, TraceRecord | None]], model: str, documents: list[Document]
) -> AsyncIterator[str]:
    """The answer as Anthropic's stream events, once it is verified; pings until then."""
    waiting = asyncio.wrap_future(future)
    while True:
        done, _ = await asyncio.wait({waiting}, timeout=PING_SECONDS)
        if done:
            break
        yield _event("ping", {})
    try:
        answer, trace = waiting.result()
    except Exception:  # (never a hung stream: the failure is the stream's last event)
        yield _event("error", {"error": {"type": "api_error", "message": "the answer failed"}})
        return
    if answer.status == "provider_error":
        error = {"type": "api_error", "message": f"the model failed: {answer.error}"}
        yield _event("error", {"error": error})
        return
    start = _message(answer, model, [])
    start["stop_reason"] = None
    yield _event("message_start", {"message": start})
    for index, block in enumerate(content_of(answer, trace, documents)):
        yield _event(
            "content_block_start",
            {"index": index, "content_block": {"type": "text", "text": "", "citations": []}},
        )
        for citation in block.get("citations", []):
            delta = {"type": "citations_delta", "citation": citation}
            yield _event("content_block_delta", {"index": index, "delta": delta})
        delta = {"type": "text_delta", "text": block["text"]}
        yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    yield _event(
        "message_delta",
        {
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": tokens(answer),
        },
    )
    yield _event("message_stop", {})
