"""One answer in the making: ``Run`` carries what an ask was given (the question, the
working set packed, the options, the store, the clock, who is told of progress) and what it has
done (each attempt the model made and its verdict), and each of its methods is one step: make
an attempt, verify it, repair once, serve what survives (the answer check, the fallback), and
trace it. ``pipeline`` makes a run for each of its entry points."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, cast

from .answer import Abstention, Answer, AnswerStatus, abstention, searched, served_claims
from .asking import AnswerCheck, AskOptions, Clock, Progress, silent
from .cards import document_of
from .contract import build_request, repair_request
from .corpus import Hit
from .coverage import question_parts
from .entailment.base import Judgement, reads_documents
from .entailment.tier import check_entailment, evidence_text
from .errors import TimeLimitError, WorkLimitError
from .packing import Pack, chunk_key
from .providers.base import Completion, Provider, ProviderError, Request
from .reanchor import ANCHOR_SHARE, quoted_sentences, reanchor
from .reasons import AFTER_ENTAILMENT
from .repair import (
    conflict_failure,
    conflicts,
    gap_failures,
    nearest_hints,
    read_with_question,
    unaddressed_parts,
)
from .sources import WorkingSet
from .store import Store, TraceAttempt, TraceRecord, TraceSource
from .text.normalize import scrub
from .tracing import answer_counts, rendered
from .verdict import Policy, Verdict, with_kept_from
from .verify import verify

_REPAIRABLE = frozenset({"partial", "ungrounded", "unparseable"})


@dataclass(eq=False, slots=True)
class Run:
    """One ask, from the working set packed to the answer served and traced."""

    question: str
    packed: Pack
    opts: AskOptions
    hits: Sequence[Hit] = ()  # the store's hits (none where the sources came from elsewhere)
    store: Store | None = None  # where the trace is written (None: not traced)
    tell: Progress = silent
    clock: Clock = field(default_factory=Clock)
    model: str = "unknown"  # the answering model, as the trace names it
    prompt: str = ""  # the conversation as sent, repair turn included
    retrieved: int | None = None  # how many sources were offered (hits, or sources given)
    reranked: int | None = None  # 1: re-ranked; 0: the reranker failed; None: none asked
    named: int | None = None  # the documents the question named, their chunks put first
    attempts: list[TraceAttempt] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)  # of the attempts that answered
    error: str | None = None  # the provider's error of the last attempt
    # asked once more, the first request, when the answer would be an abstention
    fallback: tuple[Provider, Request] | None = None
    # the tokens the models reported, over every attempt (``input_tokens``, ``output_tokens``)
    tokens: dict[str, int] = field(default_factory=dict)

    # -- the steps ---------------------------------------------------------------------------

    def answer_with(self, provider: Provider) -> Answer:
        """Ask ``provider`` under the contract over the working set, verify, repair once,
        then serve and trace (``serve``)."""
        ws, opts = self.packed.working_set, self.opts
        self.tell(
            "retrieved",
            {
                "retrieved": self.retrieved,
                "packed": len(ws),
                "documents": list(dict.fromkeys(s.title or document_of(s) for s in ws)),
            },
        )
        request = build_request(
            self.question, ws, opts.format, provider.capabilities, opts.max_tokens, opts.policy
        )
        self.model = provider.model
        sent = request  # the last request: the whole conversation, repair turn included
        if len(ws):
            self.error = self.attempt(provider, request)
            if self.error is None:
                sent = self.repair(provider, request) or request
        # (never the provider itself again; nothing told: no model is writing)
        if opts.fallback is not None and opts.fallback.name != provider.name and len(ws):
            self.fallback = (opts.fallback, request)
        self.prompt = rendered(sent)
        return self.serve()

    def repair(self, provider: Provider, request: Request) -> Request | None:
        """The repair turn, when the first verdict asks for one (a claim dropped, the output
        unreadable, a part of the question left out, a source that disagrees): its request,
        after the attempt is made; None when none was needed."""
        first = self.verdicts[0]
        gaps = unaddressed_parts(self.question, self.packed, first)
        disagree = conflicts(self.packed, first)
        if not (first.status in _REPAIRABLE or gaps or disagree):
            return None
        native = provider.capabilities.native_citations
        shown = self.attempts[0].output
        if native:  # its citations were blocks: show it its own words, not our JSON
            shown = " ".join(c.text for c in first.claims) or shown
        failures = (
            first.failures
            + nearest_hints(first, self.packed)
            + gap_failures(gaps, self.packed)
            + [conflict_failure(c, first) for c in disagree]
        )
        sent = repair_request(request, shown, failures, native=native)
        if first.kept_claims and self.opts.answer_check is None:
            # Verified and certain to be served (a repair never costs a kept claim, and they
            # lead the answer): shown while the repair runs.
            early, cards = served_claims(first, self.packed)
            shown_claims = [c.to_dict() for c in early]
            self.tell("claims", {"claims": shown_claims, "cards": [c.to_dict() for c in cards]})
        self.tell("repairing", {"failures": len(failures)})
        self.error = self.attempt(provider, sent)
        return sent

    def attempt(self, provider: Provider, request: Request, told: bool = True) -> str | None:
        """One model call and its verdict, recorded; the provider's error message on failure
        (``told``: progress is told of it)."""
        tell = self.tell if told else silent
        tell("generating", {"attempt": len(self.attempts) + 1})
        at = time.perf_counter()
        try:
            completion: Completion = provider.complete(request)
        except ProviderError as exc:
            self.clock.lap("generate_ms", at)
            error = f"{exc.kind}: {exc}"
            self.attempts.append(TraceAttempt("", error=error))
            return error
        at = self.clock.lap("generate_ms", at)
        self.count_tokens(completion.usage)
        text = scrub(completion.text)
        fmt = provider.capabilities.answers_in or request.format
        verdict = self.verified(text, request.working_set, fmt, at, request.policy)
        self.record(text, verdict)
        tell(
            "verified",
            {
                "attempt": len(self.attempts),
                "status": verdict.status,
                "kept": len(verdict.kept_claims),
                "claims": len(verdict.claims),
            },
        )
        return None

    def count_tokens(self, usage: dict[str, int]) -> None:
        """A call's token counts added to the run's, under Anthropic's names whatever the
        provider's (OpenAI's and llama.cpp's ``prompt_tokens`` and ``completion_tokens``)."""
        for name, alias in (
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
        ):
            n = usage.get(name, usage.get(alias))
            if isinstance(n, int) and n > 0:
                self.tokens[name] = self.tokens.get(name, 0) + n

    def record(self, text: str, verdict: Verdict) -> None:
        """An attempt's output and its verdict, as the trace keeps them."""
        self.attempts.append(TraceAttempt(text, verdict.to_dict()))
        self.verdicts.append(verdict)

    def verified(
        self, text: str, ws: WorkingSet, fmt: str, at: float, policy: Policy | None = None
    ) -> Verdict:
        """A model's output verified against ``ws``: the code checks, then re-anchoring and
        the support tier as the options ask. The writing rules are enforced
        (``Policy.strict``): what ``ask`` serves is whole sentences, and the repair turn names
        a fragment to its model; a claim that only restates the question is dropped
        (``repair.read_with_question``)."""
        opts, clock = self.opts, self.clock
        policy = replace(policy or opts.policy, strict=True)
        try:
            verdict = verify(ws, text, fmt, policy, opts.work)
        except (WorkLimitError, TimeLimitError) as exc:  # over the budget: it cannot be served
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
                verdict = quoted_sentences(verdict, ws, policy, self.question)
            clock.lap("entailment_ms", at)
        return read_with_question(self.question, verdict, ws, policy.sentences)

    def served(self, final: Verdict | None, error: str | None) -> Answer:
        """The answer ``final`` serves: its kept claims with what they leave out and the
        sources that disagree, then the answer check (an answer it refuses is an
        abstention)."""
        answer = _answer_of(self.question, self.packed, final, self.verdicts, error, self.model)
        if answer.claims and final is not None:
            answer = replace(
                answer,
                unaddressed=unaddressed_parts(self.question, self.packed, final),
                conflicts=tuple(conflicts(self.packed, final)),
            )
            if self.opts.answer_check is not None:
                at = time.perf_counter()
                answer = checked(answer, self.packed, final, self.opts.answer_check)
                self.clock.lap("answer_check_ms", at)
        return answer

    def serve(self) -> Answer:
        """The served answer from the verdicts of the attempts made (what either attempt
        kept), the fallback asked when it would be an abstention, traced to the store."""
        verdicts = self.verdicts
        final = best(verdicts)
        repaired = len(verdicts) > 1
        models = list(verdicts)  # the model's verdicts (a fallback's is not the model's)
        answer = self.served(final, self.error)
        refused = answer.answer_check is not None and not answer.answer_check.supported
        checks: list[dict[str, Any]] = []  # each check's judgement, for the trace
        if answer.answer_check is not None and final is not None:
            checks.append(
                {"attempt": _attempt_of(final, verdicts), **answer.answer_check.to_dict()}
            )
        asked = used = 0  # the fallback's attempt (1-based): asked, and served
        if self.fallback is not None and answer.status == "abstained":
            failed = self.attempt(*self.fallback, told=False)
            asked = len(self.attempts)
            if failed is None:
                extra = verdicts[-1]
                again = self.served(extra, None)
                refused = refused or (again.answer_check is not None and not again.claims)
                if again.answer_check is not None:
                    checks.append({"attempt": asked, **again.answer_check.to_dict()})
                if again.claims:
                    answer, final, used = again, extra, asked
                else:  # the model's abstention stands; the fallback's attempt is in the trace
                    answer = replace(answer, verdicts=tuple(verdicts))
            answer = replace(answer, repaired=repaired)
        counts = self.counts(models, answer, final, refused, asked, used)
        self.clock.timings["total_ms"] = round((time.perf_counter() - self.clock.started) * 1000, 3)
        if self.store is None:
            return replace(answer, counts=counts, timings=self.clock.timings)
        trace = self.trace(answer, counts, checks)
        self.store.write_trace(trace)
        return replace(answer, trace_id=trace.id, counts=counts, timings=self.clock.timings)

    # -- what the trace records ----------------------------------------------------------------

    def counts(
        self,
        models: list[Verdict],
        answer: Answer,
        final: Verdict | None,
        refused: bool,
        asked: int,
        used: int,
    ) -> dict[str, int]:
        """The trace's counts: every answer's (``tracing.answer_counts``) and this run's steps
        (the fallback asked and served, re-ranking, named documents, the answer check, the
        attempt served)."""
        verdicts = self.verdicts
        counts = answer_counts(self.hits, self.packed, models, answer)
        if asked:
            counts["fallback_asked"] = asked
        if used:
            counts["fallback_attempt"] = used
        if self.retrieved is not None:
            counts["retrieved"] = self.retrieved
        if self.reranked is not None:  # 1: re-ranked; 0: the reranker failed (BM25's order)
            counts["reranked"] = self.reranked
        if self.named is not None:  # the documents the question named, their chunks first
            counts["named_documents"] = self.named
        counts["unaddressed"] = len(answer.unaddressed)
        counts["conflicts"] = len(answer.conflicts)
        counts.update(self.tokens)  # what the models reported spending, where they did
        if answer.answer_check is not None or refused:  # the check refused an answer of this ask
            counts["answer_check_refused"] = int(refused)
        if final is not None:  # which attempt's verdict the answer shows (1-based)
            base = final if final in verdicts else verdicts[-1]
            counts["served_attempt"] = _attempt_of(final, verdicts)
            counts["kept_from_first_attempt"] = len(final.claims) - len(base.claims)
        return counts

    def trace(
        self, answer: Answer, counts: dict[str, int], checks: list[dict[str, Any]]
    ) -> TraceRecord:
        """The trace of this run: what was sent (the sources, the prompt), every attempt and
        its verdict, the answer's status, counts and timings."""
        packed, opts = self.packed, self.opts
        return TraceRecord(
            question=self.question,
            sources=TraceSource.of_pack(packed)
            if packed.hits
            else tuple(TraceSource.of(src) for src in packed.working_set),
            attempts=tuple(self.attempts),
            prompt=self.prompt,
            model=self.model,
            corpus=",".join(opts.corpora) if opts.corpora else None,
            status=answer.status,
            owner=opts.owner,
            timings=self.clock.timings,
            counts=counts,
            retrieved=tuple(chunk_key(h) for h in self.hits),
            answer_checks=tuple(checks),
        )


