"""Where the sources say it: a claim the model's citations did not carry, placed in code.

``reanchor`` re-cites a claim dropped only because its verbatim quotes did not carry it to the
sentence of the sources sent that does; ``quoted_sentences`` serves a claim the support tier
could not follow, or one that says the question's words where its quote has others, as its
cited source's own sentence. Both check what they place with every
check a model's citation gets (``verify.check_claim``). Pipeline features over the core:
the verifier itself never places a citation.
"""

from __future__ import annotations

from dataclasses import replace

from .coverage import borrowings, nearest_sentences, restatements
from .fragments import fragment, leans_unasked
from .parsing import ParsedCitation, ParsedClaim
from .reasons import REANCHORABLE
from .sources import WorkingSet
from .text.normalize import normalize
from .text.sentences import sentence_spans, sentences_around
from .text.words import EDGE_PUNCTUATION
from .verdict import DEFAULT_POLICY, Citation, Claim, Policy, Verdict, verdict_status
from .verify import check_claim

# How much of a claim's content words the sentence the code cites for it must hold: two thirds
# (three at least) when an entailment tier judges it next, as ``ask`` runs by default; all of
# them when nothing will (``share=1.0``).
ANCHOR_SHARE = 2 / 3
ANCHOR_LEAST = 3  # two shared words are a topic, not a statement
ANCHOR_CANDIDATES = 3  # the nearest sentences tried, most shared words first
_NEGATION = frozenset("not no never none nor neither cannot without".split())


def reanchor(
    verdict: Verdict,
    ws: WorkingSet,
    policy: Policy = DEFAULT_POLICY,
    share: float = ANCHOR_SHARE,
    reasons: frozenset[str] = REANCHORABLE,
) -> Verdict:
    """``verdict`` with each claim that was dropped only because its citations did not carry it
    (a verbatim quote of the wrong sentence or of another source, a number its quote lacks:
    ``reasons.REANCHORABLE``; with ``reasons=AFTER_ENTAILMENT``, also a quote the entailment tier
    found did not say it) checked again against the sentences of ``ws`` nearest to it: those
    holding at least ``share`` of its content words (three at least), with a "not" where the
    claim has one and none where it has none, the model's failed quotes skipped, the nearest
    ``ANCHOR_CANDIDATES`` tried in turn (``coverage.nearest_sentences``); never the user's own
    message. The claim is kept, that sentence its first citation (``anchored``, the model's
    own after it), only when it passes every check a citation the model wrote would: quote
    length, span, numbers, identifiers, relevance, and, in the pipeline, the entailment tier
    after this. A fragment is never re-anchored. The model chose the claim; the code only finds
    where the sources say it."""
    if not any(_reanchorable(c, reasons) for c in verdict.claims):
        return verdict
    sources = [(src.id, src.text) for src in ws.sources if src.kind != "user"]
    claims = list(verdict.claims)
    changed = False
    for i, claim in enumerate(claims):
        if not _reanchorable(claim, reasons):
            continue
        negated = _negated(claim.text)
        # what the model cited and failed (a quote right but in another source is not)
        failed = {(c.source, normalize(c.quote).strip()) for c in claim.citations if c.quote}
        ranked = nearest_sentences(claim.text, sources, (), ANCHOR_LEAST, share)
        tried = [(sid, s) for sid, s in ranked if (sid, normalize(s).strip()) not in failed]
        for sid, sentence in tried[:ANCHOR_CANDIDATES]:
            if _negated(sentence) != negated:
                continue
            cited = ParsedCitation(sid, sid, sentence.strip(), needs_quote=True)
            checked = check_claim(ws, i + 1, ParsedClaim(claim.text, [cited]), policy)
            if checked.kept:
                placed = replace(checked.citations[0], anchored=True)
                claims[i] = Claim(claim.text, (placed, *claim.citations), True)
                changed = True
                break
    return _with_claims(verdict, claims, "anchor") if changed else verdict


