"""The embedded default: SQLite in WAL mode, BM25 through FTS5.

One connection per store object; writers serialise through ``BEGIN IMMEDIATE`` with a busy
timeout, so several processes can ingest and write traces at once and lose nothing; WAL lets
readers go on while one writes. A killed writer leaves the last committed state.

Ranking is FTS5's ``bm25()`` over the OR of the query's words, exactly: the hits are the ones
a plain ``MATCH ... ORDER BY bm25`` over every visible chunk returns, in the same order with
the same scores. Only the work is cut (MaxScore/WAND style): FTS5 spends ~0.6 us per row it
scores, and a query with a few common words matches half the corpus. ``bm25`` is a sum over
the query's words, and one word adds less than ``idf * (k1 + 1)`` to any row, so:

1. the rarest words alone give partial scores, a lower bound for full scores: the k-th best
   visible one is a threshold ``theta`` that the real k-th hit reaches;
2. a row can reach ``theta`` only if the bounds of the words it contains add up to ``theta``:
   an FTS5 boolean query over the words (``rare OR (common1 AND common2) ...``) selects those
   rows, and only they are scored with the full query; every other row scores less than the
   k-th hit, so it is not in the top k.

The ACL and corpus filter is applied to scored rows before they are counted towards the k,
so a chunk outside the caller's groups is never returned and never takes a hit's place.
"""

from __future__ import annotations

import collections
import json
import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError
from .base import Hit
from .sql import HIT_COLUMNS, Cursor, SQLStore, hit_from_row, visible, words

BUSY_TIMEOUT_S = 60.0

# FTS5's bm25() constants (fts5_aux.c): a word adds idf * tf * (k1 + 1) / (tf + k1 * (1 - b +
# b * length / average length)) to a row's score, less than idf * (k1 + 1) for any tf, length.
BM25_K1 = 1.2
# How many best-scored rows a ranking step fetches before it checks them against the ACL and
# corpus filter (it fetches more only when too few of them are visible).
FETCH_ROWS = 100
# Bound sums are widened by this much, so float rounding can never drop a row that could win.
_SLACK = 1e-9
# The candidate query nests ANDs at most this deep; deeper, it ORs the rest (more rows, still
# every row that could win). One with more quoted words than _MAX_PHRASES (each one a pass
# over that word's rows) is replaced by the OR of the fewest rarest words that can win.
_MAX_DEPTH = 3
_MAX_PHRASES = 48
# A query with more words than this skips the candidate query (it could grow too large) and
# scores every matching row.
_MAX_BOUNDED_WORDS = 12


def fts_query(query: str) -> str | None:
    """An FTS5 query that ORs the query's words, each quoted (no FTS syntax gets through)."""
    terms = words(query)
    return _any(terms) if terms else None


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{w}"' for w in terms)


def _varint(data: bytes, at: int = 0) -> int:
    """SQLite's varint (as FTS5 stores its row count) at ``data[at:]``."""
    value = 0
    for i in range(min(9, len(data) - at)):
        byte = data[at + i]
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


@dataclass(frozen=True, order=True)
class _Ranked:
    """One visible occurrence: FTS5's bm25 (lower is better), then the tie-breakers."""

    score: float
    key: str
    ordinal: int
    occurrence: int


