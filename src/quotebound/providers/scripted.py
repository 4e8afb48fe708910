"""A scripted model: replays given outputs, for tests, docs and demos. Ships in the package.

``ScriptedProvider(["first output", ProviderError("timeout", "..."), "repaired output"])``
returns (or raises) them in order and records every request it was given in ``requests``. An
item may be a whole ``Completion`` (with ``top_logprobs``, for a scored judge: make it with
``logprobs=True`` so its capabilities say so).
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

    def __init__(
        self,
        outputs: Iterable[str | Completion | ProviderError],
        model: str = "scripted",
        logprobs: bool = False,
    ) -> None:
        super().__init__(model)
        if logprobs:
            self.capabilities = Capabilities(logprobs=True)
        self._outputs = list(outputs)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        if not self._outputs:
            raise ProviderError("config", "the scripted model has no output left to replay")
        item = self._outputs.pop(0)
        if isinstance(item, ProviderError):
            raise item
        if isinstance(item, Completion):
            return item
        return Completion(text=item, model=self.model, finish_reason="stop")