def best(verdicts: list[Verdict]) -> Verdict | None:
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


def _attempt_of(verdict: Verdict, verdicts: list[Verdict]) -> int:
    """The attempt (1-based) whose verdict ``verdict`` is; one merged with the first attempt's
    kept claims (``with_kept_from``) is the last attempt's."""
    return (verdicts.index(verdict) if verdict in verdicts else len(verdicts) - 1) + 1


def _answer_of(
    question: str,
    packed: Pack,
    final: Verdict | None,
    verdicts: list[Verdict],
    error: str | None,
    model: str,
) -> Answer:
    repaired = len(verdicts) > 1
    if final is not None and final.kept_claims:
        claims, cards = served_claims(final, packed)
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
            abstention=abstention(question, packed, None, error),
            model=model,
            error=error,
            verdicts=tuple(verdicts),
        )
    return Answer(
        question,
        "abstained",
        abstention=abstention(question, packed, final, error),
        model=model,
        repaired=repaired,
        error=error,
        verdicts=tuple(verdicts),
    )


def checked(answer: Answer, packed: Pack, final: Verdict, check: AnswerCheck) -> Answer:
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
            return replace(answer, answer_check=judged)
    judged = judge(parts[-1], evidence)
    if judged.supported:
        return replace(answer, answer_check=judged)
    documents = searched(packed)
    return replace(
        answer,
        status="abstained",
        claims=(),
        cards=(),
        unaddressed=(),
        answer_check=judged,
        abstention=Abstention(
            answer.question,
            documents,
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
