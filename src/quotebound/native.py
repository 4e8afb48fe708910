"""Providers' own citations -> claims, verified like any other output.

Seed 004: "if you use one, keep the validator anyway, because your acceptance rules belong in
your code." Each vendor's response (as its HTTP API returns it, or the events of its stream)
is read into the one claims model; nothing it says is trusted:

- **anthropic** (Messages API): each text block with ``citations`` is a claim; a
  ``char_location``, ``page_location`` or ``content_block_location`` citation cites the
  ``document_index``-th source sent, its ``cited_text`` the quote. The provider's character
  offsets and page range are kept (``native``) and compared with what the verifier finds.
- **openai** (Responses API ``output_text`` annotations; Chat Completions
  ``message.annotations``): ``url_citation`` cites the source with that URL,
  ``file_citation`` the sources of that file (by id, file name or title). They carry a place
  in the answer and no quote.
- **cohere** (Chat API v2 ``message.citations``; v1 ``citations`` with ``documents``): each
  citation's document ids, resolved as ids of the set (``doc:N``/``doc_N`` is the N-th source,
  0-based, as Cohere numbers documents passed without ids). A place in the answer, no quote.
- **gemini** (``groundingMetadata``: ``groundingSupports`` and ``groundingChunks``): each
  support's chunks, resolved by URI, title or exact text. Segment offsets are UTF-8 bytes.

The answer is cut into sentences (the one splitter); each citation attaches to the sentences
its answer span overlaps (a point, ``file_citation.index``, to the sentence it ends); a
sentence no citation covers is a claim with none (``no_citation``) unless it is only a
connective ("According to the policy,"). A citation whose source was not sent gets a label no
ref can resolve (``unknown_source``), never a guess. Citations without a quote are checked as
inline markers are: the whole cited source is their evidence, and they carry no quote.

Malformed input (a field of the wrong type, an index outside the answer, a stream cut off
before its end) is ``Parsed(error=...)`` naming the field: the verdict is ``unparseable``.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from .sources import Source, WorkingSet
from .text.layout import Layout, Unit, layout

Vendor = Literal["anthropic", "openai", "cohere", "gemini"]
VENDORS: tuple[Vendor, ...] = get_args(Vendor)
_ANTHROPIC_DOCUMENT = frozenset({"char_location", "page_location", "content_block_location"})
_COHERE_INDEX = re.compile(r"^doc[:_](\d{1,6})$")


class NativeError(ValueError):
    """A vendor response of the wrong shape; the message names the field."""


@dataclass(slots=True)
class NativeCitation:
    ref: str  # as the provider named it (an id of the set, or a label that is none)
    source_id: str | None
    quote: str | None
    native: dict[str, Any]  # what the provider said: kind, offsets, pages, answer span


@dataclass(slots=True)
class NativeClaim:
    text: str
    citations: list[NativeCitation] = field(default_factory=list)
    context: str | None = None  # the paragraph a link citation on it was given for


@dataclass(slots=True)
class NativeAnswer:
    text: str  # the whole answer text
    claims: list[NativeClaim]


def detect(data: Any) -> Vendor | None:
    """The vendor whose response shape ``data`` has (a response object, or a stream read into
    a list of events by ``load``), or None: the first of ``READERS``, in their order, that
    claims it."""
    if isinstance(data, list):
        if not (data and all(isinstance(x, dict) for x in data)):
            return None
        first = data[0]
        return next((r.vendor for r in READERS if r.claims_stream(first)), None)
    if not isinstance(data, dict):
        return None
    return next((r.vendor for r in READERS if r.claims_response(data)), None)


def _kind(event: dict[str, Any]) -> str:
    kind = event.get("type")
    return kind if isinstance(kind, str) else ""


def _anthropic_response(data: dict[str, Any]) -> bool:
    return data.get("type") == "message" and isinstance(data.get("content"), list)


def _anthropic_event(first: dict[str, Any]) -> bool:
    return "candidates" not in first and _kind(first).startswith(("message_", "content_block"))


def _openai_response(data: dict[str, Any]) -> bool:
    responses = data.get("object") == "response" or isinstance(data.get("output"), list)
    return responses or isinstance(data.get("choices"), list)  # Responses, Chat Completions


def _openai_event(first: dict[str, Any]) -> bool:
    return "candidates" not in first and _kind(first).startswith("response.")


def _gemini_response(data: dict[str, Any]) -> bool:
    return isinstance(data.get("candidates"), list)


def _gemini_event(first: dict[str, Any]) -> bool:
    return "candidates" in first


_COHERE_EVENTS = frozenset({"message-start", "content-start", "content-delta", "citation-start"})


def _cohere_response(data: dict[str, Any]) -> bool:
    message = data.get("message")
    if isinstance(message, dict) and message.get("role") == "assistant" and "type" not in data:
        return True  # v2 (an Anthropic message_start event has "type")
    citations = data.get("citations")
    v1 = isinstance(citations, list) and all(
        isinstance(c, dict) and "document_ids" in c for c in citations
    )
    return v1 and isinstance(data.get("text"), str)


def _cohere_event(first: dict[str, Any]) -> bool:
    return "candidates" not in first and _kind(first) in _COHERE_EVENTS


def load(raw: str) -> Any:
    """A response as JSON, or a stream: server-sent events (``data:`` lines) or one JSON
    object per line, read into a list of events."""
    text = raw.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    events: list[Any] = []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise NativeError("the response is empty")
    for n, line in enumerate(lines, 1):
        if line.startswith(("event:", "id:", "retry:", ":")):
            continue
        body = line[5:].strip() if line.startswith("data:") else line
        if body == "[DONE]":
            continue
        try:
            events.append(json.loads(body))
        except json.JSONDecodeError as exc:
            raise NativeError(f"line {n} of the stream is not JSON ({exc.msg})") from None
    if not events:
        raise NativeError("the stream holds no events")
    return events


def read(ws: WorkingSet, data: Any, vendor: str) -> NativeAnswer:
    """A vendor's response (or stream events) as claims; ``NativeError`` if malformed."""
    reader = _BY_VENDOR.get(vendor)
    if reader is None:
        raise NativeError(f"unknown vendor {vendor!r}; choose one of {', '.join(VENDORS)}")
    return reader.read(ws, data)


