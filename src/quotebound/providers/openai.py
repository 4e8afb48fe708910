"""The OpenAI-compatible chat completions adapter (OpenAI, vLLM, Ollama, llama.cpp, LM Studio).

One request is one ``POST {base_url}/chat/completions``; the messages rendered by the contract
are sent as they are. With ``json_schema`` on (the default) and a schema in the request, the
answer is constrained by ``response_format`` (strict JSON schema), so a conforming server cannot
emit an id or a quote outside the working set. The output is still verified like any other.

Errors are ``ProviderError`` kinds. The HTTP ones (timeout, http_error, auth on 401/403, a body
that is not a JSON object) are translated in ``_http``, the one boundary the HTTP adapters
share; the rest here::

    finish_reason "length"            -> truncated
    a refusal, or "content_filter"    -> refusal
    a body that is not the expected JSON -> bad_response

Invariants: the API key is sent only in the Authorization header and never appears in an
error message (it is redacted from every excerpt); the environment is read in ``from_env``
and nowhere else.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from ._http import Boundary, HttpProvider, clip, error_note, usage
from .base import Capabilities, Completion, ProviderError, Request, first_token_logprobs

DEFAULT_BASE_URL = "https://api.openai.com/v1"
SCHEMA_NAME = "quotebound_answer"
_HTTP = Boundary("openai", auth_hint="Set OPENAI_API_KEY or pass --api-key.")
_bad = _HTTP.bad


class OpenAIProvider(HttpProvider):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``from_env`` reads OPENAI_BASE_URL / OPENAI_API_KEY where an argument is None.
    """

    name: ClassVar[str] = "openai"
    boundary: ClassVar[Boundary] = _HTTP
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    env_prefix: ClassVar[str] = "OPENAI"
    path: ClassVar[str] = "/chat/completions"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        json_schema: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(model, base_url, api_key, timeout, transport)
        # Whether the server decodes against a JSON schema is a fact about this endpoint (OpenAI
        # and vLLM do, some local servers do not), so it is set per instance.
        self.capabilities = Capabilities(json_schema=json_schema, logprobs=True)

    def complete(self, request: Request) -> Completion:
        data = self._post(self.request_body(request))
        return _completion(data, self.model, request.max_tokens, request.logprobs > 0)

    def request_body(self, request: Request) -> dict[str, Any]:
        """The JSON body of the chat completions call for this request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.schema is not None and self.capabilities.json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": SCHEMA_NAME,
                    "schema": strict_subset(request.schema),
                    "strict": True,
                },
            }
        if request.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = min(request.logprobs, 20)  # the API's maximum
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._api_key:  # sent in the Authorization header and nowhere else
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers


# Keywords OpenAI's strict structured outputs do not accept (a request carrying one is refused);
# the bounds they set only keep small local models short, and the verifier checks the rest.
_NOT_STRICT = frozenset({"maxLength", "minLength", "maxItems", "minItems", "pattern", "format"})


def strict_subset(schema: Any) -> Any:
    """The schema without the keywords strict mode refuses, recursively."""
    if isinstance(schema, dict):
        return {k: strict_subset(v) for k, v in schema.items() if k not in _NOT_STRICT}
    if isinstance(schema, list):
        return [strict_subset(v) for v in schema]
    return schema


def _completion(
    data: dict[str, Any], model: str, max_tokens: int, scored: bool = False
) -> Completion:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        _bad('the response has no "choices"' + error_note(data))
    choice = choices[0]
    message = choice.get("message")
    finish = choice.get("finish_reason")
    if not isinstance(message, dict):
        _bad('choices[0] has no "message" object')
    if finish is not None and not isinstance(finish, str):
        _bad("choices[0].finish_reason is not a string")
    refusal = message.get("refusal")
    if refusal or finish == "content_filter":
        why = clip(str(refusal)) if refusal else "the content filter stopped the answer"
        raise ProviderError("refusal", f"openai: the model refused: {why}")
    if finish == "length" and not scored:  # a scored call reads its first token: length is fine
        raise ProviderError(
            "truncated",
            f"openai: the answer was cut off at max_tokens={max_tokens}; raise max_tokens",
        )
    content = message.get("content")
    if not isinstance(content, str):
        _bad("choices[0].message.content is not a string")
    answered_by = data.get("model")
    return Completion(
        text=content,
        model=answered_by if isinstance(answered_by, str) and answered_by else model,
        usage=usage(data.get("usage")),
        finish_reason=finish,
        top_logprobs=first_token_logprobs(choice.get("logprobs")) if scored else (),
    )
