"""Model providers: one adapter per wire API, capabilities as attributes.

Built in: ``extractive`` (no model: verbatim source sentences), ``scripted`` (replays outputs,
for tests and docs), and the HTTP adapters added to ``PROVIDERS`` as they land.
"""

from __future__ import annotations

from .base import Capabilities, Completion, Message, Provider, ProviderError, Request
from .extractive import ExtractiveProvider
from .scripted import ScriptedProvider

__all__ = [
    "Capabilities",
    "Completion",
    "ExtractiveProvider",
    "Message",
    "Provider",
    "ProviderError",
    "Request",
    "ScriptedProvider",
]
