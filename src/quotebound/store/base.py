"""What every store backend provides, and the records it keeps.

Invariants (both backends, tested by one suite):
- Chunk texts are content-addressed: stored once per sha256, whatever document holds them.
- Documents are versioned, never overwritten: re-ingesting unchanged text is a no-op, changed
  text becomes version n+1 and the old version stays (traces point at it). Deleting a document
  only hides it from retrieval.
- Retrieval sees current, non-deleted versions only, in the caller's corpora, and only
  documents the caller's ACL groups may read (a document ingested without groups is public).
  The ACL filter is part of the query that ranks, so a chunk outside the caller's groups can
  never be returned, whatever its score.
- Traces are append-only: written once in one transaction, never updated, and they hold the
  exact texts that were sent, so a citation reopens from the trace, never from the corpus.
"""

from __future__ import annotations

import datetime as _dt
import re
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..corpus import Chunk, Hit, LoadedDocument
from ..packing import Pack
from ..sources import Source, SourceKind, WorkingSet
from .integrity import Backup, Report

IngestStatus = Literal["added", "unchanged", "updated", "new_version"]


@dataclass(frozen=True, slots=True)
class IngestResult:
    key: str
    version: int
    status: IngestStatus
    chunks: int


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    key: str
    corpus: str
    version: int
    title: str | None
    url: str | None
    updated: str | None
    media_type: str
    content_hash: str
    chunks: int
    current: bool
    deleted: bool
    acl: tuple[str, ...]
    supersedes: str | None = None


@dataclass(frozen=True, slots=True)
class Original:
    """A document version's original file, exactly as it was read at ingest."""

    hash: str  # sha256 of the bytes
    media_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class TraceSource:
    """One source exactly as it was sent in a request."""

    id: str
    text: str
    key: str | None = None
    title: str | None = None
    url: str | None = None
    updated: str | None = None
    kind: SourceKind = "document"
    page: int | None = None
    start: int | None = None  # offsets of the text in its document's canonical text
    end: int | None = None
    version: int | None = None

    @classmethod
    def of(
        cls,
        src: Source,
        start: int | None = None,
        end: int | None = None,
        version: int | None = None,
    ) -> TraceSource:
        return cls(
            src.id,
            src.text,
            src.key,
            src.title,
            src.url,
            src.updated,
            src.kind,
            src.page,
            start,
            end,
            version,
        )

    @classmethod
    def of_pack(cls, packed: Pack) -> tuple[TraceSource, ...]:
        """A pack's sources as a trace stores them: with their document offsets and version."""
        return tuple(
            cls.of(src, hit.start, hit.end, hit.version)
            for src, hit in zip(packed.working_set, packed.hits, strict=True)
        )

    def to_source(self) -> Source:
        return Source(
            id=self.id,
            text=self.text,
            key=self.key,
            title=self.title,
            url=self.url,
            updated=self.updated,
            kind=self.kind,
            page=self.page,
        )


# How traces written before 0005_attempt_errors recorded a failed model call: as its output,
# "<provider error: KIND> message". Read back as ``TraceAttempt.error``; never written now.
_LEGACY_ERROR = re.compile(r"\s*<provider error: ([a-z_]+)> ?(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TraceAttempt:
    """One model call: the raw output and the verdict on it (its ``to_dict()``), or, where
    the call failed, the provider's error (``"KIND: message"``) and no output or verdict."""

    output: str
    verdict: dict[str, Any] | None = None
    error: str | None = None

    @classmethod
    def read(cls, output: str, verdict: dict[str, Any] | None, error: str | None) -> TraceAttempt:
        """An attempt as stored; one stored in the legacy form gets its error as a field."""
        if error is None and verdict is None and (legacy := legacy_provider_error(output)):
            return cls("", None, legacy)
        return cls(output, verdict, error)


def legacy_provider_error(output: str) -> str | None:
    """``"KIND: message"`` when ``output`` is a failed call recorded the legacy way, else None
    (traces and review files written before provider errors were a field of their own)."""
    found = _LEGACY_ERROR.fullmatch(output)
    return None if found is None else f"{found.group(1)}: {found.group(2)}"


def new_trace_id() -> str:
    """Time-ordered, unguessable: 11 hex digits of milliseconds, then 12 random hex digits."""
    return f"{int(time.time() * 1000):011x}{secrets.token_hex(6)}"


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """Everything sent and received for one request."""

    question: str
    sources: tuple[TraceSource, ...]
    attempts: tuple[TraceAttempt, ...] = ()
    prompt: str | None = None
    model: str | None = None
    corpus: str | None = None
    status: str | None = None
    owner: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    retrieved: tuple[str, ...] = ()  # keys of every retrieved chunk, packed or not
    # Each answer check the ask ran, in order: the judged attempt (1-based) and the judgement
    # (``Judgement.to_dict()``: label, score, backend, version, detail, error)
    answer_checks: tuple[dict[str, Any], ...] = ()
    id: str = field(default_factory=new_trace_id)
    created_at: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")
    )

    def working_set(self) -> WorkingSet:
        """The working set exactly as it was sent: the allowlist for reopening citations."""
        return WorkingSet(s.to_source() for s in self.sources)

    def source(self, sid: str) -> TraceSource | None:
        return next((s for s in self.sources if s.id == sid), None)


