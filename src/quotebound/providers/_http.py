"""The HTTP boundary of the adapters: the one place third-party HTTP errors become ProviderError.

The HTTP adapters (``openai``, ``anthropic``) are ``HttpProvider`` subclasses: the client, the
base URL checks, the settings read from the environment (in ``from_env`` and nowhere else) and
the one POST per request live here. They post one JSON body and read one JSON object back
through a ``Boundary``, which is parametrised by the provider label that prefixes every message
and by the hint that an auth failure gives. Failures map to ``ProviderError`` kinds::

    httpx.TimeoutException            -> timeout
    any other httpx.RequestError      -> http_error (connection refused, DNS, protocol)
    HTTP 401 / 403                    -> auth (the message says which setting to fix)
    any other status outside 2xx      -> http_error (status and a short, redacted excerpt)
    a body that is not a JSON object  -> bad_response

What a well-formed object means (refusal, truncation, the answer itself) is each adapter's own
business; it reports a malformed one through ``Boundary.bad``.

Invariant: no error message carries the API key; every excerpt of a body or of an exception is
redacted (the key itself, and anything that looks like one) and clipped.
"""

from __future__ import annotations

import json
import os
import re
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn, Self

import httpx

from .base import Provider, ProviderError

EXCERPT_CHARS = 200
KEY_LIKE = re.compile(r"(?:\bsk-|\bBearer\s+)[A-Za-z0-9._*\-]{6,}")


@dataclass(frozen=True, slots=True)
class Boundary:
    """The error translation of one provider: its label and the fix for an auth failure."""

    label: str  # "openai", "anthropic": the prefix of every error message
    auth_hint: str  # e.g. "Set OPENAI_API_KEY or pass --api-key."

    def post_json(
        self,
        client: httpx.Client,
        url: str,
        shown: str,
        body: dict[str, Any],
        headers: dict[str, str],
        *,
        key: str | None,
        timeout: float,
    ) -> dict[str, Any]:
        """POST ``body`` to ``url`` and return the JSON object answered; ``shown`` is the URL
        that messages name (no userinfo), ``key`` the secret to redact from them."""
        try:
            response = client.post(url, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise ProviderError(
                "timeout", f"{self.label}: no answer from {shown} within {timeout:g}s"
            ) from exc
        except httpx.RequestError as exc:
            reason = redact(str(exc) or type(exc).__name__, key)
            raise ProviderError(
                "http_error", f"{self.label}: could not reach {shown}: {reason}"
            ) from exc
        self.raise_for_status(response, shown, key)
        return self.json_object(response, key)

    def raise_for_status(self, response: httpx.Response, url: str, key: str | None) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        excerpt = excerpt_of(response, key)
        if status in (401, 403):
            sent = "the API key was refused" if key else "no API key was sent"
            raise ProviderError(
                "auth",
                f"{self.label}: HTTP {status} from {url}: {sent} ({excerpt}). {self.auth_hint}",
            )
        raise ProviderError("http_error", f"{self.label}: HTTP {status} from {url}: {excerpt}")

    def json_object(self, response: httpx.Response, key: str | None) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            self.bad(f"the response is not JSON: {excerpt_of(response, key)}")
        if not isinstance(data, dict):
            self.bad(f"the response is a JSON {type(data).__name__}, not an object")
        return data

    def bad(self, problem: str) -> NoReturn:
        raise ProviderError("bad_response", f"{self.label}: {problem}")


class HttpProvider(Provider):
    """A model behind one JSON-over-HTTP API.

    A subclass names its ``boundary``, its ``default_base_url``, the ``env_prefix`` of its
    settings (``OPENAI`` reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``) and the ``path`` it
    posts to, and says in ``_headers`` how the key is sent (only there).
    """

    boundary: ClassVar[Boundary]
    default_base_url: ClassVar[str]
    env_prefix: ClassVar[str]
    path: ClassVar[str]  # appended to the base URL, e.g. "/chat/completions"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(model)
        self.base_url = checked_base_url(self.default_base_url if base_url is None else base_url)
        self._shown_url = without_userinfo(self.base_url)  # what error messages name
        self.timeout = timeout
        self._api_key = api_key or None
        self._client = httpx.Client(timeout=timeout, transport=transport)

    @classmethod
    def from_env(
        cls, model: str, base_url: str | None = None, api_key: str | None = None, **options: Any
    ) -> Self:
        """The provider, with ``{env_prefix}_BASE_URL`` / ``{env_prefix}_API_KEY`` used where an
        argument is None; ``options`` (timeout, transport, ...) go to the constructor."""
        if base_url is None:
            base_url = os.environ.get(f"{cls.env_prefix}_BASE_URL") or cls.default_base_url
        if api_key is None:
            api_key = os.environ.get(f"{cls.env_prefix}_API_KEY") or None
        return cls(model, base_url, api_key, **options)

    def close(self) -> None:
        self._client.close()

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The headers of every request, the API key (when there is one) among them."""

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``path``: the JSON object answered, or a ProviderError."""
        url, shown = self.base_url + self.path, self._shown_url + self.path
        return self.boundary.post_json(
            self._client, url, shown, body, self._headers(), key=self._api_key, timeout=self.timeout
        )


def checked_base_url(base_url: str) -> str:
    """``base_url`` without trailing slashes; a ``config`` error unless http(s) with a host."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:
        url = httpx.URL()
    if url.scheme not in ("http", "https") or not url.host:
        raise ProviderError(
            "config", "the base URL must start with http:// or https:// and name a host"
        )
    return base_url.rstrip("/")


def without_userinfo(base_url: str) -> str:
    """The URL as error messages name it: any ``user:password@`` removed."""
    url = httpx.URL(base_url)
    return str(url.copy_with(userinfo=b"")) if url.userinfo else base_url


def usage(value: Any) -> dict[str, int]:
    """The integer counters of a ``usage`` object; anything else is left out."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def error_note(data: dict[str, Any]) -> str:
    """`` (error: ...)`` when a 2xx body carries an error message, else ``""``."""
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return f" (error: {clip(redact(error['message'], None))})"
    return ""


def excerpt_of(response: httpx.Response, key: str | None) -> str:
    """A short, redacted excerpt of an error body: the error message when there is one."""
    text = response.text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        message = data["error"].get("message")
        text = message if isinstance(message, str) else text
    return clip(redact(text, key)) or "empty body"


def redact(text: str, key: str | None) -> str:
    if key:
        text = text.replace(key, "[redacted]")
    return KEY_LIKE.sub("[redacted]", text)


def clip(text: str) -> str:
    """``text`` on one line, at most ``EXCERPT_CHARS`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"
