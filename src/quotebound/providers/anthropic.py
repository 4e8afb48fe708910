"""The Anthropic Messages API adapter: the response, with its native citations, as received.

One request is one ``POST {base_url}/v1/messages``. The working set is sent as citable
documents, one per source in working-set order (``title`` is the source id), followed by the
question; the system prompt is ``contract.native_system_prompt``. Later turns of the request
(the repair turn) follow as plain text messages.

The response is returned as it came (``Completion.text`` is its JSON) and read by the verifier
in the ``anthropic`` format (``native``): never trusted, the same reading as ``quotebound
verify --format anthropic``, so the trace keeps exactly what was received:

- a text block with citations is one claim; each document citation (``char_location``,
  ``page_location``, ``content_block_location``) cites the ``document_index``-th source sent,
  its ``cited_text`` the quote, its offsets or pages compared with what the verifier finds;
- uncited text between claims is a claim with no citation unless it is a short connective
  ("According to the policy,", "In addition,");
- a citation whose document is not in the working set (index out of range, or any other kind
  of citation: a search result, a web page) is ``unknown_source``, never mapped to a guess;
- an answer whose whole text is the abstention sentinel is an abstention.

The response is read once here too, so that a malformed one is a ``bad_response`` at once.

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

from ..contract import native_system_prompt
from ..native import NativeError, read
from ..sources import Source
from ._http import Boundary, HttpProvider, error_note, usage
from .base import Capabilities, Completion, ProviderError, Request

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_HTTP = Boundary("anthropic", auth_hint="Set ANTHROPIC_API_KEY or pass --api-key.")
_bad = _HTTP.bad
_TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})


class AnthropicProvider(HttpProvider):
    """A Claude model behind the Anthropic Messages API, citing the sources natively.

    ``from_env`` reads ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY where an argument is None.
    """

    name: ClassVar[str] = "anthropic"
    capabilities: Capabilities = Capabilities(native_citations=True, answers_in="anthropic")
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
        if not isinstance(data.get("content"), list):
            _bad('the response has no "content" list' + error_note(data))
        try:  # read now as the verifier will (``--format anthropic``): a malformed reply fails here
            read(request.working_set, data, "anthropic")
        except NativeError as exc:
            _bad(str(exc))
        text = json.dumps(data, ensure_ascii=False)
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
