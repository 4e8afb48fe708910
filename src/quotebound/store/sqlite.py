"""The embedded default: SQLite in WAL mode, BM25 through FTS5.

One connection per store object; writers serialise through ``BEGIN IMMEDIATE`` with a busy
timeout, so several processes can ingest and write traces at once and lose nothing; WAL lets
readers go on while one writes. A killed writer leaves the last committed state.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError
from .base import Hit
from .sql import HIT_COLUMNS, Cursor, SQLStore, hit_from_row, visible, words

BUSY_TIMEOUT_S = 60.0


def fts_query(query: str) -> str | None:
    """An FTS5 query that ORs the query's words, each quoted (no FTS syntax gets through)."""
    terms = words(query)
    return " OR ".join(f'"{w}"' for w in terms) if terms else None


class SQLiteStore(SQLStore):
    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc

    @contextmanager
    def _tx(self, lock: str | None = None) -> Iterator[Cursor]:
        # BEGIN IMMEDIATE takes SQLite's one write lock: every writer is serialised already.
        cur = self._conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            yield cur
            cur.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"store write failed ({self.path}): {exc}") from exc
            raise
        finally:
            cur.close()

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

    def search(
        self,
        query: str,
        corpora: Sequence[str] | None = None,
        groups: Sequence[str] = (),
        limit: int = 10,
    ) -> list[Hit]:
        match = fts_query(query)
        if match is None or limit < 1:
            return []
        where, params = visible(corpora, groups)
        # Rank and filter in an inner query that reads no chunk text, then fetch the winners:
        # every matching row is scored, so what each row carries is what a search costs.
        sql = (
            f"SELECT {HIT_COLUMNS}, -top.score FROM ("
            "SELECT o.id AS oid, bm25(chunk_fts) AS score, d.key AS dkey, o.ordinal AS ord "
            "FROM chunk_fts JOIN occurrences o ON o.chunk_id = chunk_fts.rowid "
            "JOIN documents d ON d.id = o.document_id "
            f"WHERE chunk_fts MATCH ? AND {where} ORDER BY score, dkey, ord LIMIT ?) top "
            "JOIN occurrences o ON o.id = top.oid JOIN chunk_texts ct ON ct.id = o.chunk_id "
            "JOIN documents d ON d.id = o.document_id ORDER BY top.score, top.dkey, top.ord"
        )
        with self._read() as cur:
            cur.execute(sql, (match, *params, limit))
            return [hit_from_row(r) for r in cur.fetchall()]

    def close(self) -> None:
        self._conn.close()
