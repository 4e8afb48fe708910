"""Model providers: one adapter per wire API, capabilities as attributes.

Built in: ``extractive`` (no model: verbatim source sentences), ``scripted`` (replays outputs,
for tests and docs), ``openai`` (OpenAI-compatible chat completions) and ``anthropic``
(Messages API with native citations, mapped and verified like any other output), and
``local`` (the embedded llama.cpp model). ``make_provider(name, ...)`` makes any of them.
"""

from __future__ import annotations

from .base import Capabilities, Completion, Message, Provider, ProviderError, Request
from .extractive import ExtractiveProvider
from .registry import PROVIDER_NAMES, make_provider
from .scripted import ScriptedProvider

__all__ = [
    "PROVIDER_NAMES",
    "Capabilities",
    "Completion",
    "ExtractiveProvider",
    "Message",
    "Provider",
    "ProviderError",
    "Request",
    "ScriptedProvider",
    "make_provider",
]
