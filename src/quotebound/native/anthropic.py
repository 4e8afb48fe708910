"""Anthropic's Messages API: text blocks, the cited ones carrying ``citations``
(``char_location``, ``page_location``, ``content_block_location``), or the events of its
stream."""

from __future__ import annotations

from typing import Any

from ..sources import WorkingSet
from .base import (
    NativeAnswer,
    NativeCitation,
    array,
    bad,
    event_type,
    nonnegative,
    not_an_id,
    obj,
    string,
)
from .placement import Placed, answer_claims

_DOCUMENT_LOCATIONS = frozenset({"char_location", "page_location", "content_block_location"})


def claims_response(data: dict[str, Any]) -> bool:
    """Whether a response object is this vendor's."""
    return data.get("type") == "message" and isinstance(data.get("content"), list)


def claims_stream(first: dict[str, Any]) -> bool:
    """Whether a stream whose first event is ``first`` is this vendor's."""
    return "candidates" not in first and event_type(first).startswith(("message_", "content_block"))


def read(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _anthropic_stream(data)
    data = obj(data, "the response")
    content = array(data.get("content"), 'the response\'s "content"')
    blocks: list[tuple[str, list[Any], str]] = []
    for i, block in enumerate(content):
        where = f"content[{i}]"
        block = obj(block, where)
        if not isinstance(block.get("type"), str):
            raise bad(f"{where} is not a typed block")
        if block["type"] != "text":
            continue  # thinking, tool use: not part of the answer
        text = string(block.get("text"), f"{where}.text")
        blocks.append((text, array(block.get("citations"), f"{where}.citations", True), where))
    return anthropic_claims(ws, blocks)


def anthropic_claims(ws: WorkingSet, blocks: list[tuple[str, list[Any], str]]) -> NativeAnswer:
    """Text blocks (text, citations, where) as claims: the blocks' text is the answer, cut into
    its sentences (``answer_claims``); a cited block's citations are placed on the sentences
    it covers. A cited block is often a piece of a sentence ("the grass is green" inside
    "According to the document, the grass is green and the sky is blue."): the claim is the
    sentence, the piece its ``answer_span``."""
    placed: list[Placed] = []
    texts: list[str] = []
    offset = 0
    for text, citations, where in blocks:
        if texts and texts[-1].rstrip(_CLOSERS)[-1:] in _STOPS and text[:1].strip():
            texts.append(" ")  # a block ends a sentence, the next starts one: keep them apart
            offset += 1
        if citations:
            lead = len(text) - len(text.lstrip())
            start, end = offset + lead, offset + len(text.rstrip())
            cites = [
                _anthropic_citation(ws, c, f"{where}.citations[{j}]", (start, end))
                for j, c in enumerate(citations)
            ]
            placed.append((start, max(start, end), cites))
        texts.append(text)
        offset += len(text)
    whole = "".join(texts)
    return NativeAnswer(whole, answer_claims(whole, placed))


_STOPS = (".", "!", "?")
_CLOSERS = "\"')]\u2019\u201d"


def _anthropic_citation(
    ws: WorkingSet, item: Any, where: str, piece: tuple[int, int]
) -> NativeCitation:
    item = obj(item, where)
    kind = item.get("type")
    quote = string(item.get("cited_text"), f"{where}.cited_text")
    native: dict[str, Any] = {
        "type": kind if isinstance(kind, str) else None,
        "answer_span": list(piece),
    }
    index = item.get("document_index")
    if kind not in _DOCUMENT_LOCATIONS:  # a search result, a web page: not a source sent
        label = kind if isinstance(kind, str) else "citation"
        return NativeCitation(not_an_id(ws, label), None, quote, native)
    index = nonnegative(index, f"{where}.document_index")
    if kind == "char_location":
        start = nonnegative(item.get("start_char_index"), f"{where}.start_char_index")
        end = nonnegative(item.get("end_char_index"), f"{where}.end_char_index")
        native["offsets"] = [start, end]
    elif kind == "page_location":
        start = nonnegative(item.get("start_page_number"), f"{where}.start_page_number")
        end = nonnegative(item.get("end_page_number"), f"{where}.end_page_number")
        native["pages"] = [start, end]  # [first, end): the end page is not included
    else:
        start = nonnegative(item.get("start_block_index"), f"{where}.start_block_index")
        end = nonnegative(item.get("end_block_index"), f"{where}.end_block_index")
        native["blocks"] = [start, end]
    if index >= len(ws):
        return NativeCitation(not_an_id(ws, f"doc_{index}"), None, quote, native)
    sid = ws.ids[index]
    return NativeCitation(sid, sid, quote, native)


def _anthropic_stream(events: list[Any]) -> dict[str, Any]:
    """The message a Messages API stream builds: ``message_start``, then per block
    ``content_block_start``, ``content_block_delta`` (``text_delta``, ``citations_delta``),
    ``content_block_stop``; ``message_delta``; ``message_stop``."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    stopped = False
    for n, event in enumerate(events):
        where = f"event {n}"
        event = obj(event, where)
        kind = event.get("type")
        if kind == "message_start":
            message = dict(obj(event.get("message"), f"{where}.message"))
        elif kind == "content_block_start":
            index = nonnegative(event.get("index"), f"{where}.index")
            start = obj(event.get("content_block"), f"{where}.content_block")
            cites = array(start.get("citations"), f"{where}.content_block.citations", True)
            blocks[index] = {**start, "citations": list(cites)}
            if start.get("type") == "text":
                blocks[index]["text"] = string(start.get("text", ""), f"{where}.content_block.text")
        elif kind == "content_block_delta":
            index = nonnegative(event.get("index"), f"{where}.index")
            if index not in blocks:
                raise bad(f"{where}: a delta for block {index}, which was never started")
            delta = obj(event.get("delta"), f"{where}.delta")
            kind = delta.get("type")
            if kind in ("text_delta", "citations_delta") and blocks[index].get("type") != "text":
                raise bad(f"{where}: a {kind} for block {index}, which is not a text block")
            if delta.get("type") == "text_delta":
                blocks[index]["text"] += string(delta.get("text"), f"{where}.delta.text")
            elif delta.get("type") == "citations_delta":
                blocks[index]["citations"].append(
                    obj(delta.get("citation"), f"{where}.delta.citation")
                )
        elif kind == "message_delta":
            change = event.get("delta")
            if message is not None and isinstance(change, dict) and "stop_reason" in change:
                message["stop_reason"] = change["stop_reason"]
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            error = event.get("error")
            detail = error.get("message") if isinstance(error, dict) else None
            raise bad(f"{where}: the stream reported an error ({detail or 'no message'})")
    if message is None:
        raise bad("the stream has no message_start event")
    if not stopped:
        raise bad("the stream ended before message_stop: the answer is partial")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message
