"""quotebound: auditable answers from documents.

The public surface is what ``__all__`` lists; everything else is private and may change.

``import quotebound`` loads the verifier's core only. The flow's entry points (``ask`` and
``AskOptions``, ``pack``, ``make_backend`` and ``check_entailment``) load on first use: the
pipeline alone brings the providers, the store and the cards, most of an import's time again.
``defaults`` (what ``quotebound ask`` runs beside the bare ``ask``) is imported at once, from a
module that loads nothing of the flow until it is called: imported later, the module
``quotebound.defaults`` would take the function's name on the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .defaults import Defaults, defaults
from .errors import InputError, PolicyError, QuoteboundError, SourceError
from .parsing import DEFAULT_SENTINELS, FORMATS
from .reasons import CITATION_REASONS, CLAIM_REASONS, STATUSES
from .sources import Source, WorkingSet
from .text.normalize import NORMALIZATION_VERSION, NormalizedText, normalize
from .verdict import Citation, Claim, Policy, Verdict
from .verify import verify

if TYPE_CHECKING:
    from .entailment import make_backend
    from .entailment.tier import check_entailment
    from .packing import pack
    from .pipeline import AskOptions, ask

__version__ = "0.1.0"

# name -> the module (under quotebound) that defines it, imported when the name is first read
_LAZY: dict[str, str] = {
    "AskOptions": "pipeline",
    "ask": "pipeline",
    "check_entailment": "entailment.tier",
    "make_backend": "entailment",
    "pack": "packing",
}

__all__ = [
    "CITATION_REASONS",
    "CLAIM_REASONS",
    "DEFAULT_SENTINELS",
    "FORMATS",
    "NORMALIZATION_VERSION",
    "STATUSES",
    "AskOptions",
    "Citation",
    "Claim",
    "Defaults",
    "InputError",
    "NormalizedText",
    "Policy",
    "PolicyError",
    "QuoteboundError",
    "Source",
    "SourceError",
    "Verdict",
    "WorkingSet",
    "__version__",
    "ask",
    "check_entailment",
    "defaults",
    "make_backend",
    "normalize",
    "pack",
    "verify",
]


if not TYPE_CHECKING:  # (hidden from mypy, so that a misspelt name is still an error there)

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # read once: later reads find it without this hook
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
