"""The embedded default: SQLite in WAL mode, BM25 through FTS5.

One connection per store object; writers serialise through ``BEGIN IMMEDIATE`` with a busy
timeout, so several processes can ingest and write traces at once and lose nothing; WAL lets
readers go on while one writes. A killed writer leaves the last committed state.

Ranking (exact BM25 through FTS5, the work cut MaxScore-style) lives in ``ranking.py``; this
module keeps the connection, transactions, and the ranking statistics up to date.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..corpus import Hit
from ..errors import StoreError
from .integrity import Backup, Report
from .ranking import MAX_BOUNDED_WORDS, Known, Ranker, TermSizes
from .sql import HIT_COLUMNS, Cursor, SQLStore, hit_from_row

BUSY_TIMEOUT_S = 60.0

# A store opened on chunks without size statistics adds them this many chunks a transaction.
_COVER_BATCH = 2000


class SQLiteStore(SQLStore):
    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        self._known: dict[str, Known] = {}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA temp_store=MEMORY")  # (before any temporary table)
            self._migrate()
            self._sizes = TermSizes(self._conn)
            self._cover()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc

    @contextmanager
    def _tx(self, lock: str | None = None) -> Iterator[Cursor]:
        # BEGIN IMMEDIATE takes SQLite's one write lock: every writer is serialised already.
        cur = self._conn.cursor()
        sizes: TermSizes | None = getattr(self, "_sizes", None)  # None while migrating
        done = False
        try:
            cur.execute("BEGIN IMMEDIATE")
            yield cur
            cur.execute("COMMIT")
            done = True
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"store write failed ({self.path}): {exc}") from exc
            raise
        finally:
            if sizes is not None:
                sizes.committed(done)
            cur.close()

    # -- size statistics of the full-text index --------------------------------------------

    def _cover(self) -> None:
        """Bring the size statistics up to the last chunk: chunks stored before they existed
        (a store from before migration 0004), or by a writer that kept none. In transactions
        of ``_COVER_BATCH`` chunks, so other writers get their turn. Where the store cannot be
        written now (a read-only file, another writer holding the lock: no waiting here, a full
        disk), it stays behind: searches then bound words without the statistics, with the
        same results, and the next open or ingest catches up."""
        row = self._conn.execute(
            "SELECT covered, (SELECT max(id) FROM chunk_texts) FROM fts_term_sizes_state"
        ).fetchone()
        if row is None or row[1] is None or not 0 <= row[0] < row[1]:
            return  # (read without a lock: opening a covered store writes nothing)
        self._conn.execute("PRAGMA busy_timeout = 0")  # an open never waits on a writer
        try:
            more = True
            while more:
                with self._tx() as cur:
                    more = self._cover_in(cur, batch=_COVER_BATCH)
        except StoreError:
            return
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    def _cover_in(
        self, cur: Cursor, batch: int | None = None, added: Sequence[tuple[int, str]] = ()
    ) -> bool:
        """In a write transaction: add to the statistics the chunks after ``covered`` (at most
        ``batch`` of them), read from the store or, for ``added``, as given, and move
        ``covered``. Whether chunks are left after it."""
        cur.execute("SELECT covered, (SELECT max(id) FROM chunk_texts) FROM fts_term_sizes_state")
        row = cur.fetchone()
        if row is None or row[1] is None or not 0 <= row[0] < row[1]:
            return False  # no chunks, all covered, or statistics given up (covered < 0)
        covered, last = row
        end = int(last) if batch is None else min(int(last), int(covered) + batch)
        given = {chunk_id: text for chunk_id, text in added}
        first = min(given, default=end + 1)
        reader = self._conn.cursor()
        try:
            stored = reader.execute(
                "SELECT id, text FROM chunk_texts WHERE id > ? AND id <= ? AND id < ? ORDER BY id",
                (covered, end, first),
            )
            chunks = itertools.chain(stored, ((i, t) for i, t in added if i <= end))
            ok = self._sizes.record(cur, chunks)
        finally:
            reader.close()
        self._sizes.flush(cur)
        cur.execute("UPDATE fts_term_sizes_state SET covered = ?", (end if ok else -1,))
        return ok and end < int(last)

    def _chunks_added(self, cur: Cursor, added: list[tuple[int, str]]) -> None:
        self._cover_in(cur, added=added)

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        cur = self._conn.cursor()
        try:
            cur.execute("BEGIN")
            yield cur
        except sqlite3.Error as exc:
            raise StoreError(f"store read failed ({self.path}): {exc}") from exc
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")
            cur.close()

    def _ranked(self, terms: list[str], where: str, params: list[object], limit: int) -> list[Hit]:
        tokens = None
        if 1 < len(terms) <= MAX_BOUNDED_WORDS:  # else no bounds, no statistics (_bounded)
            cur = self._conn.cursor()
            try:
                tokens = self._sizes.terms_of(cur, terms)  # temporary table only: no lock
            except sqlite3.Error as exc:
                raise StoreError(f"store read failed ({self.path}): {exc}") from exc
            finally:
                cur.close()
        with self._read() as cur:
            ranked = Ranker(cur, terms, where, params, limit, self._known, tokens).top()
            if not ranked:
                return []
            cur.execute(
                f"SELECT {HIT_COLUMNS}, o.id FROM occurrences o "
                "JOIN chunk_texts ct ON ct.id = o.chunk_id "
                "JOIN documents d ON d.id = o.document_id "
                "WHERE o.id IN (SELECT value FROM json_each(?))",
                (json.dumps([r.occurrence for r in ranked]),),
            )
            rows = {r[-1]: r for r in cur.fetchall()}
            return [hit_from_row((*rows[r.occurrence][:-1], -r.score)) for r in ranked]

    def _engine_problems(self, cur: Cursor, report: Report) -> None:
        cur.execute("PRAGMA integrity_check")
        for (line,) in cur.fetchall():
            if line != "ok":
                report.add("file", f"the database file: {line}")
        try:  # FTS5's own check of its index against the chunk table (rank 1: the content)
            cur.execute("INSERT INTO chunk_fts (chunk_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                report.counts["fts_not_checked_read_only"] = 1
            else:
                report.add("fts", f"the full-text index does not match the chunk table ({exc})")

    def backup(self, dest: Path) -> Backup:
        traces = self._trace_count()
        try:
            target = sqlite3.connect(str(dest))
            try:
                self._conn.backup(target)  # online: pages copied while others read and write
            finally:
                target.close()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot back up {self.path} to {dest}: {exc}") from exc
        with SQLiteStore(dest) as copy:
            report = copy.check()
        return Backup(self.url, str(dest), "sqlite", dest.stat().st_size, traces, report)

    def close(self) -> None:
        self._conn.close()
