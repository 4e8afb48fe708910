"""quotebound: auditable answers from documents.

The public surface is what ``__all__`` lists; everything else is private and may change.
"""

from __future__ import annotations

from .errors import InputError, PolicyError, QuoteboundError, SourceError
from .parsing import DEFAULT_SENTINELS, FORMATS
from .sources import Source, WorkingSet
from .text.normalize import NORMALIZATION_VERSION, NormalizedText, normalize
from .verify import (
    CITATION_REASONS,
    CLAIM_REASONS,
    STATUSES,
    Citation,
    Claim,
    Policy,
    Verdict,
    verify,
)

__version__ = "0.1.0"

__all__ = [
    "CITATION_REASONS",
    "CLAIM_REASONS",
    "DEFAULT_SENTINELS",
    "FORMATS",
    "NORMALIZATION_VERSION",
    "STATUSES",
    "Citation",
    "Claim",
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
    "normalize",
    "verify",
]