# -- shared ------------------------------------------------------------------------------------


def _bad(message: str) -> NativeError:
    return NativeError(message)


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{where} is not an object")
    return value


def _list(value: Any, where: str, missing_ok: bool = False) -> list[Any]:
    if value is None and missing_ok:
        return []
    if not isinstance(value, list):
        raise _bad(f"{where} is not a list")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _bad(f"{where} is not a string")
    return value


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(f"{where} is not a non-negative integer")
    return value


def not_an_id(ws: WorkingSet, label: str) -> str:
    """A label no ref resolution can map to a source of the set (not an id, not a number)."""
    label = label.strip() or "citation"
    while label in ws or label.isdigit():
        label += "?"
    return label


CONNECTIVE_WORDS = 6  # uncited text shorter than this, with no digit, is glue between claims
MAX_PLACEMENTS = 50_000  # citations placed on sentences, in all: past it, a response is hostile


def states_something(text: str) -> bool:
    """Whether uncited text is a statement (a claim the verifier must see) rather than the glue
    around cited ones: punctuation, or a connective such as "According to the policy," left
    over where a sentence ends (fewer than ``CONNECTIVE_WORDS`` words, no digit, not ending a
    sentence). A number is always a claim, and so is a sentence ("Aspirin cures cancer.")."""
    if any(ch.isdigit() for ch in text):
        return True
    words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
    if not words:
        return False
    return len(words) >= CONNECTIVE_WORDS or text.rstrip(" \"'\u201d\u2019)").endswith(
        (".", "!", "?")
    )


Placed = tuple[int, int, list[NativeCitation]]  # an answer span and the citations for it
_FACT = re.compile(r"[\d\"\u201c\u201d]")  # a digit or a quotation mark: a fact to check
_EDGE_MARKUP = " \t*_#:"
_MARKDOWN_LINK = re.compile(r"!?\[[^\[\]\n]*\]\([^()\s]*\)")