def quoted_sentences(
    verdict: Verdict, ws: WorkingSet, policy: Policy = DEFAULT_POLICY, question: str | None = None
) -> Verdict:
    """``verdict`` with each claim whose verbatim quote says it in other words served as the
    cited source's own sentence that holds that quote: the source's words, quoted whole (seed
    003's quote-then-answer), a claim that says exactly what its evidence says. Such a claim is
    one the support tier alone dropped (a citation of it passed every code check, its quote
    verbatim and sharing the claim's words, and the tier found the quote does not say the
    claim: ``not_entailed``), or, with ``question``, a kept one that says words of the question
    its quoted sentences lack (``coverage.borrowings``: "The fewest Huguenots stayed on the
    south shore ..." for "Where did the fewest Huguenots stay?", quoting "A small group of
    Huguenots also settled on the south shore ..."; not a claim that only restates the
    question, ``restates_question``'s to drop). The model's claim is kept beside it
    (``Claim.restates``). Only where that sentence is itself a claim (``fragment`` passes it,
    and, with ``question``, its "they" is not what its source named before: ``leans_unasked``),
    within the quote bounds, and passes every code check as a quote of itself (else a kept
    claim stays as it was); the pipeline's answer check then decides whether it answers the
    question. Abstaining is left to evidence that the sources do not answer, not to a
    paraphrase the tier could not follow."""
    claims = list(verdict.claims)
    changed = False
    borrowed = restates = None
    if question is not None:
        borrowed, restates = borrowings(question), restatements(question)
    served = {normalize(c.text) for c in claims if c.kept}  # no sentence is served twice
    for i, claim in enumerate(claims):
        if not claim.kept:
            judged = [c for c in claim.citations if c.reason == "not_entailed" and c.span]
        elif borrowed is None or restates is None or restates(claim.text):
            continue
        else:
            found = _one_sentence(ws, claim)
            if found is None or not borrowed(claim.text, found[1]):
                continue
            judged = found[0]
        for cited in judged:
            sid = cited.source or ""
            sentence = _sentence_at(ws, sid, cited.span or (0, 0))
            if sentence is None or fragment(sentence) is not None:
                continue
            if question is not None and leans_unasked(sentence, question):
                continue
            if normalize(sentence) in served:
                continue
            quote = ParsedCitation(sid, sid, sentence, needs_quote=True)
            checked = check_claim(ws, i + 1, ParsedClaim(sentence, [quote]), policy)
            if checked.kept:
                claims[i] = replace(checked, restates=claim.text)
                served.add(normalize(sentence))
                changed = True
                break
    return _with_claims(verdict, claims, "quoted") if changed else verdict


def _one_sentence(ws: WorkingSet, claim: Claim) -> tuple[list[Citation], list[str]] | None:
    """Where every valid citation of the kept ``claim`` quotes within one sentence of one
    source (a claim citing two sentences says what one alone does not: served as one, it would
    lose the other), its first such citation, and what its words are read against: that
    sentence and the source's title. None otherwise."""
    valid = [c for c in claim.citations if c.valid]
    if not valid or any(c.span is None or c.source != valid[0].source for c in valid):
        return None
    src = ws.get(valid[0].source or "")
    if src is None or src.kind == "user":
        return None
    around = {sentences_around(src.text, *c.span) for c in valid if c.span is not None}
    if len(around) != 1:
        return None
    [span] = around
    if span is None:
        return None
    start, end = span
    if len(sentence_spans(src.text, start, end)) != 1:
        return None  # a quote across two sentences: it is not one sentence's
    return valid[:1], [src.text[start:end], *([src.title] if src.title else [])]


def _with_claims(verdict: Verdict, claims: list[Claim], tier: str) -> Verdict:
    """``verdict`` with ``claims`` in place of its own, its status settled again, and ``tier``
    among the checks that ran."""
    done = tuple(claims)
    tiers = verdict.tiers if tier in verdict.tiers else (*verdict.tiers, tier)
    return replace(verdict, claims=done, status=verdict_status(done), tiers=tiers)


def _sentence_at(ws: WorkingSet, sid: str, span: tuple[int, int]) -> str | None:
    """The whole sentences of source ``sid`` that ``span`` lies in, as written, or None."""
    src = ws.get(sid)
    if src is None or src.kind == "user":
        return None
    around = sentences_around(src.text, span[0], span[1])
    return None if around is None else src.text[around[0] : around[1]].strip() or None


def _negated(text: str) -> bool:
    words = normalize(text).replace("n't", " not").split()
    return any(w.strip(EDGE_PUNCTUATION) in _NEGATION for w in words)


def _reanchorable(claim: Claim, reasons: frozenset[str]) -> bool:
    if claim.kept or claim.reason == "claim_fragment" or not claim.citations:
        return False
    return all(c.reason in reasons for c in claim.citations)
