"""One conversation with an assistant: the passages it was given, and what it wrote checked
against exactly those.

An assistant searches (``search``), reads, writes an answer citing the ids it was given, and
checks it (``verify``) before it answers; it may open a citation (``open``) or have quotebound
answer a question whole (``ask``, the pipeline with ``quotebound ask``'s defaults). The
allowlist is the conversation's: every passage ``search`` returned, each under the id it was
first sent with (S1, S2, ... in order; the same chunk returned again keeps its id), and only
those. An id never sent in this conversation is ``unknown_source``, whatever the store holds.

Every search and every verification is traced to the store as ``ask`` traces (the passages as
sent, content-addressed, with their document offsets; the answer and its verdict), under the
caller's key: a citation reopens from the trace weeks later. No MCP type is imported here: the
server (``quotebound.mcp.server``) maps these results and ``InputError`` onto the protocol.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..budget import Budget
from ..errors import InputError
from ..packing import Pack, chunk_key, source_of
from ..pipeline import Answer, AskOptions
from ..repair import nearest_hints
from ..sources import Source, WorkingSet
from ..store import TraceAttempt, TraceRecord, TraceSource
from ..store.base import SEARCH_ONLY
from ..store.pool import Connections
from ..traceview import source_view, trace_dict
from ..verdict import Policy, Verdict
from ..verify import verify

MAX_QUERY_CHARS = 4_000  # a question or a search query, at most
MAX_LIMIT = 50  # passages one search returns, at most
MAX_SENT = 1_000  # passages one conversation holds; past it, start another conversation
DEFAULT_LIMIT = 8
TRACE_URI = "quotebound://trace/{trace_id}"
SOURCE_URI = "quotebound://trace/{trace_id}/sources/{sid}"

# What ``ask`` runs: made once by the server (the provider and the defaults' parts), called
# with the question, where to take a store connection (once its turn comes: a question waiting
# for the model holds none) and the options of this conversation's caller.
Asker = Callable[[str, Connections, AskOptions], Answer]


@dataclass
class _Sent:
    source: Source
    traced: TraceSource
    trace_id: str  # the trace that recorded it as sent


@dataclass
class Conversation:
    """What one conversation was given, checked against, and traced under its caller."""

    stores: Connections  # a connection per call (``store.pool``: a pool, or one store)
    groups: tuple[str, ...] = ()  # the ACL groups the caller reads as
    owner: str | None = None  # the caller's key id: the owner of the traces written
    corpora: tuple[str, ...] | None = None  # searched when a call names none (None: all)
    budget: Budget = field(default_factory=Budget)
    policy: Policy = field(default_factory=Policy)
    asker: Asker | None = None
    # held while this conversation's passages are read or given ids (its own calls may run
    # side by side; other conversations' do not wait for it)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _sent: dict[str, _Sent] = field(default_factory=dict)
    _ids: dict[tuple[str, int], str] = field(default_factory=dict)  # (chunk key, version) -> id
    _quotes: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # id -> spans

    # -- the tools --------------------------------------------------------------------------

    def search(
        self, query: str, corpus: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> dict[str, Any]:
        """The store's passages for ``query`` that the caller may read, best first, each under
        its id in this conversation, recorded as sent."""
        query = _text(query, "query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InputError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
        corpora = self._corpora(corpus)
        with self.stores.checkout() as store, self.lock:
            hits = store.search(query, corpora=corpora, groups=self.groups, limit=limit)
            fresh = [h for h in hits if (chunk_key(h), h.version) not in self._ids]
            if len(self._sent) + len(fresh) > MAX_SENT:
                raise InputError(
                    f"this conversation holds {len(self._sent)} passages, and at most "
                    f"{MAX_SENT}: start a new conversation"
                )
            placed: list[tuple[Source, TraceSource]] = []
            for hit in hits:
                sid = self._ids.get((chunk_key(hit), hit.version))
                if sid is None:
                    sid = f"S{len(self._sent) + len(placed) + 1}"
                src = source_of(hit, sid)
                placed.append((src, TraceSource.of(src, hit.start, hit.end, hit.version)))
            trace = TraceRecord(
                question=query,
                sources=tuple(traced for _, traced in placed),
                model="mcp",
                corpus=",".join(corpora) if corpora else None,
                status=SEARCH_ONLY,
                owner=self.owner,
                counts={"retrieved": len(hits)},
                retrieved=tuple(chunk_key(h) for h in hits),
            )
            store.write_trace(trace)
            for (src, traced), hit in zip(placed, hits, strict=True):
                if src.id not in self._sent:
                    self._sent[src.id] = _Sent(src, traced, trace.id)
                    self._ids[(chunk_key(hit), hit.version)] = src.id
        return {
            "query": query,
            "trace_id": trace.id,
            "passages": [_passage(src) for src, _ in placed],
            "sent": len(self._sent),
        }

    def verify(self, answer: str, format: str = "auto", question: str = "") -> dict[str, Any]:
        """``answer`` checked against the passages this conversation was given: each claim
        kept or dropped with ``verify``'s reason codes, and what to mend (the repair turn's
        words); traced."""
        if not isinstance(answer, str) or not answer.strip():
            raise InputError("answer must be the text you wrote, citing the passages' ids")
        question = "" if question is None else _text(question, "question", empty_ok=True)
        with self.stores.checkout() as store, self.lock:
            if not self._sent:
                raise InputError(
                    "nothing was sent in this conversation yet: search first, then cite the "
                    "ids of the passages it returned"
                )
            ws = WorkingSet(s.source for s in self._sent.values())
            verdict = verify(ws, answer, format, self.policy, self.budget)
            repair = list(
                dict.fromkeys(verdict.failures + nearest_hints(verdict, Pack(ws, (), ())))
            )
            for claim in verdict.claims:
                for cite in claim.citations:
                    if cite.valid and cite.source and cite.span:
                        spans = self._quotes.setdefault(cite.source, [])
                        if cite.span not in spans:
                            spans.append(cite.span)
            trace = TraceRecord(
                question=question or "(an assistant's answer, verified over MCP)",
                sources=tuple(s.traced for s in self._sent.values()),
                attempts=(TraceAttempt(answer, verdict.to_dict()),),
                model="assistant",
                status=verdict.status,
                owner=self.owner,
                counts=verdict.counts(),
            )
            store.write_trace(trace)
        return _verdict_result(verdict, repair, trace.id)

    def open(self, citation: str) -> dict[str, Any]:
        """A passage of this conversation as it was sent, the quotes verified from it marked
        (``[[`` and ``]]``), with its document's link and the trace it reopens from."""
        sid = _text(citation, "citation").strip()
        with self.lock:
            sent = self._sent.get(sid)
            spans = sorted(self._quotes.get(sid, []))
        if sent is None:
            known = ", ".join(list(self._sent)[:20]) or "none yet: search first"
            raise InputError(f"{sid!r} was never sent in this conversation (sent: {known})")
        src = sent.source
        return {
            **_passage(src),
            "marked": _marked(src.text, spans),
            "quotes": [{"start": a, "end": b, "text": src.text[a:b]} for a, b in spans],
            "trace_id": sent.trace_id,
            "resource": SOURCE_URI.format(trace_id=sent.trace_id, sid=sid),
        }

    def ask(self, question: str, corpus: str | None = None) -> dict[str, Any]:
        """``question`` answered by the whole pipeline (``quotebound ask``'s defaults): the
        verified claims with their cards, or a helpful abstention; traced."""
        question = _text(question, "question")
        if self.asker is None:
            raise InputError("this server answers no questions itself (started with --no-ask)")
        options = AskOptions(
            corpora=self._corpora(corpus), groups=self.groups, owner=self.owner, work=self.budget
        )
        return _answer_result(self.asker(question, self.stores, options))

    # -- resources --------------------------------------------------------------------------

    def trace(self, trace_id: str) -> dict[str, Any]:
        """A trace this conversation's caller owns, as ``quotebound trace --json`` shows it."""
        return trace_dict(self._own_trace(trace_id))

    def traced_source(self, trace_id: str, sid: str) -> dict[str, Any]:
        """A source of a trace the caller owns, as sent, its verified quotes marked."""
        return source_view(self._own_trace(trace_id), sid)  # (NotFoundError: never sent)

    def _own_trace(self, trace_id: str) -> TraceRecord:
        """A trace by id: over HTTP only the key's own (another's is not found, as ``serve``
        answers); over stdio (no key) any trace of the store, as ``quotebound trace``."""
        with self.stores.checkout() as store:
            return store.get_trace(_text(trace_id, "trace id"), owner=self.owner)

    def _corpora(self, corpus: str | None) -> tuple[str, ...] | None:
        if corpus is None or corpus == "":
            return self.corpora
        name = _text(corpus, "corpus")
        with self.stores.checkout() as store:
            readable = [
                d
                for d in store.documents(name)
                if not d.deleted and (not d.acl or set(d.acl) & set(self.groups))
            ]
        if not readable:
            raise InputError(f"no corpus {name!r} with documents you may read")
        return (name,)