def answer_claims(
    text: str, placed: list[Placed], links: list[Placed] | None = None
) -> list[NativeClaim]:
    """The answer's statements as claims (``text.layout``: one a sentence, list marks and
    emphasis around it left out), each with the citations placed on it:

    - a span citation (``placed``) on each sentence its answer span overlaps; a point
      ``(p, p)`` (``file_citation.index``) on the sentence ending at or just before ``p``;
    - a link citation (``links``: OpenAI's ``url_citation`` over an inline link such as
      `` ([ft.com](https://...))``) on the sentences of the paragraph or list item it closes,
      back to the previous link in it or the paragraph's start; the link is not claim text,
      and the relevance rule reads the claim with that paragraph (``NativeClaim.context``).

    Structure is not a claim: a heading, a lead-in ending with a colon, a list of links,
    unless it states a fact (a digit or quoted words); then it is a claim with the citations
    of the statements it introduces (``Layout.scope``), checked like any other. A statement no
    citation covers is a claim with none, unless it is glue (``states_something``)."""
    masked = text
    if links:  # the same link given twice is one (its citations joined), masked once
        merged: dict[tuple[int, int], list[NativeCitation]] = {}
        for a, b, citations in links:
            merged.setdefault((a, b), []).extend(citations)
        links = [(a, b, cites) for (a, b), cites in merged.items()]
        chars = list(text)
        for a, b, _ in links:
            chars[a:b] = " " * (b - a)
        masked = "".join(chars)
    shape = layout(masked)
    regions = _link_regions(shape, links or [])
    for a, b, citations in placed:
        if a < b:
            for c in citations:  # the cited piece, what a card marks inside the claim
                c.native.setdefault("piece", " ".join(text[a:b].split()))
    units = shape.units
    starts = [u.start for u in units]
    on: list[list[NativeCitation]] = [[] for _ in units]
    said: list[list[tuple[int, int]]] = [[] for _ in units]
    placements = 0
    for a, b, citations, link in [*((*p, False) for p in placed), *((*r, True) for r in regions)]:
        for i in _units_at(units, starts, a, b):
            on[i].extend(citations)
            if link:
                said[i].append((a, b))
            placements += len(citations)
        if placements > MAX_PLACEMENTS:  # hostile: every citation over every sentence
            raise _bad(
                f"the response places more than {MAX_PLACEMENTS:,} citations on its sentences: "
                "split the answer"
            )
    keys: dict[int, tuple[str, str | None, str | None, str]] = {}
    cited = [_unique(cites, keys) for cites in on]
    contexts = [" ".join(" ".join(masked[a:b] for a, b in s).split()) or None for s in said]
    claims: list[NativeClaim] = []
    for i, unit in enumerate(units):
        words = " ".join(masked[unit.start : unit.end].split())
        if not any(ch.isalnum() for ch in _MARKDOWN_LINK.sub("", words)):
            continue  # links alone (a list of sources) or punctuation: not a statement
        if unit.kind == "structure":
            words = words.strip(_EDGE_MARKUP)
            if _FACT.search(words) is not None:  # a fact in a heading is checked all the same
                below = [*cited[i], *(c for j in shape.scope(i) for c in cited[j])]
                claims.append(NativeClaim(words, _unique(below)))
        elif cited[i] or states_something(words):
            claims.append(NativeClaim(words, cited[i], contexts[i]))
    return claims


def _units_at(units: tuple[Unit, ...], starts: list[int], a: int, b: int) -> range:
    """The units an answer span ``[a, b)`` overlaps; for a point (``a == b``), the unit it
    ends, the last one starting at or before it. Found by bisection: linear work in all."""
    first = bisect_right(starts, a) - 1
    if a == b:
        return range(first, first + 1) if first >= 0 else range(0)
    if first < 0 or units[first].end <= a:
        first += 1
    last = first
    while last < len(units) and units[last].start < b:
        last += 1
    return range(first, last)


