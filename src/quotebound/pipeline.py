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

The entry points, each making one ``run.Run``: ``ask`` (the store's hits), ``ask_sources``
(sources retrieved elsewhere), ``check_answer`` (an answer a model gave elsewhere) and
``reverify`` (a traced exchange under other options). Where each step lives: ``retrieval``
(hits), ``packing``, ``run`` (attempts, verification, the repair turn, serving, the trace),
``repair`` (what the repair turn is told), ``answer`` (what is served), ``tracing`` (counts).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .answer import Abstention, Answer, AnswerClaim, AnswerStatus, Conflict, served_text
from .asking import AnswerCheck, AskOptions, Clock, Progress, Reranker, silent
from .contract import build_request
from .entailment.heuristic import one_reading
from .packing import Pack, pack, pack_sources
from .providers.base import Provider
from .retrieval import NAMED_DEPTH, PIECE_CHARS, named_documents_first, pieces, retrieve
from .run import Run
from .sources import Source, WorkingSet
from .store import Store, TraceRecord
from .text.normalize import scrub

__all__ = [
    "NAMED_DEPTH",
    "PIECE_CHARS",
    "Abstention",
    "Answer",
    "AnswerCheck",
    "AnswerClaim",
    "AnswerStatus",
    "AskOptions",
    "Conflict",
    "Progress",
    "Reranker",
    "ask",
    "ask_sources",
    "check_answer",
    "named_documents_first",
    "retrieve",
    "reverify",
    "served_text",
]


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
    with one_reading():  # (each text of the answer embedded once)
        return _ask(question, store, provider, options or AskOptions(), progress)


def _ask(
    question: str,
    store: Store,
    provider: Provider,
    opts: AskOptions,
    progress: Progress | None,
) -> Answer:
    question = scrub(question)
    clock = Clock()
    hits, reranked, named = retrieve(question, store, opts, clock)
    at = time.perf_counter()
    budget = min(opts.budget_chars, provider.context_chars or opts.budget_chars)
    packed = pack(hits, budget_chars=budget)
    clock.lap("retrieve_ms", at)
    run = Run(
        question,
        packed,
        opts,
        hits=hits,
        store=store,
        tell=progress or silent,
        clock=clock,
        retrieved=len(hits),
        reranked=reranked,
        named=len(named) if opts.named_first else None,
    )
    return run.answer_with(provider)


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
    packed = Pack(pack_sources(pieces(sources, question), budget_chars=budget), (), ())
    run = Run(question, packed, opts, store=store, tell=progress or silent, retrieved=len(sources))
    with one_reading():
        return run.answer_with(provider)


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
    run = Run(
        question,
        Pack(working_set, (), ()),
        opts,
        store=store,
        model=model,
        prompt=prompt,
        retrieved=len(working_set),
    )
    text = scrub(output)
    with one_reading():
        run.record(text, run.verified(text, working_set, opts.format, run.clock.started))
        return run.serve()


def reverify(trace: TraceRecord, options: AskOptions | None = None) -> Answer:
    """The answer a traced exchange gets under ``options`` (another support tier, an answer
    check, re-anchoring off): every attempt the model made, as the trace holds it, verified
    again against the sources exactly as sent, then served as ``ask`` serves (what either
    attempt kept, cards, abstention). No model is called and nothing is written; the repair
    turn's output is the one the model gave to the traced first verdict's failures. A traced
    fallback's attempt is not the model's: it is left out, and ``options.fallback``, when
    given, is asked the first request again as ``ask`` asks it."""
    with one_reading():
        return _reverify(trace, options or AskOptions())


def _reverify(trace: TraceRecord, opts: AskOptions) -> Answer:
    clock = Clock()
    working_set = trace.working_set()
    run = Run(
        trace.question,
        Pack(working_set, (), ()),
        opts,
        clock=clock,
        model=trace.model or "unknown",
        prompt=trace.prompt or "",
        retrieved=len(working_set),
    )
    skipped = trace.counts.get("fallback_asked") or trace.counts.get("fallback_attempt", 0)
    for n, attempt in enumerate(trace.attempts, 1):
        if n == skipped:
            continue
        if attempt.error is not None:
            run.error = attempt.error
            run.attempts.append(attempt)
            continue
        fmt = (attempt.verdict or {}).get("format") or opts.format  # as it was read then
        verdict = run.verified(attempt.output, working_set, fmt, clock.started)
        run.record(attempt.output, verdict)
    if opts.fallback is not None and len(working_set):
        caps = opts.fallback.capabilities
        first = build_request(
            trace.question, working_set, opts.format, caps, opts.max_tokens, opts.policy
        )
        run.fallback = (opts.fallback, first)
    return run.serve()
