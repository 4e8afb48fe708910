"""How much work one verification may cost: bounds a service puts on what a caller sends.

Every parser and checker is linear in its input, so a bounded input is bounded work; a
``Budget`` states the bounds in the caller's terms (claims, citations, characters of a claim)
and adds a wall-time limit checked between claims, so that no single request can hold a worker
for long. ``verify(..., budget=...)`` applies one; without one nothing is limited (the library
and the CLI verify whatever they are given).

- Over a count: ``WorkLimitError`` (a caller's input error; HTTP 413, ``work_limit``).
- Over the time: ``TimeLimitError`` (HTTP 503, ``time_limit``): the request stops between two
  claims, with nothing half-written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .errors import PolicyError, TimeLimitError, WorkLimitError
from .parsing import Parsed


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on one verification; every field is documented in docs/server.md."""

    max_claims: int = 200
    max_citations: int = 2_000
    max_claim_chars: int = 4_000
    seconds: float | None = 10.0  # wall time, checked between claims; None: no limit

    def __post_init__(self) -> None:
        for name in ("max_claims", "max_citations", "max_claim_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PolicyError(f"{name} must be a positive integer, got {value!r}")
        if self.seconds is not None and not self.seconds > 0:
            raise PolicyError(f"seconds must be positive or None, got {self.seconds!r}")

    def check(self, parsed: Parsed) -> None:
        """Refuse parsed output over a count, naming the limit and what to do."""
        claims = parsed.claims
        if len(claims) > self.max_claims:
            raise WorkLimitError(
                f"the output makes {len(claims)} claims; this service checks at most "
                f"{self.max_claims} in one request: split the answer"
            )
        citations = sum(len(c.citations) for c in claims)
        if citations > self.max_citations:
            raise WorkLimitError(
                f"the output makes {citations} citations; this service checks at most "
                f"{self.max_citations} in one request: split the answer"
            )
        for n, claim in enumerate(claims, 1):
            if len(claim.text) > self.max_claim_chars:
                raise WorkLimitError(
                    f"claim {n} is {len(claim.text):,} characters long; this service checks "
                    f"claims of at most {self.max_claim_chars:,}: one fact per claim"
                )

    def deadline(self) -> float | None:
        """The ``time.monotonic()`` by which the work must be done (None: none)."""
        return None if self.seconds is None else time.monotonic() + self.seconds


def over_time(deadline: float | None, seconds: float | None) -> None:
    """Raise ``TimeLimitError`` once ``deadline`` has passed."""
    if deadline is not None and time.monotonic() > deadline:
        raise TimeLimitError(
            f"verification took longer than this service allows ({seconds:g} s); "
            "send a shorter answer, or fewer sources"
        )
