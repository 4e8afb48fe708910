"""The entailment tier: does a verbatim quote actually support its claim?

Three backends behind one interface (``base.Backend``), each answering ``supported``,
``contradicted`` or ``unrelated`` with a score and its name and version:

- ``heuristic``: deterministic mismatch rules (negation, comparatives, changed names) and an
  embedding-similarity "unrelated" signal from the packaged all-MiniLM-L6-v2;
- ``judge``: an LLM judge through any provider (the embedded local model by default) that sees
  only the claim and the quote and answers one of the three labels;
- ``nli``: a sequence-classification model (MNLI, MiniCheck, HHEM-style) from a local path.

Heavy libraries (torch, transformers, sentence-transformers) load only when a backend is made;
a missing one is an ``EntailmentError`` naming the ``quotebound[entail]`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .base import LABELS, Backend, EntailmentError, Judgement, Label

if TYPE_CHECKING:
    from ..providers.base import Provider

__all__ = [
    "BACKENDS",
    "LABELS",
    "Backend",
    "EntailmentError",
    "Judgement",
    "Label",
    "close_together",
    "make_backend",
]

BACKENDS: tuple[str, ...] = ("heuristic", "judge", "nli")


def make_backend(
    name: str,
    *,
    model_path: str | Path | None = None,
    provider: Provider | None = None,
) -> Backend:
    """The backend called ``name``: ``heuristic``, ``judge`` (through ``provider``, the embedded
    local model when None; never a provider that does not generate, such as the extractive
    one) or ``nli`` (the model at ``model_path``, required, and for it alone). The one factory
    of backends: the CLI, the server and evaluation all make them here."""
    if model_path is not None and name != "nli":
        raise EntailmentError(f"a model path is for the nli backend only, not {name!r}")
    if name == "heuristic":
        from .heuristic import HeuristicBackend

        return HeuristicBackend()
    if name == "judge":
        from .judge import JudgeBackend

        if provider is not None and not provider.capabilities.generates:
            raise EntailmentError(
                "the extractive provider cannot judge: the judge needs a model "
                "(--provider local, openai or anthropic)"
            )
        if provider is None:
            from ..providers.base import ProviderError
            from ..providers.local import LocalProvider

            try:
                provider = LocalProvider()
            except ProviderError as exc:
                raise EntailmentError(f"the judge's default local model: {exc}") from exc
        return JudgeBackend(provider)
    if name == "nli":
        from .nli import NLIBackend

        if model_path is None:
            raise EntailmentError(
                "the nli backend needs a model path: a local directory with a "
                "sequence-classification model (e.g. an MNLI, MiniCheck or HHEM-style model)"
            )
        return NLIBackend(model_path)
    raise EntailmentError(f"unknown entailment backend {name!r}; known: {', '.join(BACKENDS)}")


def close_together(backend: Backend | None, provider: Provider | None) -> None:
    """Close ``backend`` and ``provider`` (either may be None), each once: a judge closes the
    provider it judges with itself."""
    from .judge import JudgeBackend

    if backend is not None:
        backend.close()
    if provider is not None and not (
        isinstance(backend, JudgeBackend) and backend.provider is provider
    ):
        provider.close()
