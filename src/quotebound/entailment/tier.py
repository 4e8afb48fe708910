"""The entailment tier on a verdict: after the code checks, does each quote support its claim?

Invariants:
- Only citations that passed every code check (id, span, numbers, identifiers, quoted words) are
  judged; a failed citation keeps its code reason. A citation judged before (it carries an
  ``entailment`` record) keeps its judgement: the tier run again on a verdict judges only what
  is new (a citation ``reanchor.reanchor`` placed after the first run).
- A judged citation stays valid only when the backend says ``supported``. ``contradicted`` and
  ``unrelated`` make it invalid (``contradicted``, ``not_entailed``); a backend error makes it
  invalid too (``entailment_error``): the tier fails closed, never silently passes.
- A claim citing several sources may be supported only by their quotes together: when no single
  quote supports it, the joined quotes are judged once, and that judgement stands for each.
- Two batches at most: every valid citation alone, then every claim's joined quotes.
- Every judged citation records the judgement (label, score, backend, version, detail), and the
  verdict lists the tiers that ran, so a reader knows what was checked and by what.
- Claims and status are recomputed exactly as the code checks compute them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..fragments import lean_on_kept
from ..reasons import CitationReason
from ..sources import WorkingSet
from ..verdict import Citation, Claim, Verdict, settled_claim, verdict_status
from .base import Backend, Judgement

JOINT_DETAIL = "judged on the claim's quotes together"


def tier_name(backend: Backend) -> str:
    return f"entailment:{backend.name}"


def check_entailment(
    verdict: Verdict, ws: WorkingSet, backend: Backend, *, sentences: bool = True
) -> Verdict:
    """``verdict`` with the entailment tier applied by ``backend``. With ``sentences`` (the
    verifying policy's ``Policy.sentences``), a kept claim that leaned on one the tier drops,
    and says nothing alone now, is dropped too (``fragments.lean_on_kept``)."""
    tiers = (
        verdict.tiers
        if tier_name(backend) in verdict.tiers
        else (*verdict.tiers, tier_name(backend))
    )
    if verdict.status in ("abstained", "unparseable") or not verdict.claims:
        return replace(verdict, tiers=tiers)
    # Judge every valid citation of every claim in one batch (backends batch their models).
    pairs: list[tuple[str, str]] = []
    where: list[tuple[int, int]] = []
    for i, claim in enumerate(verdict.claims):
        if not claim.kept:  # dropped by the code (a fragment, or no valid citation): final
            continue
        for j, cit in enumerate(claim.citations):
            if cit.valid and cit.entailment is None:  # (judged before: its judgement stands)
                pairs.append((claim.text, _evidence_text(cit, ws)))
                where.append((i, j))
    judged = dict(zip(where, _judge(backend, pairs), strict=True))
    mine = [
        {j: judged[(i, j)] for j in range(len(claim.citations)) if (i, j) in judged}
        for i, claim in enumerate(verdict.claims)
    ]
    # Judge a claim's quotes together when none supports it alone, every such claim in a second
    # batch; a quote judged to contradict the claim stays out of that (and stays contradicted).
    joint: dict[int, list[int]] = {}
    for i, own in enumerate(mine):
        joinable = sorted(k for k, j in own.items() if j.label != "contradicted" and not j.error)
        if not any(j.supported for j in own.values()) and len(joinable) > 1:
            joint[i] = joinable
    together = _judge(
        backend,
        [
            (
                verdict.claims[i].text,
                " ".join(_evidence_text(verdict.claims[i].citations[k], ws) for k in joinable),
            )
            for i, joinable in joint.items()
        ],
    )
    for (i, joinable), judgement in zip(joint.items(), together, strict=True):
        if judgement.supported:
            mine[i] |= {k: replace(judgement, detail=JOINT_DETAIL) for k in joinable}
    claims = tuple(_claim(i + 1, claim, mine[i]) for i, claim in enumerate(verdict.claims))
    if sentences:  # a claim that leaned on one the tier dropped says nothing alone now
        claims = lean_on_kept(claims, ws=ws)
    return replace(verdict, status=verdict_status(claims), claims=claims, tiers=tiers)


def _judge(backend: Backend, pairs: list[tuple[str, str]]) -> list[Judgement]:
    if not pairs:
        return []
    try:
        out = backend.judge_many(pairs)
    except Exception as exc:  # any backend failure fails closed, never passes
        return [backend.failed(f"{type(exc).__name__}: {exc}") for _ in pairs]
    if len(out) != len(pairs):
        return [backend.failed("the backend returned the wrong number of judgements")] * len(pairs)
    return out


def evidence_text(
    ws: WorkingSet,
    source: str | None,
    quote: str | None,
    parts: Sequence[Sequence[int]] = (),
) -> str | None:
    """What a citation that passed the id and span checks offers as evidence (what the support
    checks read): its verified spans of the cited source (``Citation.parts``: the parts of an
    elided quote joined by an ellipsis), the whole source for a citation without a quote; the
    quote as written when the source is not in ``ws``, else None."""
    src = ws.get(source) if source else None
    if src is None:
        return quote or None
    if parts:
        return " … ".join(src.text[p[0] : p[1]] for p in parts)
    return src.text


def _evidence_text(cit: Citation, ws: WorkingSet) -> str:
    return evidence_text(ws, cit.source, cit.quote, cit.parts) or ""


def _claim(n: int, claim: Claim, judged: dict[int, Judgement]) -> Claim:
    if not judged:  # nothing passed the code checks: nothing to judge
        return claim
    citations = tuple(
        _citation(n, cit, judged[k]) if k in judged else cit
        for k, cit in enumerate(claim.citations)
    )
    return settled_claim(n, claim.text, citations)


def _citation(n: int, cit: Citation, judgement: Judgement) -> Citation:
    record = judgement.to_dict()
    if judgement.supported:
        return replace(cit, entailment=record)
    source = cit.source or cit.ref
    why = f" ({judgement.detail})" if judgement.detail else ""
    reason: CitationReason
    if judgement.error is not None:
        reason = "entailment_error"
        message = f"claim {n}: the support of the quote from {source} could not be checked"
    elif judgement.label == "contradicted":
        reason = "contradicted"
        message = f"claim {n}: the quote from {source} contradicts the claim{why}"
    else:
        reason = "not_entailed"
        # (the judgement's detail stays in ``entailment``: the message is also the repair's)
        message = f"claim {n}: the quote from {source} does not say what the claim says"
    return replace(cit, valid=False, reason=reason, message=message, entailment=record)
