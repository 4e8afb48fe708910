"""The SQL both backends share: ingest with versions, traces, document listing.

A backend supplies a DB-API connection, its transaction (``_tx``), its placeholder and its
ranked search; everything else is written once here, in SQL both SQLite and PostgreSQL run.
Statements are written with ``?`` placeholders and translated once per backend.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..corpus import Chunk, Hit, LoadedDocument, sha256_text
from ..errors import InputError, NotFoundError, StoreError
from ..text.words import STOPWORDS
from .access import AccessMixin
from .base import (
    DocumentInfo,
    IngestResult,
    Original,
    Store,
    TraceAttempt,
    TraceRecord,
    TraceSource,
    document_key,
)
from .integrity import IntegrityMixin
from .migrations import migrations

Cursor = Any  # a DB-API cursor (sqlite3 or psycopg)

_WORD = re.compile(r"\w+")

# The columns of a Hit, in order; a backend's search selects these, then its score.
HIT_COLUMNS = (
    "d.key, d.version, ct.text, ct.hash, o.start_offset, o.end_offset, d.title, d.url, "
    "d.updated, o.pages, o.section, o.ordinal"
)


_MIGRATIONS_LOCK = "quotebound:migrations"
_TRACE_COLUMNS = (
    "id, created_at, question, model, corpus, status, owner, prompt_hash, timings, counts, "
    "retrieved, answer_checks"
)
_SOURCE_COLUMNS = (
    "trace_id, position, sid, text_hash, key, title, url, updated, kind, page, start_offset, "
    "end_offset, version"
)


_BATCH = 500  # ids in one IN (...) list: well below SQLite's 32766 parameters


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def words(query: str) -> list[str]:
    """The query's distinct words, lower-cased, without stopwords (unless that leaves none):
    all a full-text query is built from."""
    found = [w.lower() for w in _WORD.findall(query) if any(c.isalnum() for c in w)]
    content = [w for w in found if w not in STOPWORDS]
    return list(dict.fromkeys(content or found))


def visible(corpora: Sequence[str] | None, groups: Sequence[str]) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) of what a caller may retrieve: current,
    undeleted versions in ``corpora``, public or readable by one of ``groups``."""
    public = "NOT EXISTS (SELECT 1 FROM document_acl a WHERE a.document_id = d.id)"
    acl = public
    if groups:
        marks = ", ".join("?" for _ in groups)
        acl = (
            f"({public} OR EXISTS (SELECT 1 FROM document_acl a WHERE a.document_id = d.id "
            f"AND a.grp IN ({marks})))"
        )
    clauses = ["d.current = 1", "d.deleted = 0", acl]
    params: list[object] = list(groups)
    if corpora is not None:
        clauses.append(f"d.corpus IN ({', '.join('?' for _ in corpora)})" if corpora else "1 = 0")
        params += list(corpora)
    return " AND ".join(clauses), params


def hit_from_row(r: Sequence[Any]) -> Hit:
    """A Hit from ``HIT_COLUMNS`` followed by the score."""
    return Hit(
        key=r[0],
        version=int(r[1]),
        text=r[2],
        hash=r[3],
        start=int(r[4]),
        end=int(r[5]),
        title=r[6],
        url=r[7],
        updated=r[8],
        pages=tuple(int(p) for p in str(r[9]).split(",") if p),
        section=r[10],
        ordinal=int(r[11]),
        score=float(r[12]),
    )


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _check_names(corpus: str, groups: Sequence[str]) -> None:
    if not corpus or ":" in corpus or "#" in corpus or corpus != corpus.strip():
        raise InputError(
            f"corpus name {corpus!r} must be non-empty, without ':', '#' or edge spaces"
        )
    for group in groups:
        if not group or group != group.strip():
            raise InputError(f"ACL group {group!r} must be non-empty without edge spaces")


