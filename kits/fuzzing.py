"""How many examples the property tests draw: as written under `make test`, times
``QB_FUZZ_SCALE`` under `make fuzz`."""

from __future__ import annotations

import os


def scaled(examples: int) -> int:
    return examples * max(1, int(os.environ.get("QB_FUZZ_SCALE", "1")))
