"""Cohere's Chat API: v2 ``message.citations``, v1 ``citations`` with ``documents``, or
the events of a v2 stream."""

from __future__ import annotations

import re
from typing import Any

from ..sources import Source, WorkingSet
from .base import (
    NativeAnswer,
    array,
    bad,
    event_type,
    nonnegative,
    obj,
    resolved,
    string,
)
from .placement import Placed, answer_claims, in_answer

_INDEX = re.compile(r"^doc[:_](\d{1,6})$")


_COHERE_EVENTS = frozenset({"message-start", "content-start", "content-delta", "citation-start"})


def claims_response(data: dict[str, Any]) -> bool:
    """Whether a response object is this vendor's."""
    message = data.get("message")
    if isinstance(message, dict) and message.get("role") == "assistant" and "type" not in data:
        return True  # v2 (an Anthropic message_start event has "type")
    citations = data.get("citations")
    v1 = isinstance(citations, list) and all(
        isinstance(c, dict) and "document_ids" in c for c in citations
    )
    return v1 and isinstance(data.get("text"), str)


def claims_stream(first: dict[str, Any]) -> bool:
    """Whether a stream whose first event is ``first`` is this vendor's."""
    return "candidates" not in first and event_type(first) in _COHERE_EVENTS


def read(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _cohere_stream(data)
    data = obj(data, "the response")
    if isinstance(data.get("message"), dict):  # v2
        message = data["message"]
        parts = array(message.get("content"), "message.content", True)
        text = "".join(
            string(obj(p, f"message.content[{i}]").get("text"), f"message.content[{i}].text")
            for i, p in enumerate(parts)
            if isinstance(p, dict) and p.get("type", "text") == "text"
        )
        citations = array(message.get("citations"), "message.citations", True)
        prefix = "message.citations"
    else:  # v1
        text = string(data.get("text"), "text")
        citations = array(data.get("citations"), "citations", True)
        prefix = "citations"
    placed: list[Placed] = []
    for k, item in enumerate(citations):
        where = f"{prefix}[{k}]"
        item = obj(item, where)
        start = nonnegative(item.get("start"), f"{where}.start")
        end = nonnegative(item.get("end"), f"{where}.end")
        in_answer(text, start, end, where)
        ids = _cohere_ids(item, where)
        native: dict[str, Any] = {"type": "cohere", "answer_span": [start, end]}
        cites = [c for i in ids for c in resolved(ws, _cohere_source(ws, i), i, dict(native))]
        placed.append((start, end, cites))
    return NativeAnswer(text, answer_claims(text, placed))


def _cohere_ids(item: dict[str, Any], where: str) -> list[str]:
    if "sources" in item:  # v2: [{"type": "document", "id", "document": {...}}]
        ids = []
        for j, src in enumerate(array(item["sources"], f"{where}.sources")):
            src = obj(src, f"{where}.sources[{j}]")
            ident = src.get("id")
            if not isinstance(ident, str) and isinstance(src.get("document"), dict):
                ident = src["document"].get("id")
            ids.append(string(ident, f"{where}.sources[{j}].id"))
        return ids
    return [
        string(x, f"{where}.document_ids[{j}]")
        for j, x in enumerate(array(item.get("document_ids"), f"{where}.document_ids"))
    ]


def _cohere_source(ws: WorkingSet, ident: str) -> list[Source]:
    src = ws.get(ident)
    if src is not None:
        return [src]
    m = _INDEX.match(ident)
    if m is not None and int(m.group(1)) < len(ws):
        return [ws.sources[int(m.group(1))]]
    return []


def _cohere_stream(events: list[Any]) -> dict[str, Any]:
    """The v2 message a chat stream builds: ``content-delta`` texts, ``citation-start``
    citations, ending with ``message-end``."""
    text: list[str] = []
    citations: list[Any] = []
    ended = False
    for n, event in enumerate(events):
        event = obj(event, f"event {n}")
        kind = event.get("type")
        message = (
            (event.get("delta") or {}).get("message")
            if isinstance(event.get("delta"), dict)
            else None
        )
        if kind == "content-delta" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, dict):
                text.append(
                    string(content.get("text", ""), f"event {n}.delta.message.content.text")
                )
        elif kind == "citation-start" and isinstance(message, dict):
            citations.append(obj(message.get("citations"), f"event {n}.delta.message.citations"))
        elif kind == "message-end":
            ended = True
    if not ended:
        raise bad("the stream ended before message-end: the answer is partial")
    return {
        "message": {"content": [{"type": "text", "text": "".join(text)}], "citations": citations}
    }
