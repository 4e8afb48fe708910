"""The provider interface: one adapter per wire API, capabilities as attributes.

A provider turns a ``Request`` (messages rendered by the contract, the working set they were
rendered from, an optional JSON schema) into a ``Completion`` whose ``text`` is the raw model
output, which the verifier then checks like any other. Providers never decide what is valid.

Errors: every failure of a provider is a ``ProviderError`` with a ``kind``; third-party errors
are translated once, at the adapter boundary. The pipeline turns them into a status, keeps the
trace, and never crashes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..errors import QuoteboundError
from ..request import Capabilities, Message, Request, Role

ErrorKind = Literal[
    "timeout", "http_error", "auth", "refusal", "truncated", "bad_response", "config"
]


@dataclass(frozen=True, slots=True)
class Completion:
    text: str  # the raw output, exactly as the verifier will read it
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    # The first output token's top alternatives as (token text, log-probability), most
    # likely first, when the request asked for them and the provider gives them; else empty.
    top_logprobs: tuple[tuple[str, float], ...] = ()


def first_token_logprobs(logprobs: Any) -> tuple[tuple[str, float], ...]:
    """The first output token's top alternatives from an OpenAI-shaped ``logprobs`` object
    (``{"content": [{"top_logprobs": [{"token": ..., "logprob": ...}, ...]}, ...]}``, which
    llama.cpp also returns), most likely first; empty when absent or malformed (a reader of
    them then fails closed)."""
    try:
        top = logprobs["content"][0]["top_logprobs"]
        pairs = [(str(t["token"]), float(t["logprob"])) for t in top]
    except (KeyError, IndexError, TypeError, ValueError):
        return ()
    return tuple(sorted(pairs, key=lambda p: -p[1]))


class ProviderError(QuoteboundError):
    """A provider failed: timeout, HTTP error, refusal, truncated or malformed response."""

    code = "provider_error"

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Provider(ABC):
    """One model behind one wire API."""

    name: ClassVar[str]
    # The most source text (characters) this model should be sent; the packer's budget is
    # capped to it. None: no limit beyond the caller's budget.
    context_chars: int | None = None
    # False where one instance must not serve two requests at once (the local model has one
    # slot); a server serialises calls to such a provider.
    thread_safe: ClassVar[bool] = True
    capabilities: Capabilities = Capabilities()

    def __init__(self, model: str) -> None:
        self.model = model

    @abstractmethod
    def complete(self, request: Request) -> Completion:
        """Run one request; raise ProviderError for any failure."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the provider holds (a loaded model, an HTTP client)."""


__all__ = [
    "Capabilities",
    "Completion",
    "ErrorKind",
    "Message",
    "Provider",
    "ProviderError",
    "Request",
    "Role",
    "first_token_logprobs",
]