def _text(value: Any, what: str, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InputError(f"{what} holds a NUL character")
    if not value.strip() and not empty_ok:
        raise InputError(f"{what} is empty")
    if len(value) > MAX_QUERY_CHARS:
        raise InputError(f"{what} is {len(value)} characters long; at most {MAX_QUERY_CHARS}")
    return value.strip()


def _passage(src: Source) -> dict[str, Any]:
    return {
        "id": src.id,
        "title": src.title,
        "page": src.page,
        "url": src.url,
        "key": src.key,
        "text": src.text,
    }


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for a, b in spans:
        if a < at:  # overlapping quotes: marked once, from where the last one ended
            a = at
        if a >= b:
            continue
        out += [text[at:a], "[[", text[a:b], "]]"]
        at = b
    out.append(text[at:])
    return "".join(out)


def _verdict_result(verdict: Verdict, repair: list[str], trace_id: str) -> dict[str, Any]:
    claims = []
    for n, claim in enumerate(verdict.claims, 1):
        claims.append(
            {
                "n": n,
                "text": claim.text,
                "kept": claim.kept,
                "reason": claim.reason,
                "message": claim.message,
                "notes": list(claim.notes),
                "citations": [
                    {
                        "id": c.ref,
                        "valid": c.valid,
                        "reason": c.reason,
                        "quote": c.quote,
                        "message": c.message,
                    }
                    for c in claim.citations
                ],
            }
        )
    counts = verdict.counts()
    return {
        "status": verdict.status,
        "kept": counts["kept"],
        "dropped": counts["dropped"],
        "claims": claims,
        "repair": repair,
        "error": verdict.error,
        "trace_id": trace_id,
    }


def _answer_result(answer: Answer) -> dict[str, Any]:
    cards = [c.to_dict() for c in answer.cards]
    tid = answer.trace_id
    for card in cards:
        if tid is not None and card.get("source"):
            card["resource"] = SOURCE_URI.format(trace_id=tid, sid=card["source"])
    return {
        "status": answer.status,
        "claims": [c.to_dict() for c in answer.claims],
        "cards": cards,
        "abstention": None if answer.abstention is None else answer.abstention.to_dict(),
        "unaddressed": list(answer.unaddressed),
        "trace_id": tid,
        "resource": None if tid is None else TRACE_URI.format(trace_id=tid),
    }
