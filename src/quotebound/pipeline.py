"""The answer pipeline: retrieve -> pack -> ask under the contract -> verify -> repair once ->
keep what survives or abstain -> resolve cards -> trace.

Invariants:
- The WorkingSet made by the packer is the one allowlist: the contract renders it, the
  verifier checks against it, the cards are built from it, the trace stores it.
- At most one repair turn, naming each failure, and each part of the question (or name it
  asks about) that the sources mention but no kept claim addresses (``coverage``). Then only
  verified claims are kept; if none is kept, or the model abstained, the answer is a helpful
  abstention (what was asked, which documents were searched, what was missing, a next step).
  What the answer still leaves out is named (``Answer.unaddressed``). Nothing the model wrote
  is shown unverified: its note on what is missing only where it states no fact.
- A provider failure is a status (``provider_error``), never an exception out of ``ask``, and
  the trace is written in every case, with the retrieved keys beside every abstention.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, Protocol, cast

from .budget import Budget
from .cards import Card, ClaimCite, build_cards, document_of
from .contract import build_request, repair_request
from .corpus import Hit, LoadedDocument
from .coverage import (
    disagreeing,
    document_name,
    mentioned_in,
    named_documents,
    nearest_sentence,
    question_parts,
    states_no_fact,
    unaddressed,
)
from .entailment.base import Backend, Judgement, reads_documents
from .entailment.rerank import Reranked
from .entailment.tier import check_entailment, evidence_text
from .errors import TimeLimitError, WorkLimitError
from .fragments import LIST_MARK
from .ingest.chunker import chunk_document
from .packing import DEFAULT_BUDGET_CHARS, Pack, chunk_key, pack, pack_sources
from .providers.base import Completion, Provider, ProviderError, Request
from .reanchor import ANCHOR_SHARE, quoted_sentences, reanchor
from .reasons import AFTER_ENTAILMENT, NOT_CARRIED
from .sources import Source, WorkingSet
from .store import Store, TraceAttempt, TraceRecord, TraceSource
from .text.normalize import scrub
from .verdict import Policy, Verdict, with_kept_from
from .verify import verify

log = logging.getLogger("quotebound.retrieval")

_REPAIRABLE = frozenset({"partial", "ungrounded", "unparseable"})


@dataclass(frozen=True, slots=True)
class AnswerClaim:
    text: str
    cards: tuple[int, ...]  # card numbers, in order of citation
    cites: tuple[ClaimCite, ...] = ()  # each valid citation: card, source id, span

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "cards": list(self.cards),
            "cites": [x.to_dict() for x in self.cites],
        }


@dataclass(frozen=True, slots=True)
class Abstention:
    question: str
    searched: tuple[str, ...]  # titles (keys) of the documents that were searched and sent
    missing: str
    next_step: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "searched": list(self.searched),
            "missing": self.missing,
            "next_step": self.next_step,
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """A source the answer does not cite that gives other figures than one of its claims
    (``coverage.disagreeing``): the reader is told to check which applies."""

    claim: int  # 1-based, in the answer's claims
    source: str  # the id it was sent under
    label: str  # its title or document
    updated: str | None
    sentence: str  # as it stands in the sent text

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "source": self.source,
            "label": self.label,
            "updated": self.updated,
            "sentence": self.sentence,
        }


AnswerStatus = Literal["grounded", "partial", "abstained", "provider_error"]


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    status: AnswerStatus
    claims: tuple[AnswerClaim, ...] = ()
    cards: tuple[Card, ...] = ()
    abstention: Abstention | None = None
    trace_id: str | None = None
    model: str | None = None
    repaired: bool = False
    error: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # Parts of the question (or names it asks about) that the sources mention and no kept
    # claim addresses (``coverage.unaddressed``): said to the reader beside the claims.
    unaddressed: tuple[str, ...] = ()
    # The answer check's judgement of the kept claims' quotes (``AskOptions.answer_check``).
    answer_check: Judgement | None = None
    # Sources not cited that give other figures than a kept claim, still after the repair.
    conflicts: tuple[Conflict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        a = self.abstention
        return {
            "question": self.question,
            "status": self.status,
            "unaddressed": list(self.unaddressed),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "answer_check": None if self.answer_check is None else self.answer_check.to_dict(),
            "claims": [c.to_dict() for c in self.claims],
            "cards": [c.to_dict() for c in self.cards],
            "abstention": None if a is None else a.to_dict(),
            "trace_id": self.trace_id,
            "model": self.model,
            "repaired": self.repaired,
            "error": self.error,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "counts": self.counts,
            "timings": self.timings,
        }


AnswerCheck = Callable[[str, str], Judgement]


class Reranker(Protocol):
    """What ``AskOptions.rerank`` is: ``rerank(question, hits)`` re-orders the store's first
    ``depth`` hits (``entailment.rerank.DenseReranker``)."""

    depth: int

    def rerank(self, question: str, hits: Sequence[Hit]) -> Reranked: ...


@dataclass(frozen=True, slots=True)
class AskOptions:
    corpora: Sequence[str] | None = None
    groups: Sequence[str] = ()
    format: str = "json"
    limit: int = 20
    budget_chars: int = DEFAULT_BUDGET_CHARS
    max_tokens: int = 1024
    policy: Policy = field(default_factory=Policy)
    owner: str | None = None
    entailment: Backend | None = None  # the optional entailment tier, run after the code checks
    work: Budget | None = None  # what verifying one attempt may cost (None: no limit)
    # Do the kept claims' verified quotes answer the question? ``check(question, evidence)``
    # (``JudgeBackend.answers``), also sent ``documents=`` (the cited sources' titles) when it
    # takes that keyword; an answer it refuses becomes an abstention. None: not run.
    answer_check: AnswerCheck | None = None
    # Re-cite a claim whose quotes did not carry it to the sentence of the sources that does
    # (``reanchor.reanchor``); the entailment tier then judges that sentence. False: the model's
    # own citations only.
    reanchor: bool = True
    # Serve a claim the entailment tier alone dropped (its quote verbatim, on its words, and
    # the tier did not follow the model's paraphrase) as the cited source's own sentence
    # (``reanchor.quoted_sentences``; the answer check then judges it like any claim). False:
    # such a claim is dropped.
    source_sentences: bool = True
    # When the answer would be an abstention (nothing verified, the model's own abstention, or
    # the answer check refused it), ask this provider the first request once more: the
    # extractive one answers with the sources' own sentences. Its answer is verified, support-
    # checked and answer-checked like the model's and served only if it passes (traced as one
    # more attempt: ``counts.fallback_asked``, and ``fallback_attempt`` when served). Never
    # asked when it is the answering provider's own kind. None: no fallback.
    fallback: Provider | None = None
    # Re-order the store's hits before packing (``entailment.rerank.DenseReranker``: BM25's
    # first ``depth`` fused with MiniLM's cosine to the question); the store is asked for at
    # least ``depth`` hits, the first ``limit`` of the new order are packed. A reranker that
    # fails leaves BM25's order (``counts.reranked`` 0). None: BM25's order.
    rerank: Reranker | None = None
    # Put first the chunks of the documents the question names (``coverage.named_documents``:
    # "... for Northwind Health Plus?" names Northwind_Health_Plus_Benefits_Details.pdf and not
    # Northwind_Standard_Benefits_Details.pdf), among the store's first ``NAMED_DEPTH`` hits,
    # each part in the order it had (``counts.named_documents``). False: no such order.
    named_first: bool = True


# How deep in the store's hits ``AskOptions.named_first`` looks for the named documents' chunks.
NAMED_DEPTH = 50


class _Clock:
    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.timings: dict[str, float] = {}

    def lap(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + (now - since) * 1000, 3)
        return now


Progress = Callable[[str, dict[str, Any]], None]


def _silent(stage: str, data: dict[str, Any]) -> None:
    return None


def ask(
    question: str,
    store: Store,
    provider: Provider,
    options: AskOptions | None = None,
    progress: Progress | None = None,
) -> Answer:
    """Answer ``question`` from the store's documents, every claim verified, and trace it.

    ``options`` None (or ``AskOptions()``) runs the bare pipeline: retrieve, pack, the
    contract, the code checks, one repair turn, cards and the trace; no support tier, no
    answer check, no reranking and no fallback, all of which ``quotebound ask`` runs by
    default. What it runs, from Python (``quotebound.defaults``, docs/answering.md)::

        with quotebound.defaults(provider) as d:
            answer = quotebound.ask(question, store, d.provider, d.options())

    ``progress(stage, data)`` is told each stage as it happens (``retrieved``, ``generating``,
    ``verified``, ``claims``, ``repairing``). It sees a claim only in ``claims``: before a
    repair turn, the first attempt's kept claims (``{"claims": [...], "cards": [...]}``, as
    ``Answer.to_dict`` has them), verified and certain to be served as the answer's first claims
    (not told when an answer check will judge the answer); nothing unverified can be shown.
    """
    opts = options or AskOptions()
    question = scrub(question)
    clock = _Clock()
    hits, reranked, named = retrieve(question, store, opts, clock)
    at = time.perf_counter()
    budget = min(opts.budget_chars, provider.context_chars or opts.budget_chars)
    packed = pack(hits, budget_chars=budget)
    clock.lap("retrieve_ms", at)
    return _answer_pack(
        question,
        packed,
        hits,
        provider,
        opts,
        progress,
        clock,
        store,
        reranked=reranked,
        named=len(named) if opts.named_first else None,
    )


def retrieve(
    question: str, store: Store, opts: AskOptions, clock: _Clock | None = None
) -> tuple[list[Hit], int | None, tuple[str, ...]]:
    """The store's hits for ``question`` as ``ask`` packs them: BM25's first
    ``opts.limit``, or with ``opts.rerank`` its first ``rerank.depth`` (at least the limit)
    re-ranked, then, with ``opts.named_first``, the chunks of the documents the question names
    first (among the first ``NAMED_DEPTH``), then cut to the limit. Returns the hits, whether
    they were re-ranked (1; 0: the reranker failed and BM25's order stands; None: no
    reranker) and the documents the question named (their keys; empty: none, or not asked)."""
    clock = clock or _Clock()
    at = time.perf_counter()
    rerank = opts.rerank
    wanted = max(
        opts.limit,
        rerank.depth if rerank is not None else 0,
        NAMED_DEPTH if opts.named_first else 0,
    )
    hits = store.search(question, corpora=opts.corpora, groups=opts.groups, limit=wanted)
    at = clock.lap("retrieve_ms", at)
    reranked = None
    if rerank is not None:
        result = rerank.rerank(question, hits)
        clock.lap("rerank_ms", at)
        if result.error is not None:  # the trace counts it; the reason goes to the log (stderr)
            log.warning("the reranker failed, BM25's order is used: %s", result.error)
        hits, reranked = list(result.hits), int(result.error is None)
    named: tuple[str, ...] = ()
    if opts.named_first:
        hits, named = named_documents_first(question, hits)
    return hits[: opts.limit], reranked, named


def named_documents_first(question: str, hits: Sequence[Hit]) -> tuple[list[Hit], tuple[str, ...]]:
    """``hits`` with the chunks of the documents ``question`` names first, each part in its
    order (``coverage.named_documents`` over the hits' documents), and those documents' keys
    (empty, and ``hits`` as they were, when it names none)."""
    titles = {h.key: h.title for h in hits[:NAMED_DEPTH]}  # a hit's key is its document's
    documents = list(titles)
    picked = named_documents(question, [document_name(d, titles[d]) for d in documents])
    if not picked:
        return list(hits), ()
    chosen = {documents[i] for i in picked}
    named = [i < NAMED_DEPTH and h.key in chosen for i, h in enumerate(hits)]
    first = [h for h, n in zip(hits, named, strict=True) if n]
    rest = [h for h, n in zip(hits, named, strict=True) if not n]
    return first + rest, tuple(d for d in documents if d in chosen)


def ask_sources(
    question: str,
    sources: Sequence[Source],
    provider: Provider,
    options: AskOptions | None = None,
    store: Store | None = None,
    progress: Progress | None = None,
) -> Answer:
    """``ask`` over sources retrieved elsewhere (a framework's retriever, best first) instead
    of the store's search: packed as ``ask`` packs its own hits (``pack_sources``), then the
    same contract, verification, repair, cards and abstention; traced to ``store`` when one is
    given (the trace reopens like any other; its sources are never looked up in the store's
    corpus: their text as sent is what the cards show). A source longer than a store chunk
    is cut into pieces as ingest cuts a document, so that it fits the budget."""
    opts = options or AskOptions()
    question = scrub(question)
    budget = min(opts.budget_chars, provider.context_chars or opts.budget_chars)
    packed = Pack(pack_sources(_pieces(sources, question), budget_chars=budget), (), ())
    clock = _Clock()
    return _answer_pack(question, packed, (), provider, opts, progress, clock, store, len(sources))


# A source offered from elsewhere longer than this is cut as ingest cuts a document.
PIECE_CHARS = 1200


def _pieces(sources: Sequence[Source], question: str) -> list[Source]:
    """``sources`` with each longer than ``PIECE_CHARS`` cut into whole-sentence pieces (the
    chunker's), each keeping its source's key, title, URL, date and page, in its source's
    place, those sharing more of the question's words first (then in their order)."""
    asked = {w for w in re.findall(r"\w+", question.casefold()) if len(w) > 2}
    out: list[Source] = []
    for src in sources:
        if len(src.text) <= PIECE_CHARS:
            out.append(src)
            continue
        doc = LoadedDocument(src.key or src.id, src.text, "text/plain")
        pieces = [replace(src, text=c.text) for c in chunk_document(doc, max_chars=PIECE_CHARS)]
        shared = [len(asked & set(re.findall(r"\w+", p.text.casefold()))) for p in pieces]
        order = sorted(range(len(pieces)), key=lambda i: -shared[i])  # (stable: then in order)
        out += [pieces[i] for i in order]
    return out


def check_answer(
    question: str,
    working_set: WorkingSet,
    output: str,
    options: AskOptions | None = None,
    store: Store | None = None,
    model: str = "external",
    prompt: str = "",
) -> Answer:
    """An answer a model gave elsewhere (the user's own stack, under whatever prompt),
    verified against ``working_set``, exactly what was sent, as ``ask`` verifies its own:
    the code checks, the support tier (``options.entailment``), re-anchoring; then the
    served ``Answer``: the kept claims with their cards, or a helpful abstention when none
    survives. No repair turn (there is no model to ask). Traced to ``store`` when given,
    with ``model`` and the ``prompt`` as sent, if known."""
    opts = options or AskOptions()
    question = scrub(question)
    clock = _Clock()
    packed = Pack(working_set, (), ())
    text = scrub(output)
    verdict = _judged(text, working_set, opts.format, opts, clock, clock.started)
    attempts = [TraceAttempt(text, verdict.to_dict())]
    return _finish(
        question,
        packed,
        (),
        [verdict],
        attempts,
        None,
        model,
        prompt,
        opts,
        clock,
        store,
        len(working_set),
    )


def reverify(trace: TraceRecord, options: AskOptions | None = None) -> Answer:
    """The answer a traced exchange gets under ``options`` (another support tier, an answer
    check, re-anchoring off): every attempt the model made, as the trace holds it, verified
    again against the sources exactly as sent, then served as ``ask`` serves (what either
    attempt kept, cards, abstention). No model is called and nothing is written; the repair
    turn's output is the one the model gave to the traced first verdict's failures. A traced
    fallback's attempt is not the model's: it is left out, and ``options.fallback``, when
    given, is asked the first request again as ``ask`` asks it."""
    opts = options or AskOptions()
    clock = _Clock()
    working_set = trace.working_set()
    verdicts: list[Verdict] = []
    attempts: list[TraceAttempt] = []
    error: str | None = None
    skipped = trace.counts.get("fallback_asked") or trace.counts.get("fallback_attempt", 0)
    for n, attempt in enumerate(trace.attempts, 1):
        if n == skipped:
            continue
        if attempt.error is not None:
            error = attempt.error
            attempts.append(attempt)
            continue
        fmt = (attempt.verdict or {}).get("format") or opts.format  # as it was read then
        verdict = _judged(attempt.output, working_set, fmt, opts, clock, clock.started)
        verdicts.append(verdict)
        attempts.append(TraceAttempt(attempt.output, verdict.to_dict()))
    fallback = None
    if opts.fallback is not None and len(working_set):
        caps = opts.fallback.capabilities
        first = build_request(
            trace.question, working_set, opts.format, caps, opts.max_tokens, opts.policy
        )
        fallback = partial(_attempt, opts.fallback, first, opts, attempts, verdicts, clock, _silent)
    return _finish(
        trace.question,
        Pack(working_set, (), ()),
        (),
        verdicts,
        attempts,
        error,
        trace.model or "unknown",
        trace.prompt or "",
        opts,
        clock,
        None,
        len(working_set),
        fallback,
    )


def _answer_pack(
    question: str,
    packed: Pack,
    hits: Sequence[Hit],
    provider: Provider,
    opts: AskOptions,
    progress: Progress | None,
    clock: _Clock,
    store: Store | None,
    offered: int | None = None,
    *,
    reranked: int | None = None,
    named: int | None = None,
) -> Answer:
    """Ask under the contract over a packed working set, verify, repair once, serve, trace
    (``offered``: how many sources were retrieved elsewhere, where no hits were; ``reranked``:
    as ``retrieve`` says, and ``named``, how many documents the question named, each counted
    in the trace)."""
    tell = progress or _silent
    retrieved = len(hits) if offered is None else offered
    tell(
        "retrieved",
        {
            "retrieved": retrieved,
            "packed": len(packed.working_set),
            "documents": list(dict.fromkeys(s.title or document_of(s) for s in packed.working_set)),
        },
    )
    request = build_request(
        question,
        packed.working_set,
        opts.format,
        provider.capabilities,
        opts.max_tokens,
        opts.policy,
    )
    attempts: list[TraceAttempt] = []
    verdicts: list[Verdict] = []
    error: str | None = None
    sent = request  # the last request: the whole conversation, repair turn included
    if len(packed.working_set):
        error = _attempt(provider, request, opts, attempts, verdicts, clock, tell)
        gaps = () if error is not None else _unaddressed(question, packed, verdicts[0])
        conflicts = [] if error is not None else _conflicts(packed, verdicts[0])
        if error is None and (verdicts[0].status in _REPAIRABLE or gaps or conflicts):
            native = provider.capabilities.native_citations
            shown = attempts[0].output
            if native:  # its citations were blocks: show it its own words, not our JSON
                shown = " ".join(c.text for c in verdicts[0].claims) or shown
            failures = (
                verdicts[0].failures
                + _nearest_hints(verdicts[0], packed)
                + _gap_failures(gaps, packed)
                + [_conflict_failure(c, verdicts[0]) for c in conflicts]
            )
            sent = repair_request(request, shown, failures, native=native)
            if verdicts[0].kept_claims and opts.answer_check is None:
                # Verified and certain to be served (a repair never costs a kept claim, and
                # they lead the answer): shown while the repair runs.
                early, cards = _served(verdicts[0], packed)
                shown_claims = [c.to_dict() for c in early]
                tell("claims", {"claims": shown_claims, "cards": [c.to_dict() for c in cards]})
            tell("repairing", {"failures": len(failures)})
            error = _attempt(provider, sent, opts, attempts, verdicts, clock, tell)
    fallback = None  # (never the provider itself again; nothing told: no model is writing)
    if opts.fallback is not None and opts.fallback.name != provider.name and packed.working_set:
        fallback = partial(
            _attempt, opts.fallback, request, opts, attempts, verdicts, clock, _silent
        )
    return _finish(
        question,
        packed,
        hits,
        verdicts,
        attempts,
        error,
        provider.model,
        _render(sent),
        opts,
        clock,
        store,
        retrieved,
        fallback,
        reranked,
        named,
    )


def _checked_answer(
    question: str,
    packed: Pack,
    final: Verdict | None,
    verdicts: list[Verdict],
    error: str | None,
    model: str,
    opts: AskOptions,
    clock: _Clock,
) -> Answer:
    """The answer ``final`` serves: its kept claims with what they leave out and the sources
    that disagree, then the answer check (an answer it refuses is an abstention)."""
    answer = _answer(question, packed, final, verdicts, error, model)
    if answer.claims and final is not None:
        answer = _with(
            answer,
            unaddressed=_unaddressed(question, packed, final),
            conflicts=tuple(_conflicts(packed, final)),
        )
        if opts.answer_check is not None:
            at = time.perf_counter()
            answer = _checked(answer, packed, final, opts.answer_check)
            clock.lap("answer_check_ms", at)
    return answer


def _finish(
    question: str,
    packed: Pack,
    hits: Sequence[Hit],
    verdicts: list[Verdict],
    attempts: list[TraceAttempt],
    error: str | None,
    model: str,
    prompt: str,
    opts: AskOptions,
    clock: _Clock,
    store: Store | None,
    retrieved: int | None = None,
    fallback: Callable[[], str | None] | None = None,
    reranked: int | None = None,
    named: int | None = None,
) -> Answer:
    """The served answer from the verdicts of the attempts made, traced to ``store``
    (``retrieved``: how many sources were offered, where they were not the store's hits;
    ``fallback``: one more attempt, made when the answer would be an abstention; it returns
    its error, as ``_attempt`` does)."""
    final = _best(verdicts)
    repaired = len(verdicts) > 1
    models = list(verdicts)  # the model's verdicts (a fallback's is not the model's)
    answer = _checked_answer(question, packed, final, verdicts, error, model, opts, clock)
    refused = answer.answer_check is not None and not answer.answer_check.supported
    checks: list[dict[str, Any]] = []  # each check's judgement, for the trace
    if answer.answer_check is not None and final is not None:
        checks.append({"attempt": _attempt_of(final, verdicts), **answer.answer_check.to_dict()})
    asked = used = 0  # the fallback's attempt (1-based): asked, and served
    if fallback is not None and answer.status == "abstained":
        failed = fallback()
        asked = len(attempts)
        if failed is None:
            extra = verdicts[-1]
            again = _checked_answer(question, packed, extra, verdicts, None, model, opts, clock)
            refused = refused or (again.answer_check is not None and not again.claims)
            if again.answer_check is not None:
                checks.append({"attempt": asked, **again.answer_check.to_dict()})
            if again.claims:
                answer, final, used = again, extra, asked
            else:  # the model's abstention stands; the fallback's attempt is in the trace
                answer = _with(answer, verdicts=tuple(verdicts))
        answer = _with(answer, repaired=repaired)
    counts = _counts(hits, packed, models, answer)
    if asked:
        counts["fallback_asked"] = asked
    if used:
        counts["fallback_attempt"] = used
    if retrieved is not None:
        counts["retrieved"] = retrieved
    if reranked is not None:  # 1: the hits were re-ranked; 0: the reranker failed (BM25's order)
        counts["reranked"] = reranked
    if named is not None:  # the documents the question named, their chunks put first
        counts["named_documents"] = named
    counts["unaddressed"] = len(answer.unaddressed)
    counts["conflicts"] = len(answer.conflicts)
    if answer.answer_check is not None or refused:  # the check refused an answer of this ask
        counts["answer_check_refused"] = int(refused)
    if final is not None:  # which attempt's verdict the answer shows (1-based)
        base = final if final in verdicts else verdicts[-1]
        counts["served_attempt"] = _attempt_of(final, verdicts)
        counts["kept_from_first_attempt"] = len(final.claims) - len(base.claims)
    clock.timings["total_ms"] = round((time.perf_counter() - clock.started) * 1000, 3)
    trace = TraceRecord(
        question=question,
        sources=TraceSource.of_pack(packed)
        if packed.hits
        else tuple(TraceSource.of(src) for src in packed.working_set),
        attempts=tuple(attempts),
        prompt=prompt,
        model=model,
        corpus=",".join(opts.corpora) if opts.corpora else None,
        status=answer.status,
        owner=opts.owner,
        timings=clock.timings,
        counts=counts,
        retrieved=tuple(chunk_key(h) for h in hits),
        answer_checks=tuple(checks),
    )
    if store is None:
        return _with(answer, counts=counts, timings=clock.timings)
    store.write_trace(trace)
    return _with(answer, trace_id=trace.id, counts=counts, timings=clock.timings)


def _attempt_of(verdict: Verdict, verdicts: list[Verdict]) -> int:
    """The attempt (1-based) whose verdict ``verdict`` is; one merged with the first attempt's
    kept claims (``with_kept_from``) is the last attempt's."""
    return (verdicts.index(verdict) if verdict in verdicts else len(verdicts) - 1) + 1


def _attempt(
    provider: Provider,
    request: Request,
    opts: AskOptions,
    attempts: list[TraceAttempt],
    verdicts: list[Verdict],
    clock: _Clock,
    tell: Progress,
) -> str | None:
    """One model call and its verdict; the provider's error message on failure."""
    tell("generating", {"attempt": len(attempts) + 1})
    at = time.perf_counter()
    try:
        completion: Completion = provider.complete(request)
    except ProviderError as exc:
        clock.lap("generate_ms", at)
        error = f"{exc.kind}: {exc}"
        attempts.append(TraceAttempt("", error=error))
        return error
    at = clock.lap("generate_ms", at)
    text = scrub(completion.text)
    fmt = provider.capabilities.answers_in or request.format
    verdict = _judged(text, request.working_set, fmt, opts, clock, at, request.policy)
    attempts.append(TraceAttempt(text, verdict.to_dict()))
    verdicts.append(verdict)
    tell(
        "verified",
        {
            "attempt": len(attempts),
            "status": verdict.status,
            "kept": len(verdict.kept_claims),
            "claims": len(verdict.claims),
        },
    )
    return None


def _judged(
    text: str,
    ws: WorkingSet,
    fmt: str,
    opts: AskOptions,
    clock: _Clock,
    at: float,
    policy: Policy | None = None,
) -> Verdict:
    """A model's output verified against ``ws``: the code checks, then re-anchoring and the
    support tier as ``opts`` asks. The writing rules are enforced (``Policy.strict``): what
    ``ask`` serves is whole sentences, and the repair turn names a fragment to its model."""
    policy = replace(policy or opts.policy, strict=True)
    try:
        verdict = verify(ws, text, fmt, policy, opts.work)
    except (WorkLimitError, TimeLimitError) as exc:  # more than the budget: it cannot be served
        verdict = Verdict("unparseable", fmt, error=str(exc), allowed_ids=ws.ids)
    if opts.entailment is None:
        if opts.reanchor:  # nothing judges a placed sentence next: all of the claim's words
            verdict = reanchor(verdict, ws, policy, share=1.0)
        clock.lap("verify_ms", at)
    else:
        at = clock.lap("verify_ms", at)
        sentences = policy.sentences
        verdict = check_entailment(verdict, ws, opts.entailment, sentences=sentences)
        if opts.reanchor:  # then the tier judges what was placed (and only that)
            placed = reanchor(verdict, ws, policy, ANCHOR_SHARE, AFTER_ENTAILMENT)
            if placed is not verdict:
                verdict = check_entailment(placed, ws, opts.entailment, sentences=sentences)
        if opts.source_sentences:  # what the tier still refuses: the quote's own sentence
            verdict = quoted_sentences(verdict, ws, policy)
        clock.lap("entailment_ms", at)
    return verdict


def _unaddressed(question: str, packed: Pack, verdict: Verdict) -> tuple[str, ...]:
    """What of the question the sources mention and the verdict's kept claims leave out (none
    when nothing is kept: that is an abstention, or a repair for other reasons)."""
    if not verdict.kept_claims:
        return ()
    answered = [c.text for c in verdict.kept_claims]
    answered += [x.quote for c in verdict.kept_claims for x in c.citations if x.valid and x.quote]
    return unaddressed(question, (src.text for src in packed.working_set), answered)


def _conflicts(packed: Pack, verdict: Verdict) -> list[Conflict]:
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


def _conflict_failure(conflict: Conflict, verdict: Verdict) -> str:
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


def _checked(answer: Answer, packed: Pack, final: Verdict, check: AnswerCheck) -> Answer:
    """``answer`` if the answer check finds that its verified quotes answer the question (one
    part of it is enough), else an abstention that says so: verified quotes on the topic that
    do not answer what was asked are not an answer."""
    quotes = [
        text
        for claim in final.kept_claims
        for cite in claim.citations
        if cite.valid
        and (text := evidence_text(packed.working_set, cite.source, cite.quote, cite.parts))
    ]
    evidence = " ".join(dict.fromkeys(quotes))
    titles = _titles(packed, final)
    judge: AnswerCheck = check
    if titles and reads_documents(check):
        judge = partial(cast(Callable[..., Judgement], check), documents=titles)
    parts = question_parts(answer.question) or [answer.question]
    for part in parts[:-1]:
        judged = judge(part, evidence)
        if judged.supported:
            return _with(answer, answer_check=judged)
    judged = judge(parts[-1], evidence)
    if judged.supported:
        return _with(answer, answer_check=judged)
    searched = _searched(packed)
    return _with(
        answer,
        status="abstained",
        claims=(),
        cards=(),
        unaddressed=(),
        answer_check=judged,
        abstention=Abstention(
            answer.question,
            searched,
            "the passages found are about the topic, but their verified sentences do not "
            "answer what was asked",
            "Rephrase with the documents' own terms, or ask the owner of these documents.",
        ),
    )


MAX_TITLES = 5  # the cited documents' titles an answer check is sent, at most
MAX_TITLE_CHARS = 200  # each cut to this many characters


def _titles(packed: Pack, final: Verdict) -> tuple[str, ...]:
    """The titles of the sources the kept claims validly cite (each once, in citation order,
    at most ``MAX_TITLES``, each cut to ``MAX_TITLE_CHARS``): which document the quotes come
    from, that a quote need not repeat ("The first series was filmed in Yorkshire." in *Last
    Tango in Halifax*)."""
    cited = [c.source for k in final.kept_claims for c in k.citations if c.valid and c.source]
    titles: dict[str, None] = {}
    for sid in cited:
        src = packed.working_set.get(sid)
        title = " ".join((src.title or "").split()) if src is not None else ""
        if title:
            titles.setdefault(title[:MAX_TITLE_CHARS], None)
    return tuple(titles)[:MAX_TITLES]


def _nearest_hints(verdict: Verdict, packed: Pack) -> list[str]:
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


def _gap_failures(gaps: tuple[str, ...], packed: Pack) -> list[str]:
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


def _best(verdicts: list[Verdict]) -> Verdict | None:
    """The repaired verdict with what the first attempt kept and the repair left out
    (``verdict.with_kept_from``: a repair must not cost); the first when the repair abstained
    or could not be read and the first kept more."""
    if not verdicts:
        return None
    best = verdicts[-1]
    if len(verdicts) == 1 or best.status in ("abstained", "unparseable"):
        first = verdicts[0]
        return first if len(first.kept_claims) > len(best.kept_claims) else best
    return with_kept_from(verdicts[0], best)


def _served(verdict: Verdict, packed: Pack) -> tuple[tuple[AnswerClaim, ...], list[Card]]:
    """The kept claims of ``verdict`` as the answer serves them (``served_text``), and their
    cards. A claim written twice (the same served text, case aside) is served once, where it
    first stood, with the citations of both: a repeat is the model's slip, not a second fact."""
    cards, per_claim = build_cards(verdict, packed.working_set)
    merged: dict[str, tuple[str, list[ClaimCite]]] = {}
    for c, cites in zip(verdict.kept_claims, per_claim, strict=True):
        text = served_text(c.text)
        _, held = merged.setdefault(text.casefold(), (text, []))
        held.extend(x for x in cites if x not in held)
    claims = tuple(
        AnswerClaim(text, tuple(dict.fromkeys(x.card for x in cites)), tuple(cites))
        for text, cites in merged.values()
    )
    return claims, cards


def served_text(claim: str) -> str:
    """A verified claim as the answer shows it: its whitespace runs (a PDF's line breaks
    copied with a quote) made one space, a leading list mark dropped. Only the layout: the
    verdict and the trace keep the model's text as written."""
    plain = " ".join(claim.split())
    return LIST_MARK.sub("", plain, count=1) if LIST_MARK.match(plain) else plain


def _answer(
    question: str,
    packed: Pack,
    final: Verdict | None,
    verdicts: list[Verdict],
    error: str | None,
    model: str,
) -> Answer:
    repaired = len(verdicts) > 1
    if final is not None and final.kept_claims:
        claims, cards = _served(final, packed)
        status: AnswerStatus = "grounded" if final.status == "grounded" else "partial"
        return Answer(
            question,
            status,
            claims,
            tuple(cards),
            model=model,
            repaired=repaired,
            error=error,
            verdicts=tuple(verdicts),
        )
    if error is not None and final is None:
        return Answer(
            question,
            "provider_error",
            abstention=_abstention(question, packed, None, error),
            model=model,
            error=error,
            verdicts=tuple(verdicts),
        )
    return Answer(
        question,
        "abstained",
        abstention=_abstention(question, packed, final, error),
        model=model,
        repaired=repaired,
        error=error,
        verdicts=tuple(verdicts),
    )


def _searched(packed: Pack) -> tuple[str, ...]:
    """The titles (else keys) of the documents sent, each once, in order."""
    return tuple(dict.fromkeys(src.title or document_of(src) for src in packed.working_set))


def _abstention(
    question: str, packed: Pack, final: Verdict | None, error: str | None
) -> Abstention:
    searched = _searched(packed)
    if not searched:
        return Abstention(
            question,
            (),
            "no document you may read matched the question",
            "Check the corpus name and your access groups, or ingest the documents that cover "
            "this topic.",
        )
    if error is not None:
        missing = f"the model could not be reached ({error})"
        step = "Try again later, or use the extractive provider, which needs no model."
    elif final is not None and final.status == "unparseable":
        missing = f"the model's answer could not be read ({final.error})"
        step = "Try again, or use the extractive provider, which always answers verbatim."
    elif final is not None and final.status == "abstained":
        missing = _said(final.missing, question) or "the documents searched do not state this"
        step = "Rephrase with the documents' own terms, or ask the owner of these documents."
    else:
        missing = "no claim in the answer could be verified against the documents searched"
        step = "Rephrase the question more narrowly, or read the documents searched directly."
    return Abstention(question, searched, missing, step)


# What small models write into "missing" when they have nothing to say: field names, fillers.
_EMPTY_NOTES = frozenset({"", "answerable", "missing", "none", "null", "n/a", "na", "unknown", "-"})


def _said(note: str | None, question: str) -> str | None:
    """The model's note on what is missing, only where it says something and states no fact
    (``coverage.states_no_fact``): not a field name or "none", not a guess at the answer."""
    if note is None or note.strip().strip(".").lower() in _EMPTY_NOTES:
        return None
    return note.strip() if states_no_fact(note, question) else None


def _counts(
    hits: Sequence[Any], packed: Pack, verdicts: list[Verdict], answer: Answer
) -> dict[str, int]:
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


def _render(request: Request) -> str:
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in request.messages)


def _with(answer: Answer, **changes: Any) -> Answer:
    return replace(answer, **changes)
