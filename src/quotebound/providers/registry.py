"""Making a provider from its name and options: the one front door the CLI, the server's
start-up and evaluation all use.

Environment variables (``QUOTEBOUND_MODELS``, the vendors' API keys) are read here and in each
adapter's ``from_env``, at the boundary, never deep inside a default.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from .base import Provider

PROVIDER_NAMES: tuple[str, ...] = ("local", "extractive", "openai", "anthropic")


def make_provider(
    name: str,
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model_path: Path | None = None,
) -> Provider:
    """The provider called ``name`` (one of ``PROVIDER_NAMES``).

    ``local`` loads a bundled GGUF model (``model``, or the default) or ``model_path``;
    ``openai`` and ``anthropic`` need ``model`` (the name the API expects) and take their key
    from ``api_key`` or the environment; ``extractive`` needs nothing. An unknown name or a
    missing model is an ``InputError``.
    """
    if name == "extractive":
        from .extractive import ExtractiveProvider

        return ExtractiveProvider()
    if name == "local":
        from .local import DEFAULT_MODEL, LocalProvider

        cache = os.environ.get("QUOTEBOUND_MODELS")
        return LocalProvider(
            model or DEFAULT_MODEL, path=model_path, cache_dir=Path(cache) if cache else None
        )
    if name not in PROVIDER_NAMES:
        raise InputError(f"unknown provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    if model is None:
        raise InputError(f"--provider {name} needs --model (the model name the API expects)")
    if name == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider.from_env(model, base_url=base_url, api_key=api_key)
    from .anthropic import AnthropicProvider

    return AnthropicProvider.from_env(model, base_url=base_url, api_key=api_key)