# The status of a trace that records only what a search sent (``quotebound mcp``'s search):
# no answer to judge (evaluation leaves it out).
SEARCH_ONLY = "searched"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A caller of the HTTP service: who they are (``id``, the owner of their traces) and
    which ACL groups they read as. The secret itself is never stored, only its sha256."""

    id: str
    name: str | None
    groups: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """One line of a caller's trace list: enough to find a trace, newest first."""

    id: str
    created_at: str
    question: str
    status: str | None
    model: str | None


class Store(ABC):
    """A corpus and trace store. Open one with ``quotebound.store.open_store``."""

    url: str

    @abstractmethod
    def ingest(
        self,
        corpus: str,
        doc: LoadedDocument,
        chunks: Sequence[Chunk],
        acl: Sequence[str] | None = None,
        url: str | None = None,
        supersedes: str | None = None,
        keep_original: bool = True,
    ) -> IngestResult:
        """Add a document (or a new version of it) with its chunks, in one transaction.

        ``acl``, ``url`` and ``supersedes`` left as None keep the current version's values
        (``acl=[]`` makes a document public). Unchanged text with changed metadata is
        ``updated`` in place; changed text is a new version. The file's bytes
        (``doc.original``) are kept with the version, once per distinct file, unless
        ``keep_original`` is False; a version keeps the original it was first stored with.
        """

    @abstractmethod
    def readable(self, key: str, groups: Sequence[str]) -> bool:
        """Whether a caller of ``groups`` may read the document ``key`` now (its current version
        not deleted; public, or one of its groups theirs)."""

    @abstractmethod
    def document_text(self, key: str, version: int | None = None) -> str:
        """The canonical text of a document version (the current one by default);
        ``NotFoundError`` when there is none."""

    @abstractmethod
    def original(
        self, key: str, version: int, groups: Sequence[str] | None = None
    ) -> Original | None:
        """The original file of a document version (``key`` without a chunk suffix), or None
        when none was kept (``--no-originals``, or text ingested without a file), or when
        ``groups`` are given and the version's ACL admits none of them (a public document
        admits all). ``groups`` are checked against the document as it is now (``readable``):
        restricting or deleting it withdraws every version's file. ``StoreError`` when it is
        missing or damaged."""

    @abstractmethod
    def search(
        self,
        query: str,
        corpora: Sequence[str] | None = None,
        groups: Sequence[str] = (),
        limit: int = 10,
    ) -> list[Hit]:
        """BM25-ranked chunk occurrences the caller may read, best first."""

    @abstractmethod
    def chunks(self, limit: int) -> list[Hit]:
        """Up to ``limit`` chunk occurrences of the current documents, newest documents first,
        whatever their ACL: for warming a cache of vectors, never served to a caller."""

    @abstractmethod
    def documents(self, corpus: str | None = None) -> list[DocumentInfo]:
        """Current versions of the documents (of one corpus), deleted ones included."""

    @abstractmethod
    def delete(self, key: str) -> bool:
        """Hide every version of a document from retrieval; traces still reopen it."""

    @abstractmethod
    def write_trace(self, trace: TraceRecord) -> str:
        """Append a trace, in one transaction; returns its id."""

    @abstractmethod
    def get_trace(self, trace_id: str, owner: str | None = None) -> TraceRecord:
        """A stored trace; NotFoundError if unknown or (with ``owner``) someone else's."""

    @abstractmethod
    def get_traces(self, trace_ids: Sequence[str], owner: str | None = None) -> list[TraceRecord]:
        """The stored traces of ``trace_ids``, in that order (an id given twice, once), read
        together (a few queries in all, not a few per trace); an id unknown or (with
        ``owner``) someone else's is left out."""

    @abstractmethod
    def list_traces(self, owner: str | None, limit: int = 50) -> list[TraceSummary]:
        """The newest traces of ``owner`` (None: traces written without an owner)."""

    @abstractmethod
    def create_key(self, groups: Sequence[str] = (), name: str | None = None) -> tuple[ApiKey, str]:
        """A new API key bound to ``groups``; the key record and the secret (shown once)."""

    @abstractmethod
    def authenticate(self, secret: str) -> ApiKey | None:
        """The live key whose secret this is, or None (unknown, malformed or revoked)."""

    @abstractmethod
    def list_keys(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first."""

    @abstractmethod
    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key (it stops authenticating at once); whether it was live."""

    @abstractmethod
    def check(self) -> Report:
        """Read every table and report what does not hold (``store.integrity``); no writes."""

    @abstractmethod
    def backup(self, dest: Path) -> Backup:
        """Back the store up to the new file ``dest`` while it stays in use, and verify the
        copy (a SQLite copy is checked like a store; a PostgreSQL archive is listed)."""

    @abstractmethod
    def ping(self) -> None:
        """Run a trivial query; StoreError when the store does not answer."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def document_key(corpus: str, name: str) -> str:
    """The corpus-prefixed key of a document: ``handbook:policy.pdf``."""
    return f"{corpus}:{name}"
