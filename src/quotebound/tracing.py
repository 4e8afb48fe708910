"""What the trace records of a run beside its attempts: the counts, and the prompt as sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .answer import Answer
from .packing import Pack
from .request import Request
from .verdict import Verdict


def answer_counts(
    hits: Sequence[Any], packed: Pack, verdicts: list[Verdict], answer: Answer
) -> dict[str, int]:
    """The trace's counts of an answer that every ask records (``Run.serve`` adds those of
    its own steps)."""
    first = verdicts[0].counts() if verdicts else {}
    final = verdicts[-1].counts() if verdicts else {}
    # The first pass is the model's: the citations the code placed are counted apart.
    placed = [c for v in verdicts[:1] for k in v.claims for c in k.citations if c.anchored]
    return {
        "retrieved": len(hits),
        "packed": len(packed.working_set),
        "attempts": len(verdicts),
        "repaired": int(answer.repaired),
        "first_pass_citations": first.get("citations", 0) - len(placed),
        "first_pass_valid_citations": first.get("valid_citations", 0)
        - sum(c.valid for c in placed),
        "anchored": sum(c.anchored for v in verdicts for k in v.claims for c in k.citations),
        "final_claims": final.get("claims", 0),
        "kept_claims": len(answer.claims),
        "dropped_claims": final.get("dropped", 0),
        "abstained": int(answer.status == "abstained"),
        "provider_errors": int(answer.error is not None),
    }


def rendered(request: Request) -> str:
    """The conversation as sent (the repair turn included), as the trace stores the prompt."""
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in request.messages)
