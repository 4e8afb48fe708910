"""A store's integrity, checked, and its backup, verified.

Traces are what someone opens weeks later to see what an answer was built on, so a store is a
system of record. ``check`` reads every table and says, in plain words, what does not hold:

- every text stored by hash (``blobs``: document texts, sent sources, model outputs, prompts;
  ``chunk_texts``) hashes to its key;
- every reference resolves: a document's text, an occurrence's chunk and document, a trace's
  sources, outputs and prompt;
- every occurrence is the exact slice of its document's text that its offsets say;
- every trace reopens (``get_traces``), with each sent source's text hashing to what the trace
  recorded;
- SQLite: the database file passes ``PRAGMA integrity_check`` and the full-text index agrees
  with the chunk table (FTS5's own ``integrity-check``).

Work is bounded by the store's size and read in batches; nothing is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..corpus import sha256_text

_BATCH = 500
_MAX_LISTED = 20  # problems of one kind listed by name; the rest are counted


@dataclass
class Report:
    """What ``check`` found: counts of what it read, and each problem in plain words."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    _kinds: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, message: str) -> None:
        """One problem; past ``_MAX_LISTED`` of a kind, only counted (then summed up)."""
        seen = self._kinds[kind] = self._kinds.get(kind, 0) + 1
        if seen <= _MAX_LISTED:
            self.problems.append(message)
        elif seen == _MAX_LISTED + 1:
            self.problems.append(f"(further {kind} problems are counted, not listed)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "counts": self.counts,
            "problems": self.problems,
            "problem_counts": dict(sorted(self._kinds.items())),
        }


def _batches(cur: Any, sql: str, size: int = _BATCH) -> Iterator[Sequence[Any]]:
    cur.execute(sql)
    while rows := cur.fetchmany(size):
        yield from rows


class IntegrityMixin:
    """``check()`` for an ``SQLStore`` (both backends); the backend adds its own file checks
    (``_engine_problems``)."""

    def check(self) -> Report:
        report = Report()
        with self._read() as cur:  # type: ignore[attr-defined]
            self._engine_problems(cur, report)
            blobs = self._check_hashed(cur, report, "blobs", "SELECT hash, text FROM blobs")
            self._check_hashed(cur, report, "chunk texts", "SELECT hash, text FROM chunk_texts")
            self._check_documents(cur, report, blobs)
            self._check_originals(cur, report)
            ids = self._check_traces(cur, report, blobs)
        if report.ok:  # (a trace with a missing text cannot be read whole: said already)
            self._check_reopen(ids, report)
        return report

    def _engine_problems(self, cur: Any, report: Report) -> None:
        """Backend checks of the database itself (SQLite: integrity_check, FTS5)."""

    def _check_hashed(self, cur: Any, report: Report, what: str, sql: str) -> set[str]:
        keys: set[str] = set()
        for digest, text in _batches(cur, sql):
            keys.add(digest)
            if sha256_text(text) != digest:
                report.add(
                    "hash",
                    f"{what}: the text stored under {digest[:12]}... does not hash to it "
                    "(changed after it was written)",
                )
        report.counts[what.replace(" ", "_")] = len(keys)
        return keys

    def _check_originals(self, cur: Any, report: Report) -> None:
        """Every kept original hashes to its key, and every document version that names one
        has it."""
        kept: set[str] = set()
        for digest, data in _batches(cur, "SELECT hash, data FROM originals"):
            kept.add(digest)
            if hashlib.sha256(bytes(data)).hexdigest() != digest:
                report.add(
                    "hash",
                    f"originals: the file stored under {digest[:12]}... does not hash to it "
                    "(changed after it was written)",
                )
        report.counts["originals"] = len(kept)
        named = "SELECT key, version, original_hash FROM documents WHERE original_hash IS NOT NULL"
        for key, version, digest in _batches(cur, named):
            if digest not in kept:
                report.add("missing", f"document {key} v{version}: its original file is missing")

    def _check_documents(self, cur: Any, report: Report, blobs: set[str]) -> None:
        docs = list(_batches(cur, "SELECT id, key, version, content_hash FROM documents"))
        report.counts["documents"] = len(docs)
        occurrences = 0
        for doc_id, key, version, digest in docs:
            if digest not in blobs:
                report.add("missing", f"document {key} v{version}: its text is missing")
                continue
            cur.execute(
                self._sql(  # type: ignore[attr-defined]
                    "SELECT o.start_offset, o.end_offset, c.hash FROM occurrences o "
                    "LEFT JOIN chunk_texts c ON c.id = o.chunk_id WHERE o.document_id = ?"
                ),
                (doc_id,),
            )
            rows = cur.fetchall()
            occurrences += len(rows)
            text = self._check_blob(cur, digest) if rows else ""
            for start, end, chunk in rows:
                if chunk is None:
                    report.add("missing", f"document {key} v{version}: a chunk is missing")
                elif sha256_text(text[start:end]) != chunk:
                    report.add(
                        "slice",
                        f"document {key} v{version}: the chunk at [{start}, {end}) is not the "
                        "document's text there",
                    )
        cur.execute(
            "SELECT count(*) FROM occurrences WHERE document_id NOT IN (SELECT id FROM documents)"
        )
        orphans = int(cur.fetchone()[0])
        if orphans:
            report.add("missing", f"{orphans} chunk occurrence(s) belong to no document")
        report.counts["occurrences"] = occurrences

    def _check_blob(self, cur: Any, digest: str) -> str:
        sql = self._sql("SELECT text FROM blobs WHERE hash = ?")  # type: ignore[attr-defined]
        cur.execute(sql, (digest,))
        return str(cur.fetchone()[0])

    def _check_traces(self, cur: Any, report: Report, blobs: set[str]) -> list[str]:
        ids: list[str] = []
        for trace_id, prompt in _batches(cur, "SELECT id, prompt_hash FROM traces"):
            ids.append(trace_id)
            if prompt is not None and prompt not in blobs:
                report.add("missing", f"trace {trace_id}: its prompt is missing")
        for table, column, what in (
            ("trace_sources", "text_hash", "a sent source's text"),
            ("trace_attempts", "output_hash", "a model output"),
        ):
            for trace_id, digest in _batches(cur, f"SELECT trace_id, {column} FROM {table}"):
                if digest not in blobs:
                    report.add("missing", f"trace {trace_id}: {what} is missing")
        report.counts["traces"] = len(ids)
        return ids

    def _check_reopen(self, ids: list[str], report: Report) -> None:
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            read = {t.id: t for t in self.get_traces(batch)}  # type: ignore[attr-defined]
            for trace_id in batch:
                if trace_id not in read:
                    report.add("trace", f"trace {trace_id} does not reopen")


@dataclass(frozen=True)
class Backup:
    """A backup made: where from, where to, how big, and its verification (``report``: the
    copy's own ``check``, for SQLite; None for a PostgreSQL archive, verified by listing it)."""

    source: str
    dest: str
    kind: str  # "sqlite" (a database file) | "pg_dump" (a custom-format archive)
    size: int
    traces: int  # traces in the store when the backup began (the copy holds at least these)
    report: Report | None = None
    entries: int | None = None  # a pg_dump archive's table of contents, counted

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dest": self.dest,
            "kind": self.kind,
            "size": self.size,
            "traces": self.traces,
            "verified": None if self.report is None else self.report.to_dict(),
            "entries": self.entries,
        }
