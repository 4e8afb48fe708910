"""What the repair turn tells the model beyond each claim's own failure, and what an answer
still leaves out: the parts of the question the sources mention and no kept claim addresses,
the sources that give other figures than a kept claim, for a claim whose quotes did not carry
it, the sentence of the sources nearest to it, and a claim that only restates the question
(dropped: it answers nothing)."""

from __future__ import annotations

from dataclasses import replace

from .answer import Conflict
from .cards import document_of
from .coverage import (
    disagreeing,
    mentioned_in,
    nearest_sentence,
    reads_as_question,
    restatements,
    unaddressed,
)
from .fragments import lean_on_kept
from .packing import Pack
from .reasons import NOT_CARRIED
from .sources import WorkingSet
from .text.display import shown
from .verdict import Verdict, verdict_status


def read_with_question(
    question: str, verdict: Verdict, ws: WorkingSet, sentences: bool = True
) -> Verdict:
    """``verdict`` read as an answer to ``question`` (``ask`` knows it; ``verify`` does not):
    each kept claim that only restates it (``coverage.restatements``) dropped as
    ``restates_question`` (verified or not, it answers nothing, and the repair turn asks for the
    answer instead), then the claims leaning on what came before read with the question too
    (``fragments.lean_on_kept``: "They lost Dyrrachium ..." leans unless the question says
    "they"), a claim leaning on one dropped here dropped with it (``sentences``: the policy's
    writing rules; off, no claim is read as leaning)."""
    restates = restatements(question)
    claims = tuple(
        replace(
            claim,
            kept=False,
            reason="restates_question",
            message=f"claim {n} ({shown(claim.text)}) only restates the question: write what "
            "the sources give as its answer, or abstain if they do not give it",
        )
        if claim.kept and restates(claim.text)
        else claim
        for n, claim in enumerate(verdict.claims, 1)
    )
    if sentences:  # (a text that is no question, a placeholder's, asks of no "they")
        asked = question if reads_as_question(question) else None
        claims = lean_on_kept(claims, ws=ws, question=asked)
    if all(a is b for a, b in zip(claims, verdict.claims, strict=True)):
        return verdict
    return replace(verdict, status=verdict_status(claims), claims=claims)


def unaddressed_parts(question: str, packed: Pack, verdict: Verdict) -> tuple[str, ...]:
    """What of the question the sources mention and the verdict's kept claims leave out (none
    when nothing is kept: that is an abstention, or a repair for other reasons)."""
    if not verdict.kept_claims:
        return ()
    answered = [c.text for c in verdict.kept_claims]
    answered += [x.quote for c in verdict.kept_claims for x in c.citations if x.valid and x.quote]
    return unaddressed(question, (src.text for src in packed.working_set), answered)


def conflicts(packed: Pack, verdict: Verdict) -> list[Conflict]:
    """The sources sent, of documents no kept claim cites, that give other figures than a kept
    claim (``coverage.disagreeing``); ``Conflict.claim`` numbers the kept claims, as served."""
    ws = packed.working_set
    kept = verdict.kept_claims
    cited = [(c.text, [x.source or "" for x in c.citations if x.valid]) for c in kept]
    documents = {document_of(src) for _, ids in cited for sid in ids if (src := ws.get(sid))}
    others = [(src.id, src.text) for src in ws if document_of(src) not in documents]
    out = []
    for n, sid, sentence in disagreeing(cited, others):
        src = ws.get(sid)
        if src is not None:  # (always: disagreeing returns ids of the sources it was given)
            out.append(Conflict(n + 1, sid, src.title or document_of(src), src.updated, sentence))
    return out


def conflict_failure(conflict: Conflict, verdict: Verdict) -> str:
    """The repair turn's sentence for ``conflict``, the claim numbered as in ``verdict`` (all
    its claims, as the other failures number them)."""
    kept = [n for n, c in enumerate(verdict.claims, 1) if c.kept]
    number = kept[conflict.claim - 1]
    dated = f" (updated {conflict.updated})" if conflict.updated else ""
    return (
        f"claim {number} gives other figures than {conflict.source}{dated}, which says "
        f'"{conflict.sentence}": if both apply, report both, cite both and say which applies '
        "when; if one replaces the other, say so only where a source says it"
    )


def nearest_hints(verdict: Verdict, packed: Pack) -> list[str]:
    """For each claim dropped because its quotes did not carry it, the sentence of the sources
    sent that shares most words with it (the model is shown where to look; what it writes is
    verified like anything else)."""
    sources = [(src.id, src.text) for src in packed.working_set]
    out = []
    for n, claim in enumerate(verdict.claims, 1):
        if claim.kept or not any(c.reason in NOT_CARRIED for c in claim.citations):
            continue
        near = nearest_sentence(claim.text, sources, skip=[c.quote or "" for c in claim.citations])
        if near is not None:
            out.append(
                f'claim {n}: the sentence of {near[0]} nearest to it is "{near[1]}": quote the '
                "sentence that states the claim, and write the claim from what it says"
            )
    return out


def gap_failures(gaps: tuple[str, ...], packed: Pack) -> list[str]:
    """One failure per part of the question the answer leaves out, naming the sources that
    mention it (the model is told where to look, not what to say)."""
    sources = [(src.id, src.text) for src in packed.working_set]
    out = []
    for gap in gaps:
        where = " and ".join(mentioned_in(gap, sources))
        out.append(
            f'the answer does not address "{gap}" from the question, although {where} '
            "mentions it: add a claim for it with a quote from that source, or leave it out if "
            "the source does not answer it"
        )
    return out