class _Ranker:
    """The top ``limit`` visible occurrences by exact FTS5 bm25 over the OR of ``terms``."""

    def __init__(
        self, cur: Cursor, terms: list[str], where: str, params: list[object], limit: int
    ) -> None:
        self.cur, self.terms, self.where, self.params, self.limit = (
            cur,
            terms,
            where,
            params,
            limit,
        )
        self.full = _any(terms)  # the reference query: its word order fixes bm25's float sum

    def top(self) -> list[_Ranked]:
        bounded = self._bounded()
        if bounded is None:
            return self._best(self.full, None)
        rare, bounds = bounded
        theta = self._threshold(rare)
        if not theta:  # fewer than k visible rows among the rare words' ones
            return self._best(self.full, None)
        theta = theta * (1 - _SLACK) - _SLACK
        candidates = _can_reach(rare, bounds, theta)
        if isinstance(candidates, str) and candidates.count('"') > 2 * _MAX_PHRASES:
            # A row that has none of the first ``needed`` words has the rest's bounds at most.
            needed = next(i for i in range(len(rare)) if sum(bounds[i + 1 :]) < theta) + 1
            candidates = _any(rare[:needed]) if needed < len(rare) else True
        # None cannot happen (the k rows behind theta reach it); True: every row can.
        return self._best(self.full, candidates if isinstance(candidates, str) else None)

    def _bounded(self) -> tuple[list[str], list[float]] | None:
        """The distinct words, rarest first, with each one's bound on what it adds to a score;
        None where bounds do not help (one word, very many words)."""
        if not 1 < len(self.terms) <= _MAX_BOUNDED_WORDS:
            return None
        cur = self.cur
        cur.execute("SELECT block FROM chunk_fts_data WHERE id = 1")
        row = cur.fetchone()
        if row is None or not row[0]:  # an empty index has no totals record yet
            return None
        n_rows = _varint(row[0])
        counted = []
        for i, term in enumerate(self.terms):
            cur.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (f'"{term}"',))
            counted.append((int(cur.fetchone()[0]), i, term))
        counted.sort()
        bounds = []
        for n, _, _ in counted:
            if n > n_rows:
                return None  # the counts do not fit the totals: score everything instead
            idf = math.log((n_rows - n + 0.5) / (n + 0.5))
            bounds.append((idf if idf > 0 else 1e-6) * (BM25_K1 + 1) * (1 + _SLACK) + _SLACK)
        return [t for _, _, t in counted], bounds

    def _threshold(self, rare: list[str]) -> float:
        """A score the k-th hit reaches, or 0: the k-th best full score of the visible rows
        among the best by the rarest words alone (widened a word at a time until k are)."""
        cur, k = self.cur, self.limit
        fetch = max(FETCH_ROWS, 4 * k)
        for size in range(1, len(rare)):
            cur.execute(
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? "
                "ORDER BY bm25(chunk_fts), rowid LIMIT ?",
                (_any(rare[:size]), fetch),
            )
            ids = [int(r[0]) for r in cur.fetchall()]
            cur.execute(
                "SELECT o.chunk_id FROM occurrences o JOIN documents d ON d.id = o.document_id "
                f"WHERE o.chunk_id IN (SELECT value FROM json_each(?)) AND {self.where}",
                (json.dumps(ids), *self.params),
            )
            seen = collections.Counter(int(r[0]) for r in cur.fetchall())
            if seen.total() < k:
                continue
            cur.execute(
                "SELECT rowid, bm25(chunk_fts) FROM chunk_fts WHERE chunk_fts MATCH ? "
                "AND +rowid IN (SELECT value FROM json_each(?))",
                (self.full, json.dumps(list(seen))),
            )
            scores = sorted(s for cid, score in cur.fetchall() for s in [-score] * seen[cid])
            return scores[-k] if len(scores) >= k else 0.0
        return 0.0

    def _best(self, match: str, within: str | None) -> list[_Ranked]:
        """The best ``limit`` visible occurrences of the rows that ``match`` (and ``within``,
        if given), ranked by the bm25 of ``match``."""
        cur, k = self.cur, self.limit
        restrict = (
            " AND +rowid IN (SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?)" if within else ""
        )
        args: tuple[object, ...] = (match, within) if within else (match,)
        scored = (
            "SELECT rowid AS cid, bm25(chunk_fts) AS score FROM chunk_fts "
            f"WHERE chunk_fts MATCH ?{restrict}"
        )
        fetch = max(FETCH_ROWS, 4 * k)
        cur.execute(f"{scored} ORDER BY score, cid LIMIT ?", (*args, fetch))
        rows = cur.fetchall()
        scores = {int(cid): float(score) for cid, score in rows}
        cur.execute(
            "SELECT o.id, o.chunk_id, d.key, o.ordinal FROM occurrences o "
            "JOIN documents d ON d.id = o.document_id "
            f"WHERE o.chunk_id IN (SELECT value FROM json_each(?)) AND {self.where}",
            (json.dumps(list(scores)), *self.params),
        )
        found = sorted(_Ranked(scores[cid], key, ordinal, oid) for oid, cid, key, ordinal in cur)
        # Exact if every matching row was fetched, or if the k-th visible one is strictly
        # better than the last fetched (so better than every row not fetched).
        if len(rows) < fetch or (len(found) >= k and found[k - 1].score < rows[-1][1]):
            return found[:k]
        cur.execute(
            f"WITH s AS MATERIALIZED ({scored}) "
            "SELECT s.score, d.key, o.ordinal, o.id FROM s "
            "JOIN occurrences o ON o.chunk_id = s.cid JOIN documents d ON d.id = o.document_id "
            f"WHERE {self.where} "
            "ORDER BY s.score, d.key, o.ordinal LIMIT ?",
            (*args, *self.params, k),
        )
        return [_Ranked(float(s), key, int(o), int(oid)) for s, key, o, oid in cur.fetchall()]


def _can_reach(
    terms: list[str], bounds: list[float], theta: float, at: int = 0, depth: int = 0
) -> str | bool | None:
    """An FTS5 query for the rows whose words among ``terms[at:]`` can add up to ``theta``:
    True for every row, None for none. Each row it leaves out scores below ``theta``."""
    if theta <= 0:
        return True
    if sum(bounds[at:]) < theta:
        return None
    if depth >= _MAX_DEPTH or at == len(terms) - 1:
        return _any(terms[at:])
    word = f'"{terms[at]}"'
    rest = _can_reach(terms, bounds, theta - bounds[at], at + 1, depth + 1)
    without = _can_reach(terms, bounds, theta, at + 1, depth)
    if without is True:
        return True
    have = word if rest is True else f"({word} AND ({rest}))" if rest else None
    if have and without:
        return f"{have} OR {without}"
    return have or without


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
        terms = words(query)
        if not terms or limit < 1:
            return []
        where, params = visible(corpora, groups)
        with self._read() as cur:
            ranked = _Ranker(cur, terms, where, params, limit).top()
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

    def close(self) -> None:
        self._conn.close()