def _link_regions(shape: Layout, links: list[Placed]) -> list[Placed]:
    """What each link citation was given for: from the start of the block it closes (or the
    end of the link before it in that block) to the link."""
    regions: list[Placed] = []
    previous_end = -1
    for a, b, cites in sorted(links, key=lambda x: x[0]):
        block = shape.block_at(a)
        if block is not None:
            start = shape.blocks[block][0]
            if start < previous_end <= a:
                start = previous_end  # the link before it in the same block ends its claims
            regions.append((start, a, cites))
        previous_end = b
    return regions


_Key = tuple[str, str | None, str | None, str]


def _unique(
    cites: list[NativeCitation], keys: dict[int, _Key] | None = None
) -> list[NativeCitation]:
    """``cites`` with a citation equal to one before it (the same annotation given twice) left
    out, in linear time; ``keys`` keeps each citation's key from one call to the next."""
    keys = {} if keys is None else keys
    seen: set[_Key] = set()
    out: list[NativeCitation] = []
    for c in cites:
        key = keys.get(id(c))
        if key is None:
            key = keys[id(c)] = (c.ref, c.source_id, c.quote, repr(sorted(c.native.items())))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _in_answer(text: str, start: int, end: int, where: str) -> None:
    if not 0 <= start <= end <= len(text):
        raise _bad(f"{where}: [{start}, {end}) is outside the answer ({len(text)} characters)")


# -- anthropic -----------------------------------------------------------------------------------


