"""Providers' own citations -> claims, verified like any other output.

One module per vendor (``anthropic``, ``openai``, ``cohere``, ``gemini``), each a reader:
whether a response or a stream is its own (``claims_response``, ``claims_stream``) and how it
is read (``read``), listed in ``READERS`` in their precedence; ``placement`` puts the
citations on the answer's sentences; ``base`` holds the claims model and checked accessors.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..sources import WorkingSet
from . import anthropic, cohere, gemini, openai
from .base import (
    VENDORS,
    NativeAnswer,
    NativeCitation,
    NativeClaim,
    NativeError,
    Vendor,
    not_an_id,
    same_page,
)
from .placement import CONNECTIVE_WORDS, MAX_PLACEMENTS, answer_claims, states_something

__all__ = [
    "CONNECTIVE_WORDS",
    "MAX_PLACEMENTS",
    "READERS",
    "VENDORS",
    "NativeAnswer",
    "NativeCitation",
    "NativeClaim",
    "NativeError",
    "Reader",
    "Vendor",
    "answer_claims",
    "detect",
    "load",
    "not_an_id",
    "read",
    "same_page",
    "states_something",
]


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
    Reader("anthropic", anthropic.claims_response, anthropic.claims_stream, anthropic.read),
    Reader("openai", openai.claims_response, openai.claims_stream, openai.read),
    Reader("gemini", gemini.claims_response, gemini.claims_stream, gemini.read),
    Reader("cohere", cohere.claims_response, cohere.claims_stream, cohere.read),
)
_BY_VENDOR: dict[str, Reader] = {r.vendor: r for r in READERS}
