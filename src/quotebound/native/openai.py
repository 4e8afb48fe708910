"""OpenAI's Responses API (``output_text`` annotations) and Chat Completions
(``message.annotations``): ``url_citation`` and ``file_citation``, or the events of a
Responses stream."""

from __future__ import annotations

import re
from typing import Any

from ..sources import WorkingSet
from .base import (
    NativeAnswer,
    NativeCitation,
    array,
    bad,
    by_file,
    by_url,
    event_type,
    nonnegative,
    obj,
    resolved,
    string,
)
from .placement import Placed, answer_claims, in_answer


def claims_response(data: dict[str, Any]) -> bool:
    """Whether a response object is this vendor's."""
    responses = data.get("object") == "response" or isinstance(data.get("output"), list)
    return responses or isinstance(data.get("choices"), list)  # Responses, Chat Completions


def claims_stream(first: dict[str, Any]) -> bool:
    """Whether a stream whose first event is ``first`` is this vendor's."""
    return "candidates" not in first and event_type(first).startswith("response.")


def read(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _openai_stream(data)
    data = obj(data, "the response")
    if isinstance(data.get("choices"), list):
        return _openai_chat(ws, data)
    output = array(data.get("output"), 'the response\'s "output"')
    texts: list[str] = []
    placed: list[Placed] = []
    links: list[Placed] = []
    read: dict[tuple[int, int], bool] = {}  # each span: whether it is an inline link
    offset = 0
    for i, item in enumerate(output):
        item = obj(item, f"output[{i}]")
        if item.get("type") != "message":
            continue  # tool calls (file_search_call, web_search_call), reasoning
        for j, part in enumerate(array(item.get("content"), f"output[{i}].content")):
            where = f"output[{i}].content[{j}]"
            part = obj(part, where)
            if part.get("type") != "output_text":
                continue  # a refusal part is no answer
            text = string(part.get("text"), f"{where}.text")
            for k, note in enumerate(array(part.get("annotations"), f"{where}.annotations", True)):
                _place(ws, note, text, f"{where}.annotations[{k}]", offset, placed, links, read)
            texts.append(text)
            offset += len(text) + 1
    whole = "\n".join(texts)
    return NativeAnswer(whole, answer_claims(whole, placed, links))


def _openai_chat(ws: WorkingSet, data: dict[str, Any]) -> NativeAnswer:
    choices = data["choices"]
    if not choices:
        raise bad("the response has no choices")
    message = obj(obj(choices[0], "choices[0]").get("message"), "choices[0].message")
    content = message.get("content")
    text = "" if content is None else string(content, "choices[0].message.content")
    placed: list[Placed] = []
    links: list[Placed] = []
    read: dict[tuple[int, int], bool] = {}  # each span: whether it is an inline link
    notes = array(message.get("annotations"), "choices[0].message.annotations", True)
    for k, note in enumerate(notes):
        where = f"choices[0].message.annotations[{k}]"
        note = obj(note, where)
        if note.get("type") == "url_citation" and isinstance(note.get("url_citation"), dict):
            note = {"type": "url_citation", **note["url_citation"]}
        _place(ws, note, text, where, 0, placed, links, read)
    return NativeAnswer(text, answer_claims(text, placed, links))


def _place(
    ws: WorkingSet,
    note: Any,
    text: str,
    where: str,
    offset: int,
    placed: list[Placed],
    links: list[Placed],
    read: dict[tuple[int, int], bool],
) -> None:
    """One annotation of an answer part starting at ``offset``, added to ``links`` when its
    span is an inline link closing what it supports (``_is_link``), else to ``placed``."""
    got = _openai_annotation(ws, note, text, where)
    if got is None:
        return
    a, b, cites = got
    span = (offset + a, offset + b)
    if span not in read:  # each span read once, however often it is cited
        read[span] = a < b and _is_link(text[a:b])
    (links if read[span] else placed).append((*span, cites))


# An inline link as OpenAI's web search writes it after what it supports: " ([ft.com](url))",
# "[Title](url)"
_LINK = re.compile(r"\s*\(?\s*\[[^\[\]\n]*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)\s*\)?[\s.,;]*")


def _is_link(span: str) -> bool:
    return _LINK.fullmatch(span) is not None


def _openai_annotation(
    ws: WorkingSet, note: Any, text: str, where: str
) -> tuple[int, int, list[NativeCitation]] | None:
    note = obj(note, where)
    kind = note.get("type")
    if kind == "url_citation":
        url = string(note.get("url"), f"{where}.url")
        start = nonnegative(note.get("start_index"), f"{where}.start_index")
        end = nonnegative(note.get("end_index"), f"{where}.end_index")
        in_answer(text, start, end, where)
        native = {"type": kind, "url": url, "answer_span": [start, end]}
        if isinstance(note.get("title"), str):
            native["title"] = note["title"]
        return start, end, resolved(ws, by_url(ws, url), url, native)
    if kind in ("file_citation", "container_file_citation"):
        file_id = note.get("file_id")
        filename = note.get("filename")
        if not isinstance(file_id, str) and not isinstance(filename, str):
            raise bad(f"{where} names no file_id or filename")
        if kind == "container_file_citation":
            start = nonnegative(note.get("start_index"), f"{where}.start_index")
            end = nonnegative(note.get("end_index"), f"{where}.end_index")
        else:
            start = end = nonnegative(note.get("index"), f"{where}.index")
        in_answer(text, start, end, where)
        native = {
            "type": kind,
            "file_id": file_id,
            "filename": filename,
            "answer_span": [start, end],
        }
        label = filename if isinstance(filename, str) else str(file_id)
        return start, end, resolved(ws, by_file(ws, file_id, filename), label, native)
    return None  # file_path and other annotations cite nothing


def _openai_stream(events: list[Any]) -> dict[str, Any]:
    """The response a Responses API stream ends with (``response.completed``)."""
    for n, event in enumerate(events):
        event = obj(event, f"event {n}")
        if event.get("type") == "response.completed":
            return obj(event.get("response"), f"event {n}.response")
        if event.get("type") in ("response.failed", "error"):
            raise bad(f"event {n}: the stream reported {event.get('type')}")
    raise bad("the stream ended before response.completed: the answer is partial")
