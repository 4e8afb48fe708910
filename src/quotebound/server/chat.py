"""OpenAI's Chat Completions, answered by quotebound, for the chat UIs teams already run (Open
WebUI, LibreChat, AnythingLLM, LobeChat): ``POST /v1/chat/completions`` and ``GET /v1/models``.

Each corpus the key may read is a model (``quotebound/hr``; ``quotebound`` for all of them).
The last user message is the question, answered as ``/v1/ask`` answers it (``serve``'s model
and parts, verified, repaired once, or a helpful abstention) and traced under the key. The
answer is Markdown: each kept claim followed by its markers ``[1]`` written as links to the
cited source as it was sent (a signed page, the quote marked), then a short
"Sources" list; ``message.annotations`` holds a ``url_citation`` over each marker. Streamed
(``"stream": true``), the same text in ``delta.content`` chunks once it is verified (never a
word before), the annotations, one Open WebUI ``source`` event per cited source with its
verified quotes, a last chunk with ``finish_reason``, then ``data: [DONE]``; a failure ends the
stream with an error chunk. Errors are OpenAI's envelope
(``{"error": {"message", "type", "param", "code"}}``).

``GET /v1/models`` answers in Anthropic's shape to Anthropic's clients (``anthropic-version``
or ``x-api-key`` sent: ``server.messages``) and in OpenAI's to every other.

Each link is signed for one source of the answer's trace (``server.links``) and opens without
a key for ``link_days``. A follow-up that leans on the question before it ("And for
contractors?") is asked with it (``asked``), as the trace records.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError

from ..pipeline import Answer
from ..store import ApiKey
from . import messages
from .answers import run_ask, tokens
from .errors import ApiError, json_body
from .followups import asked
from .links import LinkSigner
from .schemas import AskIn
from .state import ServerState

log = logging.getLogger("quotebound.server")

router = APIRouter()

MODEL = "quotebound"  # every corpus the key reads; "quotebound/NAME" one of them


class ChatError(Exception):
    """A request OpenAI's API would refuse, in its words."""

    def __init__(self, message: str, status: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code

    def reply(self) -> JSONResponse:
        kind = {401: "invalid_request_error", 404: "invalid_request_error"}.get(
            self.status, "invalid_request_error" if self.status < 500 else "server_error"
        )
        body = {"error": {"message": str(self), "type": kind, "param": None, "code": self.code}}
        return JSONResponse(body, status_code=self.status)


def _unexpected(exc: Exception) -> ChatError:
    """A failure the route did not foresee, in OpenAI's words (its reason in the log)."""
    if isinstance(exc, ApiError):
        return ChatError(exc.message, exc.http_status, exc.code)
    log.exception("POST /v1/chat/completions failed")
    return ChatError("the answer failed; the server's log says why", 500, "server_error")


def _key(request: Request, state: ServerState) -> ApiKey:
    key = state.key_for(request.headers)
    if key is None:
        raise ChatError(
            "send Authorization: Bearer KEY (a quotebound key: quotebound keys create)",
            401,
            "invalid_api_key",
        )
    return key


def _corpora(state: ServerState, key: ApiKey, only: str | None = None) -> list[str]:
    """The corpora with a document the key may read, in name order (``only``: that one, when
    the key may read it: a request reads its one corpus, not the whole store's list)."""
    with state.stores.checkout() as db:
        documents = db.documents(only)
    groups = set(key.groups)
    readable = {
        d.corpus
        for d in documents
        if d.current and not d.deleted and (not d.acl or groups & set(d.acl))
    }
    return sorted(readable)


@router.get("/v1/models", tags=["chat"])
def list_models(request: Request) -> Response:
    """The models of this service: Anthropic's list to Anthropic's clients, else OpenAI's:
    ``quotebound`` and ``quotebound/NAME`` for each corpus the key may read."""
    if "anthropic-version" in request.headers or "x-api-key" in request.headers:
        return messages.list_models(request)
    state: ServerState = request.app.state.server
    try:
        key = _key(request, state)
        names = [MODEL, *(f"{MODEL}/{c}" for c in _corpora(state, key))]
    except ChatError as exc:
        return exc.reply()
    except Exception as exc:
        return _unexpected(exc).reply()
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "quotebound"} for n in names]
    return JSONResponse({"object": "list", "data": data})