def _anthropic(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _anthropic_stream(data)
    data = _obj(data, "the response")
    content = _list(data.get("content"), 'the response\'s "content"')
    blocks: list[tuple[str, list[Any], str]] = []
    for i, block in enumerate(content):
        where = f"content[{i}]"
        block = _obj(block, where)
        if not isinstance(block.get("type"), str):
            raise _bad(f"{where} is not a typed block")
        if block["type"] != "text":
            continue  # thinking, tool use: not part of the answer
        text = _str(block.get("text"), f"{where}.text")
        blocks.append((text, _list(block.get("citations"), f"{where}.citations", True), where))
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
    item = _obj(item, where)
    kind = item.get("type")
    quote = _str(item.get("cited_text"), f"{where}.cited_text")
    native: dict[str, Any] = {
        "type": kind if isinstance(kind, str) else None,
        "answer_span": list(piece),
    }
    index = item.get("document_index")
    if kind not in _ANTHROPIC_DOCUMENT:  # a search result, a web page: not a source sent
        label = kind if isinstance(kind, str) else "citation"
        return NativeCitation(not_an_id(ws, label), None, quote, native)
    index = _int(index, f"{where}.document_index")
    if kind == "char_location":
        start = _int(item.get("start_char_index"), f"{where}.start_char_index")
        end = _int(item.get("end_char_index"), f"{where}.end_char_index")
        native["offsets"] = [start, end]
    elif kind == "page_location":
        start = _int(item.get("start_page_number"), f"{where}.start_page_number")
        end = _int(item.get("end_page_number"), f"{where}.end_page_number")
        native["pages"] = [start, end]  # [first, end): the end page is not included
    else:
        start = _int(item.get("start_block_index"), f"{where}.start_block_index")
        end = _int(item.get("end_block_index"), f"{where}.end_block_index")
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
        event = _obj(event, where)
        kind = event.get("type")
        if kind == "message_start":
            message = dict(_obj(event.get("message"), f"{where}.message"))
        elif kind == "content_block_start":
            index = _int(event.get("index"), f"{where}.index")
            start = _obj(event.get("content_block"), f"{where}.content_block")
            cites = _list(start.get("citations"), f"{where}.content_block.citations", True)
            blocks[index] = {**start, "citations": list(cites)}
            if start.get("type") == "text":
                blocks[index]["text"] = _str(start.get("text", ""), f"{where}.content_block.text")
        elif kind == "content_block_delta":
            index = _int(event.get("index"), f"{where}.index")
            if index not in blocks:
                raise _bad(f"{where}: a delta for block {index}, which was never started")
            delta = _obj(event.get("delta"), f"{where}.delta")
            kind = delta.get("type")
            if kind in ("text_delta", "citations_delta") and blocks[index].get("type") != "text":
                raise _bad(f"{where}: a {kind} for block {index}, which is not a text block")
            if delta.get("type") == "text_delta":
                blocks[index]["text"] += _str(delta.get("text"), f"{where}.delta.text")
            elif delta.get("type") == "citations_delta":
                blocks[index]["citations"].append(
                    _obj(delta.get("citation"), f"{where}.delta.citation")
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
            raise _bad(f"{where}: the stream reported an error ({detail or 'no message'})")
    if message is None:
        raise _bad("the stream has no message_start event")
    if not stopped:
        raise _bad("the stream ended before message_stop: the answer is partial")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


# -- openai ----------------------------------------------------------------------------------------


def _openai(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _openai_stream(data)
    data = _obj(data, "the response")
    if isinstance(data.get("choices"), list):
        return _openai_chat(ws, data)
    output = _list(data.get("output"), 'the response\'s "output"')
    texts: list[str] = []
    placed: list[Placed] = []
    links: list[Placed] = []
    read: dict[tuple[int, int], bool] = {}  # each span: whether it is an inline link
    offset = 0
    for i, item in enumerate(output):
        item = _obj(item, f"output[{i}]")
        if item.get("type") != "message":
            continue  # tool calls (file_search_call, web_search_call), reasoning
        for j, part in enumerate(_list(item.get("content"), f"output[{i}].content")):
            where = f"output[{i}].content[{j}]"
            part = _obj(part, where)
            if part.get("type") != "output_text":
                continue  # a refusal part is no answer
            text = _str(part.get("text"), f"{where}.text")
            for k, note in enumerate(_list(part.get("annotations"), f"{where}.annotations", True)):
                _place(ws, note, text, f"{where}.annotations[{k}]", offset, placed, links, read)
            texts.append(text)
            offset += len(text) + 1
    whole = "\n".join(texts)
    return NativeAnswer(whole, answer_claims(whole, placed, links))


def _openai_chat(ws: WorkingSet, data: dict[str, Any]) -> NativeAnswer:
    choices = data["choices"]
    if not choices:
        raise _bad("the response has no choices")
    message = _obj(_obj(choices[0], "choices[0]").get("message"), "choices[0].message")
    content = message.get("content")
    text = "" if content is None else _str(content, "choices[0].message.content")
    placed: list[Placed] = []
    links: list[Placed] = []
    read: dict[tuple[int, int], bool] = {}  # each span: whether it is an inline link
    notes = _list(message.get("annotations"), "choices[0].message.annotations", True)
    for k, note in enumerate(notes):
        where = f"choices[0].message.annotations[{k}]"
        note = _obj(note, where)
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
    note = _obj(note, where)
    kind = note.get("type")
    if kind == "url_citation":
        url = _str(note.get("url"), f"{where}.url")
        start = _int(note.get("start_index"), f"{where}.start_index")
        end = _int(note.get("end_index"), f"{where}.end_index")
        _in_answer(text, start, end, where)
        native = {"type": kind, "url": url, "answer_span": [start, end]}
        if isinstance(note.get("title"), str):
            native["title"] = note["title"]
        return start, end, _resolved(ws, _by_url(ws, url), url, native)
    if kind in ("file_citation", "container_file_citation"):
        file_id = note.get("file_id")
        filename = note.get("filename")
        if not isinstance(file_id, str) and not isinstance(filename, str):
            raise _bad(f"{where} names no file_id or filename")
        if kind == "container_file_citation":
            start = _int(note.get("start_index"), f"{where}.start_index")
            end = _int(note.get("end_index"), f"{where}.end_index")
        else:
            start = end = _int(note.get("index"), f"{where}.index")
        _in_answer(text, start, end, where)
        native = {
            "type": kind,
            "file_id": file_id,
            "filename": filename,
            "answer_span": [start, end],
        }
        label = filename if isinstance(filename, str) else str(file_id)
        return start, end, _resolved(ws, _by_file(ws, file_id, filename), label, native)
    return None  # file_path and other annotations cite nothing


def _openai_stream(events: list[Any]) -> dict[str, Any]:
    """The response a Responses API stream ends with (``response.completed``)."""
    for n, event in enumerate(events):
        event = _obj(event, f"event {n}")
        if event.get("type") == "response.completed":
            return _obj(event.get("response"), f"event {n}.response")
        if event.get("type") in ("response.failed", "error"):
            raise _bad(f"event {n}: the stream reported {event.get('type')}")
    raise _bad("the stream ended before response.completed: the answer is partial")


# -- cohere ----------------------------------------------------------------------------------------


def _cohere(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):
        data = _cohere_stream(data)
    data = _obj(data, "the response")
    if isinstance(data.get("message"), dict):  # v2
        message = data["message"]
        parts = _list(message.get("content"), "message.content", True)
        text = "".join(
            _str(_obj(p, f"message.content[{i}]").get("text"), f"message.content[{i}].text")
            for i, p in enumerate(parts)
            if isinstance(p, dict) and p.get("type", "text") == "text"
        )
        citations = _list(message.get("citations"), "message.citations", True)
        prefix = "message.citations"
    else:  # v1
        text = _str(data.get("text"), "text")
        citations = _list(data.get("citations"), "citations", True)
        prefix = "citations"
    placed: list[Placed] = []
    for k, item in enumerate(citations):
        where = f"{prefix}[{k}]"
        item = _obj(item, where)
        start = _int(item.get("start"), f"{where}.start")
        end = _int(item.get("end"), f"{where}.end")
        _in_answer(text, start, end, where)
        ids = _cohere_ids(item, where)
        native: dict[str, Any] = {"type": "cohere", "answer_span": [start, end]}
        cites = [c for i in ids for c in _resolved(ws, _cohere_source(ws, i), i, dict(native))]
        placed.append((start, end, cites))
    return NativeAnswer(text, answer_claims(text, placed))


def _cohere_ids(item: dict[str, Any], where: str) -> list[str]:
    if "sources" in item:  # v2: [{"type": "document", "id", "document": {...}}]
        ids = []
        for j, src in enumerate(_list(item["sources"], f"{where}.sources")):
            src = _obj(src, f"{where}.sources[{j}]")
            ident = src.get("id")
            if not isinstance(ident, str) and isinstance(src.get("document"), dict):
                ident = src["document"].get("id")
            ids.append(_str(ident, f"{where}.sources[{j}].id"))
        return ids
    return [
        _str(x, f"{where}.document_ids[{j}]")
        for j, x in enumerate(_list(item.get("document_ids"), f"{where}.document_ids"))
    ]


def _cohere_source(ws: WorkingSet, ident: str) -> list[Source]:
    src = ws.get(ident)
    if src is not None:
        return [src]
    m = _COHERE_INDEX.match(ident)
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
        event = _obj(event, f"event {n}")
        kind = event.get("type")
        message = (
            (event.get("delta") or {}).get("message")
            if isinstance(event.get("delta"), dict)
            else None
        )
        if kind == "content-delta" and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, dict):
                text.append(_str(content.get("text", ""), f"event {n}.delta.message.content.text"))
        elif kind == "citation-start" and isinstance(message, dict):
            citations.append(_obj(message.get("citations"), f"event {n}.delta.message.citations"))
        elif kind == "message-end":
            ended = True
    if not ended:
        raise _bad("the stream ended before message-end: the answer is partial")
    return {
        "message": {"content": [{"type": "text", "text": "".join(text)}], "citations": citations}
    }


# -- gemini ----------------------------------------------------------------------------------


def _gemini(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):  # a stream: its chunks' parts in order, the last grounding
        chunks = [_obj(x, f"chunk {n}") for n, x in enumerate(data)]
        if not chunks:
            raise _bad("the stream holds no chunks")
        parts = [p for n, c in enumerate(chunks) for p in _gemini_parts(c, f"chunk {n}")]
        grounding = next(
            (g for c in reversed(chunks) if (g := _gemini_grounding(c)) is not None), None
        )
        last = _gemini_candidate(chunks[-1], f"chunk {len(chunks) - 1}")
        if last.get("finishReason") is None:
            raise _bad("the stream ended before a finishReason: the answer is partial")
        parts = ["".join(parts)]  # (the segments of a stream count in the text it builds)
    else:
        data = _obj(data, "the response")
        parts = _gemini_parts(data, "the response")
        grounding = _gemini_grounding(data)
    text = "".join(parts)
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    placed: list[Placed] = []
    if grounding is not None:
        meta = "groundingMetadata"
        chunks_meta = _list(grounding.get("groundingChunks"), f"{meta}.groundingChunks", True)
        supports = _list(grounding.get("groundingSupports"), f"{meta}.groundingSupports", True)
        for k, support in enumerate(supports):
            where = f"{meta}.groundingSupports[{k}]"
            start, end, cites = _gemini_support(ws, support, parts, starts, chunks_meta, where)
            placed.append((start, end, cites))
    return NativeAnswer(text, answer_claims(text, placed))


def _gemini_support(
    ws: WorkingSet,
    support: Any,
    parts: list[str],
    starts: list[int],
    chunks_meta: list[Any],
    where: str,
) -> tuple[int, int, list[NativeCitation]]:
    """One grounding support: its segment (UTF-8 byte offsets into one part; a zero is left
    out of the JSON) as an answer span, and a citation per chunk it names."""
    support = _obj(support, where)
    segment = _obj(support.get("segment"), f"{where}.segment")
    part = _int(segment.get("partIndex", 0), f"{where}.segment.partIndex")
    if part >= len(parts):
        raise _bad(f"{where}.segment.partIndex {part}: the answer has {len(parts)} text parts")
    encoded = parts[part].encode("utf-8")
    start_b = _int(segment.get("startIndex", 0), f"{where}.segment.startIndex")
    end_b = _int(segment.get("endIndex"), f"{where}.segment.endIndex")
    if not start_b <= end_b <= len(encoded):
        raise _bad(f"{where}.segment: bytes [{start_b}, {end_b}) are outside the answer")
    start = starts[part] + len(encoded[:start_b].decode("utf-8", errors="ignore"))
    end = starts[part] + len(encoded[:end_b].decode("utf-8", errors="ignore"))
    scores = support.get("confidenceScores")
    cites = []
    indices = _list(support.get("groundingChunkIndices"), f"{where}.groundingChunkIndices")
    for j, index in enumerate(indices):
        index = _int(index, f"{where}.groundingChunkIndices[{j}]")
        native: dict[str, Any] = {"type": "grounding_support", "answer_span": [start, end]}
        score = scores[j] if isinstance(scores, list) and j < len(scores) else None
        if isinstance(score, int | float) and not isinstance(score, bool):
            native["confidence"] = score
        if index >= len(chunks_meta):
            cites.append(NativeCitation(not_an_id(ws, f"chunk_{index}"), None, None, native))
            continue
        found, label = _gemini_chunk(ws, chunks_meta[index], f"groundingChunks[{index}]")
        cites.extend(_resolved(ws, found, label, native))
    return start, end, cites


def _gemini_candidate(data: dict[str, Any], where: str) -> dict[str, Any]:
    candidates = _list(data.get("candidates"), f"{where}.candidates")
    if not candidates:
        raise _bad(f"{where} has no candidates")
    return _obj(candidates[0], f"{where}.candidates[0]")


def _gemini_parts(data: dict[str, Any], where: str) -> list[str]:
    """The text of each part of the first candidate (a part without text, or a thought, is
    empty: ``partIndex`` still counts it)."""
    content = _gemini_candidate(data, where).get("content")
    if content is None:
        return []
    content = _obj(content, f"{where}.candidates[0].content")
    out = []
    for i, part in enumerate(_list(content.get("parts"), f"{where}.content.parts", True)):
        part = _obj(part, f"{where}.content.parts[{i}]")
        text = part.get("text", "")
        out.append("" if part.get("thought") else _str(text, f"{where}.content.parts[{i}].text"))
    return out


def _gemini_grounding(data: dict[str, Any]) -> dict[str, Any] | None:
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return None
    grounding = candidates[0].get("groundingMetadata")
    return grounding if isinstance(grounding, dict) else None


def _gemini_chunk(ws: WorkingSet, chunk: Any, where: str) -> tuple[list[Source], str]:
    chunk = _obj(chunk, where)
    inner = _obj(chunk.get("retrievedContext") or chunk.get("web") or {}, where)
    uri, title, text = inner.get("uri"), inner.get("title"), inner.get("text")
    if isinstance(uri, str) and (found := _by_url(ws, uri)):
        return found, uri
    if isinstance(title, str) and (found := _by_file(ws, None, title)):
        return found, title
    if isinstance(text, str):
        exact = [s for s in ws if s.text.strip() == text.strip()]
        if exact:
            return exact, exact[0].id
    return [], uri if isinstance(uri, str) else (title if isinstance(title, str) else "chunk")


# -- resolving a provider's document to the sources sent ------------------------------------


def _resolved(
    ws: WorkingSet, found: list[Source], label: str, native: dict[str, Any]
) -> list[NativeCitation]:
    """A citation of each matching source (the chunks of one cited file or page: each judged
    on its own, so the one that says it keeps the claim), or one with a label that is not an
    id when nothing sent matches."""
    if not found:
        return [NativeCitation(not_an_id(ws, label), None, None, native)]
    return [NativeCitation(src.id, src.id, None, dict(native)) for src in found]


def _by_url(ws: WorkingSet, url: str) -> list[Source]:
    """The sources sent with the page ``url`` names (``same_page``)."""
    page = same_page(url)
    return [s for s in ws if s.url and same_page(s.url) == page]


def same_page(url: str) -> str:
    """``url`` reduced to the page it names: the scheme, the host's case, a trailing slash, a
    ``#fragment`` and tracking parameters (``utm_*``: OpenAI adds ``utm_source=openai``) left
    out. Nothing looser: another path, or another value of another parameter, is another
    page."""
    parts = urlsplit(url.strip())
    query = "&".join(p for p in parts.query.split("&") if p and not p.lower().startswith("utm_"))
    host = parts.netloc.lower()
    path = parts.path.rstrip("/")
    if not parts.scheme and not parts.netloc:  # no scheme: "example.com/page" as written
        host, _, rest = path.partition("/")
        host, path = host.lower(), ("/" + rest).rstrip("/") if rest else ""
    return f"{host}{path}?{query}" if query else f"{host}{path}"


def _by_file(ws: WorkingSet, file_id: Any, filename: Any) -> list[Source]:
    """Sources sent under that id, or whose document (key without corpus and chunk), title or
    URL's last segment is that file name."""
    if isinstance(file_id, str) and (src := ws.get(file_id)) is not None:
        return [src]
    if not isinstance(filename, str) or not filename.strip():
        return []
    name = filename.strip()
    out = []
    for src in ws:
        document = (src.key or "").split(":", 1)[-1].split("#", 1)[0]
        tail = (src.url or "").split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if name in (document, src.title, tail, src.id):
            out.append(src)
    return out


@dataclass(frozen=True, slots=True)
class Reader:
    """One vendor's response shape: whether a response object, or the first event of a
    stream, is its own, and how it is read into claims."""

    vendor: Vendor
    claims_response: Callable[[dict[str, Any]], bool]
    claims_stream: Callable[[dict[str, Any]], bool]
    read: Callable[[WorkingSet, Any], NativeAnswer]


# Precedence: the first reader that claims a response reads it. A body with ``choices`` is
# Chat Completions, whoever serves it (vLLM, a gateway): ``openai``. The shapes do not overlap
# on any vendor's documented response (tests/verify/test_native.py holds each fixture to one).
READERS: tuple[Reader, ...] = (
    Reader("anthropic", _anthropic_response, _anthropic_event, _anthropic),
    Reader("openai", _openai_response, _openai_event, _openai),
    Reader("gemini", _gemini_response, _gemini_event, _gemini),
    Reader("cohere", _cohere_response, _cohere_event, _cohere),
)
_BY_VENDOR: dict[str, Reader] = {r.vendor: r for r in READERS}
