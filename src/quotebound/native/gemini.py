"""Gemini's ``groundingMetadata``: ``groundingSupports`` over ``groundingChunks``, or the
chunks of a stream (segment offsets are UTF-8 bytes)."""

from __future__ import annotations

from typing import Any

from ..sources import Source, WorkingSet
from .base import (
    NativeAnswer,
    NativeCitation,
    array,
    bad,
    by_file,
    by_url,
    nonnegative,
    not_an_id,
    obj,
    resolved,
    string,
)
from .placement import Placed, answer_claims


def claims_response(data: dict[str, Any]) -> bool:
    """Whether a response object is this vendor's."""
    return isinstance(data.get("candidates"), list)


def claims_stream(first: dict[str, Any]) -> bool:
    """Whether a stream whose first event is ``first`` is this vendor's."""
    return "candidates" in first


def read(ws: WorkingSet, data: Any) -> NativeAnswer:
    if isinstance(data, list):  # a stream: its chunks' parts in order, the last grounding
        chunks = [obj(x, f"chunk {n}") for n, x in enumerate(data)]
        if not chunks:
            raise bad("the stream holds no chunks")
        parts = [p for n, c in enumerate(chunks) for p in _gemini_parts(c, f"chunk {n}")]
        grounding = next(
            (g for c in reversed(chunks) if (g := _gemini_grounding(c)) is not None), None
        )
        last = _gemini_candidate(chunks[-1], f"chunk {len(chunks) - 1}")
        if last.get("finishReason") is None:
            raise bad("the stream ended before a finishReason: the answer is partial")
        parts = ["".join(parts)]  # (the segments of a stream count in the text it builds)
    else:
        data = obj(data, "the response")
        parts = _gemini_parts(data, "the response")
        grounding = _gemini_grounding(data)
    text = "".join(parts)
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    placed: list[Placed] = []
    if grounding is not None:
        meta = "groundingMetadata"
        chunks_meta = array(grounding.get("groundingChunks"), f"{meta}.groundingChunks", True)
        supports = array(grounding.get("groundingSupports"), f"{meta}.groundingSupports", True)
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
    support = obj(support, where)
    segment = obj(support.get("segment"), f"{where}.segment")
    part = nonnegative(segment.get("partIndex", 0), f"{where}.segment.partIndex")
    if part >= len(parts):
        raise bad(f"{where}.segment.partIndex {part}: the answer has {len(parts)} text parts")
    encoded = parts[part].encode("utf-8")
    start_b = nonnegative(segment.get("startIndex", 0), f"{where}.segment.startIndex")
    end_b = nonnegative(segment.get("endIndex"), f"{where}.segment.endIndex")
    if not start_b <= end_b <= len(encoded):
        raise bad(f"{where}.segment: bytes [{start_b}, {end_b}) are outside the answer")
    start = starts[part] + len(encoded[:start_b].decode("utf-8", errors="ignore"))
    end = starts[part] + len(encoded[:end_b].decode("utf-8", errors="ignore"))
    scores = support.get("confidenceScores")
    cites = []
    indices = array(support.get("groundingChunkIndices"), f"{where}.groundingChunkIndices")
    for j, index in enumerate(indices):
        index = nonnegative(index, f"{where}.groundingChunkIndices[{j}]")
        native: dict[str, Any] = {"type": "grounding_support", "answer_span": [start, end]}
        score = scores[j] if isinstance(scores, list) and j < len(scores) else None
        if isinstance(score, int | float) and not isinstance(score, bool):
            native["confidence"] = score
        if index >= len(chunks_meta):
            cites.append(NativeCitation(not_an_id(ws, f"chunk_{index}"), None, None, native))
            continue
        found, label = _gemini_chunk(ws, chunks_meta[index], f"groundingChunks[{index}]")
        cites.extend(resolved(ws, found, label, native))
    return start, end, cites


def _gemini_candidate(data: dict[str, Any], where: str) -> dict[str, Any]:
    candidates = array(data.get("candidates"), f"{where}.candidates")
    if not candidates:
        raise bad(f"{where} has no candidates")
    return obj(candidates[0], f"{where}.candidates[0]")


def _gemini_parts(data: dict[str, Any], where: str) -> list[str]:
    """The text of each part of the first candidate (a part without text, or a thought, is
    empty: ``partIndex`` still counts it)."""
    content = _gemini_candidate(data, where).get("content")
    if content is None:
        return []
    content = obj(content, f"{where}.candidates[0].content")
    out = []
    for i, part in enumerate(array(content.get("parts"), f"{where}.content.parts", True)):
        part = obj(part, f"{where}.content.parts[{i}]")
        text = part.get("text", "")
        out.append("" if part.get("thought") else string(text, f"{where}.content.parts[{i}].text"))
    return out


def _gemini_grounding(data: dict[str, Any]) -> dict[str, Any] | None:
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return None
    grounding = candidates[0].get("groundingMetadata")
    return grounding if isinstance(grounding, dict) else None


def _gemini_chunk(ws: WorkingSet, chunk: Any, where: str) -> tuple[list[Source], str]:
    chunk = obj(chunk, where)
    inner = obj(chunk.get("retrievedContext") or chunk.get("web") or {}, where)
    uri, title, text = inner.get("uri"), inner.get("title"), inner.get("text")
    if isinstance(uri, str) and (found := by_url(ws, uri)):
        return found, uri
    if isinstance(title, str) and (found := by_file(ws, None, title)):
        return found, title
    if isinstance(text, str):
        exact = [s for s in ws if s.text.strip() == text.strip()]
        if exact:
            return exact, exact[0].id
    return [], uri if isinstance(uri, str) else (title if isinstance(title, str) else "chunk")