def _question(body: Any) -> tuple[str, str]:
    """The model asked for and the question (``asked``)."""
    if not isinstance(body, dict):
        raise ChatError("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ChatError("model: a string is required", code="missing_required_parameter")
    if body.get("stream") not in (None, True, False):
        raise ChatError("stream: a boolean is required", code="invalid_type")
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise ChatError("messages: at least one message is required", code="invalid_value")
    users = [t for t in turns if isinstance(t, dict) and t.get("role") == "user"]
    if not users:
        raise ChatError("messages: no user message to answer", code="invalid_value")
    said = [_earlier(u.get("content")) for u in users[:-1]] + [_text_of(users[-1].get("content"))]
    if not said[-1]:
        raise ChatError("messages: the last user message has no text", code="invalid_value")
    return model, asked(said)


def _earlier(content: Any) -> str:
    """An earlier user message's text (an image in it is no error: it is not asked now)."""
    try:
        return _text_of(content)
    except ChatError:
        return ""


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict)]
        if any(p.get("type") not in ("text", None) for p in parts):
            kinds = sorted({str(p.get("type")) for p in parts} - {"text"})
            raise ChatError(f"messages: {', '.join(kinds)} content cannot be served; text only")
        content = " ".join(str(p.get("text", "")) for p in parts)
    return content.strip() if isinstance(content, str) else ""


@router.post("/v1/chat/completions", tags=["chat"], response_model=None)
async def chat_completions(request: Request) -> Response:
    """A question answered from the key's documents, every claim verified, as a chat reply."""
    state: ServerState = request.app.state.server
    try:
        key = _key(request, state)
        try:
            body = await json_body(request)
        except ApiError as exc:  # not JSON, or over the body limit while read
            code = "request_too_large" if exc.http_status == 413 else None
            raise ChatError(exc.message, exc.http_status, code) from None
        model, question = _question(body)
        if model == MODEL:
            corpus = None
        elif (
            (name := model.removeprefix(f"{MODEL}/")) != model
            and name
            and _corpora(state, key, name)
        ):
            corpus = [name]
        else:
            raise ChatError(f"The model '{model}' does not exist", 404, "model_not_found")
        try:
            asked = AskIn(question=question, corpus=corpus)
        except ValidationError as exc:
            raise ChatError(f"messages: {exc.errors()[0]['msg']}") from None
        try:
            state.admit()
        except Exception:
            raise ChatError(
                "too many questions are waiting; retry shortly", 503, "server_busy"
            ) from None
        future = state.start(run_ask, state, asked, key)
        future.add_done_callback(state.release)
        base = (state.config.public_url or str(request.base_url)).rstrip("/")
        if body.get("stream") is True:
            return StreamingResponse(
                _chunks(future, model, base, state.links, _include_usage(body)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        answer = await asyncio.wrap_future(future)
    except ChatError as exc:
        return exc.reply()
    except Exception as exc:  # never quotebound's envelope, never a traceback
        return _unexpected(exc).reply()
    if answer.status == "provider_error":
        return ChatError(f"the model failed: {answer.error}", 502, "upstream_error").reply()
    text, annotations, _ = render(answer, base, state.links)
    reply = {
        "id": f"chatcmpl-{answer.trace_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "annotations": annotations},
                "finish_reason": "stop",
            }
        ],
        "usage": usage(answer),
    }
    return JSONResponse(reply, headers={"quotebound-trace-id": answer.trace_id or ""})


def usage(answer: Answer) -> dict[str, int]:
    """The tokens the answering model reported, as OpenAI names them."""
    used = tokens(answer)
    return {
        "prompt_tokens": used["input_tokens"],
        "completion_tokens": used["output_tokens"],
        "total_tokens": used["input_tokens"] + used["output_tokens"],
    }


