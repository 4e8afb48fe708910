"""A scripted model: replays given outputs, for tests, docs and demos. Ships in the package.

``ScriptedProvider(["first output", ProviderError("timeout", "..."), "repaired output"])``
returns (or raises) them in order and records every request it was given in ``requests``.
Running out of script is a ``ProviderError`` ("config"), not an IndexError.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from .base import Capabilities, Completion, Provider, ProviderError, Request


class ScriptedProvider(Provider):
    name: ClassVar[str] = "scripted"
    capabilities: Capabilities = Capabilities()
    thread_safe: ClassVar[bool] = False  # one script, replayed in order

    def __init__(self, outputs: Iterable[str | ProviderError], model: str = "scripted") -> None:
        super().__init__(model)
        self._outputs = list(outputs)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        if not self._outputs:
            raise ProviderError("config", "the scripted model has no output left to replay")
        item = self._outputs.pop(0)
        if isinstance(item, ProviderError):
            raise item
        return Completion(text=item, model=self.model, finish_reason="stop")