class SQLStore(IntegrityMixin, AccessMixin, Store):
    """Shared SQL; subclasses provide the connection and the ranked search."""

    dialect: str

    @abstractmethod
    def _tx(self, lock: str | None = None) -> AbstractContextManager[Cursor]:
        """A cursor inside one write transaction; writers holding the same ``lock`` name
        are serialised (a backend may serialise more)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]:
        """A cursor for reads (a consistent snapshot)."""

    def _sql(self, statement: str) -> str:
        return statement

    # -- search --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        corpora: Sequence[str] | None = None,
        groups: Sequence[str] = (),
        limit: int = 10,
    ) -> list[Hit]:
        terms = words(query)
        if not terms or limit < 1:
            return []
        where, params = visible(corpora, groups)
        return self._ranked(terms, where, params, limit)

    def chunks(self, limit: int) -> list[Hit]:
        with self._read() as cur:
            cur.execute(
                self._sql(
                    f"SELECT {HIT_COLUMNS}, 0 FROM occurrences o "
                    "JOIN chunk_texts ct ON ct.id = o.chunk_id "
                    "JOIN documents d ON d.id = o.document_id "
                    "WHERE d.current = 1 AND d.deleted = 0 ORDER BY d.id DESC, o.id LIMIT ?"
                ),
                (limit,),
            )
            return [hit_from_row(r) for r in cur.fetchall()]

    @abstractmethod
    def _ranked(self, terms: list[str], where: str, params: list[object], limit: int) -> list[Hit]:
        """The best ``limit`` visible occurrences for the OR of ``terms``: the backend's
        ranked query, with the visibility clause ``where`` (ACL, corpus) inside it."""

    # -- migrations ----------------------------------------------------------------------

    def _migrate(self) -> None:
        if {m.name for m in migrations(self.dialect)} <= self._applied_if_any():
            return  # nothing to apply: no write lock taken, so opening never waits on a writer
        with self._tx(lock=_MIGRATIONS_LOCK) as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS qb_migrations (name TEXT PRIMARY KEY, "
                "applied_at TEXT NOT NULL)"
            )
        for migration in migrations(self.dialect):
            with self._tx(lock=_MIGRATIONS_LOCK) as cur:
                cur.execute(
                    self._sql("SELECT 1 FROM qb_migrations WHERE name = ?"), (migration.name,)
                )
                if cur.fetchone() is not None:
                    continue
                for statement in migration.statements:
                    cur.execute(statement)
                cur.execute(
                    self._sql("INSERT INTO qb_migrations (name, applied_at) VALUES (?, ?)"),
                    (migration.name, _now()),
                )

    def _applied_if_any(self) -> set[str]:
        try:
            return set(self.applied_migrations())
        except StoreError:  # a new store: no migrations table yet
            return set()

    def applied_migrations(self) -> list[str]:
        with self._read() as cur:
            cur.execute("SELECT name FROM qb_migrations ORDER BY name")
            return [row[0] for row in cur.fetchall()]

    # -- ingest --------------------------------------------------------------------------

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
        _check_names(corpus, acl or ())
        key = document_key(corpus, doc.name)
        original = doc.original if keep_original else None
        with self._tx(lock=key) as cur:
            cur.execute(
                self._sql(
                    "SELECT id, version, content_hash, deleted, url, supersedes, original_hash "
                    "FROM documents WHERE key = ? AND current = 1"
                ),
                (key,),
            )
            row = cur.fetchone()
            # What is not given is kept from the current version: a re-run without --acl
            # never makes a restricted document public.
            old_acl = self._acl(cur, row[0]) if row is not None else []
            groups = sorted(set(acl)) if acl is not None else old_acl
            url = url if url is not None else (row[4] if row is not None else None)
            supersedes = supersedes if supersedes is not None else (row[5] if row else None)
            if row is not None and row[2] == doc.hash and not row[3]:
                changed = self._set_acl(cur, row[0], groups)
                if original is not None and row[6] is None:  # kept from now on; never replaced
                    digest = self._put_original(cur, original, doc.media_type)
                    cur.execute(
                        self._sql("UPDATE documents SET original_hash = ? WHERE id = ?"),
                        (digest, row[0]),
                    )
                    changed = True
                if (url, supersedes) != (row[4], row[5]):
                    cur.execute(
                        self._sql("UPDATE documents SET url = ?, supersedes = ? WHERE id = ?"),
                        (url, supersedes, row[0]),
                    )
                    changed = True
                return IngestResult(key, row[1], "updated" if changed else "unchanged", len(chunks))
            version = 1 if row is None else row[1] + 1
            if row is not None:
                cur.execute(self._sql("UPDATE documents SET current = 0 WHERE key = ?"), (key,))
            doc_id = self._insert_document(cur, corpus, key, version, doc, url, supersedes)
            if original is not None:
                digest = self._put_original(cur, original, doc.media_type)
                cur.execute(
                    self._sql("UPDATE documents SET original_hash = ? WHERE id = ?"),
                    (digest, doc_id),
                )
            self._put_blob(cur, doc.hash, doc.text)
            self._set_acl(cur, doc_id, groups)
            self._insert_chunks(cur, doc_id, chunks)
        self._ingested()
        return IngestResult(key, version, "added" if version == 1 else "new_version", len(chunks))

    def _acl(self, cur: Cursor, doc_id: int) -> list[str]:
        cur.execute(self._sql("SELECT grp FROM document_acl WHERE document_id = ?"), (doc_id,))
        return sorted(r[0] for r in cur.fetchall())

    def _insert_document(
        self,
        cur: Cursor,
        corpus: str,
        key: str,
        version: int,
        doc: LoadedDocument,
        url: str | None,
        supersedes: str | None,
    ) -> int:
        cur.execute(
            self._sql(
                "INSERT INTO documents (key, corpus, name, version, content_hash, media_type, "
                "title, url, updated, supersedes, current, deleted, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?) RETURNING id"
            ),
            (
                key,
                corpus,
                doc.name,
                version,
                doc.hash,
                doc.media_type,
                doc.title,
                url,
                doc.updated,
                supersedes,
                _now(),
            ),
        )
        return int(cur.fetchone()[0])

    def _set_acl(self, cur: Cursor, doc_id: int, groups: list[str]) -> bool:
        """Set a version's groups; whether they changed."""
        if self._acl(cur, doc_id) == groups:
            return False
        cur.execute(self._sql("DELETE FROM document_acl WHERE document_id = ?"), (doc_id,))
        for group in groups:
            cur.execute(
                self._sql("INSERT INTO document_acl (document_id, grp) VALUES (?, ?)"),
                (doc_id, group),
            )
        return True

    def _insert_chunks(self, cur: Cursor, doc_id: int, chunks: Sequence[Chunk]) -> None:
        added: list[tuple[int, str]] = []
        for ordinal, chunk in enumerate(chunks):
            cur.execute(
                self._sql(
                    "INSERT INTO chunk_texts (hash, text) VALUES (?, ?) "
                    "ON CONFLICT (hash) DO NOTHING"
                ),
                (chunk.hash, chunk.text),
            )
            new = cur.rowcount == 1  # stored now: a text new to the store
            cur.execute(self._sql("SELECT id FROM chunk_texts WHERE hash = ?"), (chunk.hash,))
            chunk_id = cur.fetchone()[0]
            if new:
                added.append((int(chunk_id), chunk.text))
            cur.execute(
                self._sql(
                    "INSERT INTO occurrences (document_id, chunk_id, ordinal, start_offset, "
                    "end_offset, pages, section) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                (
                    doc_id,
                    chunk_id,
                    ordinal,
                    chunk.start,
                    chunk.end,
                    ",".join(map(str, chunk.pages)),
                    chunk.section,
                ),
            )
        if added:
            self._chunks_added(cur, added)

    def _chunks_added(self, cur: Cursor, added: list[tuple[int, str]]) -> None:
        """Called in the ingest's transaction with the chunk texts it stored for the first
        time (id, text): a backend may keep statistics of its full-text index with them."""

    def _ingested(self) -> None:
        """Called after an ingest that stored a new version committed: a backend may tidy its
        full-text index then, in transactions of its own."""

    def _put_original(self, cur: Cursor, data: bytes, media_type: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        cur.execute(
            self._sql(
                "INSERT INTO originals (hash, media_type, size, data) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (hash) DO NOTHING"
            ),
            (digest, media_type, len(data), data),
        )
        return digest

    def original(
        self, key: str, version: int, groups: Sequence[str] | None = None
    ) -> Original | None:
        with self._read() as cur:
            cur.execute(
                self._sql(
                    "SELECT d.id, d.original_hash, d.media_type, o.data FROM documents d "
                    "LEFT JOIN originals o ON o.hash = d.original_hash "
                    "WHERE d.key = ? AND d.version = ?"
                ),
                (key, version),
            )
            row = cur.fetchone()
            if row is None or row[1] is None:
                return None
            if groups is not None and not self._readable(cur, key, groups):
                return None  # the whole file: only to whoever may read the document now
        if row[3] is None:
            raise StoreError(f"the original of {key} v{version} is missing from the store")
        data = bytes(row[3])
        if hashlib.sha256(data).hexdigest() != row[1]:  # a damaged row is never served
            raise StoreError(f"the original of {key} v{version} does not match its hash")
        return Original(row[1], row[2], data)

    def readable(self, key: str, groups: Sequence[str]) -> bool:
        with self._read() as cur:
            return self._readable(cur, key, groups)

    def _readable(self, cur: Cursor, key: str, groups: Sequence[str]) -> bool:
        """Whether ``groups`` may read the document now: its current version not deleted, and
        its ACL public or naming one of them."""
        cur.execute(
            self._sql("SELECT id, deleted FROM documents WHERE key = ? AND current = 1"), (key,)
        )
        row = cur.fetchone()
        if row is None or row[1]:
            return False
        acl = self._acl(cur, row[0])
        return not acl or bool(set(acl) & set(groups))

    def _put_blob(self, cur: Cursor, digest: str, text: str) -> None:
        cur.execute(
            self._sql("INSERT INTO blobs (hash, text) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING"),
            (digest, text),
        )

    # -- documents -----------------------------------------------------------------------

    def documents(self, corpus: str | None = None) -> list[DocumentInfo]:
        where = "d.current = 1" + (" AND d.corpus = ?" if corpus else "")
        with self._read() as cur:
            cur.execute(
                self._sql(
                    "SELECT d.id, d.key, d.corpus, d.version, d.title, d.url, d.updated, "
                    "d.media_type, d.content_hash, d.deleted, d.supersedes, "
                    "(SELECT COUNT(*) FROM occurrences o WHERE o.document_id = d.id) "
                    f"FROM documents d WHERE {where} ORDER BY d.key"
                ),
                (corpus,) if corpus else (),
            )
            rows = cur.fetchall()
            out = []
            for r in rows:
                cur.execute(
                    self._sql("SELECT grp FROM document_acl WHERE document_id = ? ORDER BY grp"),
                    (r[0],),
                )
                acl = tuple(g[0] for g in cur.fetchall())
                out.append(
                    DocumentInfo(
                        key=r[1],
                        corpus=r[2],
                        version=r[3],
                        title=r[4],
                        url=r[5],
                        updated=r[6],
                        media_type=r[7],
                        content_hash=r[8],
                        chunks=r[11],
                        current=True,
                        deleted=bool(r[9]),
                        acl=acl,
                        supersedes=r[10],
                    )
                )
        return out

    def document_text(self, key: str, version: int | None = None) -> str:
        """The canonical text of a document version (the current one by default)."""
        sql = "SELECT content_hash FROM documents WHERE key = ? AND " + (
            "version = ?" if version is not None else "current = 1"
        )
        with self._read() as cur:
            cur.execute(self._sql(sql), (key, version) if version is not None else (key,))
            row = cur.fetchone()
            if row is None:
                raise NotFoundError(
                    f"no document {key!r}" + (f" version {version}" if version else "")
                )
            return self._blobs(cur, [row[0]])[row[0]]

    def delete(self, key: str) -> bool:
        with self._tx() as cur:
            cur.execute(
                self._sql("UPDATE documents SET deleted = 1 WHERE key = ? AND deleted = 0"), (key,)
            )
            return bool(cur.rowcount)

    # -- traces --------------------------------------------------------------------------

    def _trace_count(self) -> int:
        with self._read() as cur:
            cur.execute("SELECT count(*) FROM traces")
            return int(cur.fetchone()[0])

    def write_trace(self, trace: TraceRecord) -> str:
        with self._tx() as cur:
            prompt_hash = None if trace.prompt is None else self._text(cur, trace.prompt)
            row = (
                trace.id,
                trace.created_at,
                trace.question,
                trace.model,
                trace.corpus,
                trace.status,
                trace.owner,
                prompt_hash,
                json.dumps(trace.timings),
                json.dumps(trace.counts),
                json.dumps(list(trace.retrieved)),
                json.dumps(list(trace.answer_checks)) if trace.answer_checks else None,
            )
            cur.execute(
                self._sql(f"INSERT INTO traces ({_TRACE_COLUMNS}) VALUES ({_marks(12)})"), row
            )
            for position, src in enumerate(trace.sources):
                source_row = (
                    trace.id,
                    position,
                    src.id,
                    self._text(cur, src.text),
                    src.key,
                    src.title,
                    src.url,
                    src.updated,
                    src.kind,
                    src.page,
                    src.start,
                    src.end,
                    src.version,
                )
                cur.execute(
                    self._sql(
                        f"INSERT INTO trace_sources ({_SOURCE_COLUMNS}) VALUES ({_marks(13)})"
                    ),
                    source_row,
                )
            for attempt, item in enumerate(trace.attempts):
                verdict = None if item.verdict is None else json.dumps(item.verdict)
                cur.execute(
                    self._sql(
                        "INSERT INTO trace_attempts (trace_id, attempt, output_hash, verdict, "
                        "error) VALUES (?, ?, ?, ?, ?)"
                    ),
                    (trace.id, attempt, self._text(cur, item.output), verdict, item.error),
                )
        return trace.id

    def _text(self, cur: Cursor, text: str) -> str:
        """Store a text content-addressed; its hash."""
        digest = sha256_text(text)
        self._put_blob(cur, digest, text)
        return digest

    def get_trace(self, trace_id: str, owner: str | None = None) -> TraceRecord:
        found = self.get_traces([trace_id], owner)
        if not found:
            raise NotFoundError(f"no trace {trace_id!r}")
        return found[0]

    def get_traces(self, trace_ids: Sequence[str], owner: str | None = None) -> list[TraceRecord]:
        ids = list(dict.fromkeys(trace_ids))
        found: dict[str, TraceRecord] = {}
        with self._read() as cur:
            for at in range(0, len(ids), _BATCH):
                found.update(self._traces(cur, ids[at : at + _BATCH], owner))
        return [found[i] for i in ids if i in found]

    def _traces(self, cur: Cursor, ids: list[str], owner: str | None) -> dict[str, TraceRecord]:
        """The traces of ``ids`` (at most ``_BATCH``) by id: four queries, whatever their number."""
        cur.execute(
            self._sql(f"SELECT {_TRACE_COLUMNS} FROM traces WHERE id IN ({_marks(len(ids))})"),
            ids,
        )
        rows = [r for r in cur.fetchall() if owner is None or r[6] == owner]
        if not rows:
            return {}
        ids = [r[0] for r in rows]
        marks = _marks(len(ids))
        prompts = self._blobs(cur, [r[7] for r in rows if r[7] is not None])
        sources: dict[str, list[TraceSource]] = {i: [] for i in ids}
        cur.execute(
            self._sql(
                "SELECT s.trace_id, s.sid, b.text, s.key, s.title, s.url, s.updated, s.kind, "
                "s.page, s.start_offset, s.end_offset, s.version FROM trace_sources s "
                f"JOIN blobs b ON b.hash = s.text_hash WHERE s.trace_id IN ({marks}) "
                "ORDER BY s.trace_id, s.position"
            ),
            ids,
        )
        for r in cur.fetchall():
            sources[r[0]].append(TraceSource(*r[1:]))
        attempts: dict[str, list[TraceAttempt]] = {i: [] for i in ids}
        cur.execute(
            self._sql(
                "SELECT a.trace_id, b.text, a.verdict, a.error FROM trace_attempts a JOIN blobs b "
                f"ON b.hash = a.output_hash WHERE a.trace_id IN ({marks}) "
                "ORDER BY a.trace_id, a.attempt"
            ),
            ids,
        )
        for r in cur.fetchall():
            verdict = None if r[2] is None else json.loads(r[2])
            attempts[r[0]].append(TraceAttempt.read(r[1], verdict, r[3]))
        return {
            row[0]: TraceRecord(
                id=row[0],
                created_at=row[1],
                question=row[2],
                model=row[3],
                corpus=row[4],
                status=row[5],
                owner=row[6],
                prompt=None if row[7] is None else prompts[row[7]],
                timings=json.loads(row[8]),
                counts=json.loads(row[9]),
                retrieved=tuple(json.loads(row[10])),
                answer_checks=tuple(json.loads(row[11])) if row[11] else (),
                sources=tuple(sources[row[0]]),
                attempts=tuple(attempts[row[0]]),
            )
            for row in rows
        }

    def _blobs(self, cur: Cursor, digests: list[str]) -> dict[str, str]:
        """Stored texts by hash."""
        digests = list(dict.fromkeys(digests))
        if not digests:
            return {}
        cur.execute(
            self._sql(f"SELECT hash, text FROM blobs WHERE hash IN ({_marks(len(digests))})"),
            digests,
        )
        out = {str(r[0]): str(r[1]) for r in cur.fetchall()}
        missing = [d for d in digests if d not in out]
        if missing:  # pragma: no cover - blobs are written in the same transaction
            raise NotFoundError(f"stored text {missing[0][:12]} is missing")
        return out