def render(
    answer: Answer, base: str, signer: LinkSigner | None = None
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """The answer as Markdown, the ``url_citation`` annotations over its markers, and Open
    WebUI's source events (one per cited source, its verified quotes); each link a signed
    one (``signer``: opens without a key), else the API's trace source page."""
    if not answer.claims:
        a = answer.abstention
        said = "the documents do not answer this" if a is None else a.missing
        step = "" if a is None else f" {a.next_step}"
        return f"Not answered from the documents: {said}.{step}", [], []
    cards = {c.number: c for c in answer.cards}
    trace = answer.trace_id
    text = ""
    annotations: list[dict[str, Any]] = []
    for claim in answer.claims:
        text += claim.text
        for number in claim.cards:
            card = cards[number]
            link = _link(base, trace, card.quotes[0].source if card.quotes else None, signer)
            marker = f"[{number}]"
            start = len(text) + 2  # the marker "[n]" inside " [[n]](link)"
            text += f" [{marker}]({link})"
            citation = {"start_index": start, "end_index": start + len(marker), "url": link}
            annotations.append(
                {"type": "url_citation", "url_citation": {**citation, "title": card.label}}
            )
        text += "\n\n" if claim is not answer.claims[-1] else ""
    lines = ["", "", "Sources:"]
    events = []
    for card in answer.cards:
        sid = card.quotes[0].source if card.quotes else None
        link = _link(base, trace, sid, signer)
        page = next((q.page for q in card.quotes if q.page), None)
        where = f", page {page}" if page else ""
        lines.append(f"[{card.number}] [{card.label}{where}]({link})")
        events.append(
            {
                "event": {
                    "type": "source",
                    "data": {
                        "source": {"name": card.label, "url": card.url or link},
                        "document": [q.text for q in card.quotes],
                        "metadata": [
                            {"source": link, "name": card.label, "page": q.page}
                            for q in card.quotes
                        ],
                    },
                }
            }
        )
    return text + "\n".join(lines), annotations, events


def _link(base: str, trace: str | None, sid: str | None, signer: LinkSigner | None) -> str:
    if trace is None or sid is None:
        return base
    if signer is not None:
        return base + signer.path(trace, sid)
    return f"{base}/v1/traces/{trace}/sources/{sid}/document"


def _include_usage(body: dict[str, Any]) -> bool:
    """Whether a streamed request asked for the usage chunk (``stream_options.include_usage``)."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


async def _chunks(
    future: Future[Answer], model: str, base: str, signer: LinkSigner, with_usage: bool = False
) -> AsyncIterator[str]:
    """The answer as Chat Completions chunks once it is verified; with ``with_usage``, the
    usage chunk OpenAI sends last (no choices); then ``[DONE]``."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, ident: str = "") -> str:
        body = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    def failed(message: str, code: str | None) -> str:
        error = {"message": message, "type": "server_error", "param": None, "code": code}
        return f"data: {json.dumps({'error': error})}\n\n"

    try:
        answer = await asyncio.wrap_future(future)
    except Exception:  # (never a hung stream)
        yield failed("the answer failed", None)
        yield "data: [DONE]\n\n"
        return
    if answer.status == "provider_error":
        yield failed(f"the model failed: {answer.error}", "upstream_error")
        yield "data: [DONE]\n\n"
        return
    ident = answer.trace_id or ""
    text, annotations, events = render(answer, base, signer)
    yield chunk({"role": "assistant", "content": ""}, ident=ident)
    pieces = text.split("\n\n")
    for n, piece in enumerate(pieces):  # (joined, the chunks are exactly the text)
        yield chunk({"content": piece + ("\n\n" if n < len(pieces) - 1 else "")}, ident=ident)
    if annotations:
        yield chunk({"annotations": annotations}, ident=ident)
    for event in events:
        yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
    yield chunk({}, "stop", ident)
    if with_usage:
        tail = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage(answer),
        }
        yield f"data: {json.dumps(tail)}\n\n"
    yield "data: [DONE]\n\n"
