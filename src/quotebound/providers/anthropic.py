"""The Anthropic Messages API adapter, with native citations mapped into the claims contract.

One request is one ``POST {base_url}/v1/messages``. The working set is sent as citable
documents, one per source in working-set order (``title`` is the source id), followed by the
question; the system prompt is ``contract.native_system_prompt``. Later turns of the request
(the repair turn) follow as plain text messages.

The response's citation blocks are mapped into OUR JSON claims contract and returned as
``Completion.text``, so the verifier checks them like any other output; native citations are
never trusted:

- a text block with citations is one claim; each document citation (``char_location``,
  ``page_location``, ``content_block_location``) becomes ``{"source", "quote"}`` with the
  source found by ``document_index`` in the working set and the quote its ``cited_text``;
- consecutive uncited text blocks are joined, then dropped when they are only whitespace or
  punctuation, or a short connective (fewer than 6 words and no digit: "According to the
  policy,", "In addition,"); any other uncited text, longer or stating a number, is one claim
  with no citations (the verifier reports ``no_citation``);
- a citation whose document is not in the working set (index out of range, or any other kind
  of citation: a search result, a web page) gets a source label that is not an id of the
  set, so the verifier reports ``unknown_source``; it is never mapped to a guess;
- an answer whose whole text is the abstention sentinel is returned as exactly the sentinel.

Errors are ``ProviderError`` kinds. The HTTP ones (timeout, http_error for connection failures
and any status outside 2xx but 401/403, auth for 401/403, a body that is not a JSON object) are
translated in ``_http``, the one boundary the HTTP adapters share; here: truncated (stop_reason
``max_tokens``), refusal (stop_reason ``refusal``), bad_response. The API key is sent only in
``x-api-key`` and never appears in an error message; the environment is read in ``from_env``
(in ``_http``) and nowhere else.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ..contract import SENTINEL, native_system_prompt
from ..native import NativeError, anthropic_claims
from ..sources import Source, WorkingSet
from ._http import Boundary, HttpProvider, error_note, usage
from .base import Capabilities, Completion, ProviderError, Request

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_HTTP = Boundary("anthropic", auth_hint="Set ANTHROPIC_API_KEY or pass --api-key.")
_bad = _HTTP.bad
_TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})
_QUOTES = "\"'“”‘’"  # a sentinel the model put in quotation marks is still the sentinel


class AnthropicProvider(HttpProvider):
    """A Claude model behind the Anthropic Messages API, citing the sources natively.

    ``from_env`` reads ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY where an argument is None.
    """

    name: ClassVar[str] = "anthropic"
    capabilities: Capabilities = Capabilities(native_citations=True, answers_in="json")
    boundary: ClassVar[Boundary] = _HTTP
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    env_prefix: ClassVar[str] = "ANTHROPIC"
    path: ClassVar[str] = "/v1/messages"

    def complete(self, request: Request) -> Completion:
        data = self._post(self.request_body(request))
        stop = data.get("stop_reason")
        if stop is not None and not isinstance(stop, str):
            _bad("stop_reason is not a string")
        if stop == "refusal":
            raise ProviderError("refusal", "anthropic: the model refused to answer")
        if stop in _TRUNCATED:
            raise ProviderError(
                "truncated",
                f"anthropic: the answer was cut off ({stop}, max_tokens={request.max_tokens}); "
                "raise max_tokens",
            )
        text = answer_text(_text_blocks(data), request.working_set)
        answered_by = data.get("model")
        return Completion(
            text=text,
            model=answered_by if isinstance(answered_by, str) and answered_by else self.model,
            usage=usage(data.get("usage")),
            finish_reason=stop,
        )

    def request_body(self, request: Request) -> dict[str, Any]:
        """The JSON body of the Messages call: the sources as citable documents."""
        ws = request.working_set
        content: list[dict[str, Any]] = [_document(src) for src in ws]
        content.append({"type": "text", "text": f"Question: {request.question}"})
        return {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "system": native_system_prompt(ws),
            "messages": [{"role": "user", "content": content}, *_later_turns(request)],
        }

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if self._api_key:  # sent in x-api-key and nowhere else
            headers["x-api-key"] = self._api_key
        return headers


def _document(src: Source) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": src.text},
        "title": src.id,
        "citations": {"enabled": True},
    }
    context = "; ".join(
        f"{name}: {value}" for name in ("title", "updated") if (value := getattr(src, name))
    )
    if context:
        block["context"] = context
    return block


def _later_turns(request: Request) -> list[dict[str, str]]:
    """The turns after the first user message (the repair turn), as plain text messages."""
    roles = [m.role for m in request.messages]
    if "user" not in roles:
        return []
    later = request.messages[roles.index("user") + 1 :]
    return [{"role": m.role, "content": m.content} for m in later if m.role != "system"]


# -- native citations -> the claims contract ---------------------------------------------------

Block = tuple[str, list[Any]]  # a text block's text and its citations ([] when uncited)


def answer_text(blocks: list[Block], ws: WorkingSet) -> str:
    """The text blocks of an answer as the JSON claims contract (or the sentinel), mapped by
    ``native.anthropic_claims``, the one reading of Anthropic citations that ``verify
    --format anthropic`` also uses."""
    whole = "".join(text for text, _ in blocks).strip().strip(_QUOTES).strip()
    if whole == SENTINEL:
        return SENTINEL
    try:
        answer = anthropic_claims(
            ws, [(text, cites, f"content block {i}") for i, (text, cites) in enumerate(blocks)]
        )
    except NativeError as exc:
        _bad(str(exc))
    claims = [
        {"text": c.text, "citations": [{"source": x.ref, "quote": x.quote} for x in c.citations]}
        for c in answer.claims
    ]
    return json.dumps({"answerable": True, "claims": claims, "missing": ""}, ensure_ascii=False)


def _text_blocks(data: dict[str, Any]) -> list[Block]:
    content = data.get("content")
    if not isinstance(content, list):
        _bad('the response has no "content" list' + error_note(data))
    blocks: list[Block] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            _bad(f"content[{i}] is not a typed block")
        if block["type"] != "text":
            continue  # thinking and other non-answer blocks are not part of the answer
        text, citations = block.get("text"), block.get("citations")
        if not isinstance(text, str):
            _bad(f"content[{i}].text is not a string")
        if citations is not None and not isinstance(citations, list):
            _bad(f"content[{i}].citations is not a list")
        blocks.append((text, citations or []))
    return blocks
