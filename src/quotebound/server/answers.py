"""Answering a question in the ask pool, and the server-sent events of a streamed answer.

Invariants:
- An answer runs in the ask pool, never in the request threadpool, with a store connection of
  its own, checked out only for the answer (the caller's key check gave its own back at once).
- A stream sends ``progress`` events, then one ``claim`` per claim of the final answer (each
  only after it passed verification), then ``answer`` (the same JSON as without streaming), or
  ``error`` instead of ``answer``: a draft is never shown as verified. When the answer takes a
  repair turn, the first attempt's kept claims are sent as soon as they pass, before the
  repair (they lead the final answer, with ``trace_id`` null until the ``answer`` event); the
  rest follow with the answer; each claim is sent once.
- A streamed answer starts at once and runs to its end whether or not the client reads: it
  always writes its trace and gives its place back, even when the client goes away.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext, suppress
from typing import Any

from fastapi.responses import StreamingResponse

from ..defaults import make_fallback
from ..packing import DEFAULT_BUDGET_CHARS
from ..pipeline import Answer, AskOptions, Progress, ask, ask_sources
from ..providers import ExtractiveProvider, Provider
from ..sources import Source
from ..store import ApiKey, TraceRecord
from .errors import reply_for
from .schemas import AskIn
from .state import Model, ServerState

_Event = tuple[str, Any] | None  # (kind, payload); None: the answer is over
_Put = Callable[[_Event], None]


def run_ask(
    state: ServerState, body: AskIn, key: ApiKey, progress: Progress | None = None
) -> Answer:
    """One answer from the store's documents the key may read, in the ask pool (never in the
    request threadpool)."""
    options = served_options(
        state, key, corpora=body.corpus, format=body.format, limit=body.limit, budget=body.budget
    )
    provider = state.model.get()
    guard = nullcontext() if provider.thread_safe else state.model.call_lock
    with guard, state.stores.checkout() as db:
        return ask(body.question, db, provider, options, progress)


def run_ask_sources(
    state: ServerState,
    key: ApiKey,
    question: str,
    sources: Sequence[Source],
    model: Model | None = None,
) -> tuple[Answer, TraceRecord | None]:
    """One answer from ``sources`` given in the request (``pipeline.ask_sources``, with
    ``served_options``) by ``model`` (the served one by default; ``ServerState.models``),
    traced under the key, in the ask pool; and its trace: what an endpoint answering from the
    documents it is sent runs (``server.messages``)."""
    model = model or state.model
    provider = model.get()
    guard: AbstractContextManager[Any] = nullcontext() if provider.thread_safe else model.call_lock
    if model is not state.model and state.checker is not None:
        # the answer check may judge on the served model (``--answer-check both``): its calls
        # are serialised too, the served model's lock taken first (one order: no deadlock)
        served = state.model
        own = guard
        guard = ExitStack()
        if not served.get().thread_safe:
            guard.enter_context(served.call_lock)
        guard.enter_context(own)
    with guard, state.stores.checkout() as db:
        answer = ask_sources(question, sources, provider, served_options(state, key), db)
        trace = db.get_trace(answer.trace_id) if answer.trace_id else None
    return answer, trace


def served_options(
    state: ServerState,
    key: ApiKey,
    *,
    corpora: Sequence[str] | None = None,
    format: str = "json",
    limit: int = 20,
    budget: int = DEFAULT_BUDGET_CHARS,
) -> AskOptions:
    """The options every answer of this service runs under (the service's support tier,
    answer check, fallback, reranker, work budget), read as the key (its groups, traced as
    its owner), with what the request chose."""
    return AskOptions(
        corpora=corpora,
        groups=key.groups,
        format=format,
        limit=limit,
        budget_chars=budget,
        owner=key.id,
        work=state.config.budget,
        entailment=state.tier.get() if state.tier is not None else None,
        answer_check=state.checker.get().answers if state.checker is not None else None,
        fallback=_fallback(state),
        rerank=state.reranker.get() if state.reranker is not None else None,
        named_first=state.config.named_first,
    )


def _fallback(state: ServerState) -> Provider | None:
    """``ServerConfig.fallback``: ``extractive`` (or True), the sentences the answer check
    scores as answering when the service runs one, else those covering the question best;
    ``covering``, those covering the question best; ``off`` (or False): none."""
    kind = state.config.fallback
    kind = {True: "extractive", False: "off"}[kind] if isinstance(kind, bool) else kind
    if kind == "off":
        return None
    if state.checker is None:  # (a config without a check: the covering extract, as before)
        return ExtractiveProvider()
    return make_fallback(kind, state.checker.get())


def stream_answer(state: ServerState, body: AskIn, key: ApiKey) -> StreamingResponse:
    """Start the answer (its place is already taken) and stream its events as they come."""
    # The work starts now, whether or not the client reads the stream: it always gives its
    # place back and writes its trace, even when the client goes away.
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[_Event] = asyncio.Queue()

    def put(item: _Event) -> None:
        # RuntimeError: the event loop is gone; nobody listens, and the answer goes on.
        with suppress(RuntimeError):
            loop.call_soon_threadsafe(events.put_nowait, item)

    state.start(_answer_into, state, body, key, put)
    return StreamingResponse(
        _stream(events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _answer_into(state: ServerState, body: AskIn, key: ApiKey, put: _Put) -> None:
    """Answer in the ask pool, putting progress, then the answer or an error, then None."""

    def progress(stage: str, data: dict[str, Any]) -> None:
        if stage == "claims":  # verified, and certain to lead the answer: sent as they pass
            put(("claims", data))
        else:
            put(("progress", {"stage": stage, **data}))

    try:
        put(("answer", run_ask(state, body, key, progress)))
    except Exception as exc:  # the response has started: the error goes in the stream
        put(("error", reply_for(exc).event()))
    finally:
        put(None)
        state.release()


async def _stream(events: asyncio.Queue[_Event]) -> AsyncIterator[str]:
    yield _sse("progress", {"stage": "searching"})
    sent = 0  # claims already streamed: the answer's first ones
    while (item := await events.get()) is not None:
        kind, payload = item
        if kind == "claims":
            numbered = {c["number"]: c for c in payload["cards"]}
            for claim in payload["claims"]:
                yield _claim_event(sent, claim, [numbered[n] for n in claim["cards"]], None)
                sent += 1
        elif kind == "answer":
            for index, claim in enumerate(payload.claims[sent:], sent):
                cards = [c.to_dict() for c in payload.cards if c.number in claim.cards]
                yield _claim_event(index, claim.to_dict(), cards, payload.trace_id)
            yield _sse("answer", payload.to_dict())
        else:
            yield _sse(kind, payload)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _claim_event(
    index: int, claim: dict[str, Any], cards: list[dict[str, Any]], trace_id: str | None
) -> str:
    """One verified claim: ``trace_id`` is None for one streamed before the repair turn (the
    trace is written with the answer, which follows)."""
    return _sse(
        "claim",
        {
            "index": index,
            "text": claim["text"],
            "cards": cards,
            "cites": claim["cites"],
            "verified": True,
            "trace_id": trace_id,
        },
    )


def tokens(answer: Answer) -> dict[str, int]:
    """The tokens the answering model reported over its attempts (the repair turn's too), as
    Anthropic names them; 0 where it reports none (the extractive provider)."""
    counts = answer.counts
    return {
        "input_tokens": counts.get("input_tokens", 0),
        "output_tokens": counts.get("output_tokens", 0),
    }
