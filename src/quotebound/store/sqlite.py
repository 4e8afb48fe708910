"""The embedded default: SQLite in WAL mode, BM25 through FTS5.

One connection per store object; writers serialise through ``BEGIN IMMEDIATE`` with a busy
timeout, so several processes can ingest and write traces at once and lose nothing; WAL lets
readers go on while one writes. A killed writer leaves the last committed state.

Ranking is FTS5's ``bm25()`` over the OR of the query's words, exactly: the hits are the ones
a plain ``MATCH ... ORDER BY bm25`` over every visible chunk returns, in the same order with
the same scores. Only the work is cut (MaxScore/WAND style): FTS5 spends ~0.6 us per row it
scores, and a query with a few common words matches half the corpus. ``bm25`` is a sum over
the query's words, and one word adds less than ``idf * (k1 + 1)`` to any row, so:

1. the rarest words alone give partial scores (FTS5 ranks their rows cheaply); each other
   word a best row has adds at least what it adds once (looked up with ``word AND (rare
   words)``), so the k-th best visible of these sums is a threshold ``theta`` that the real
   k-th hit reaches;
2. a row outside those best ones gets at most the last one's partial score from the rare
   words, and at most its bound from each other word: a row can reach ``theta`` only if the
   bounds of what it contains add up to ``theta``. An FTS5 boolean query over the words
   (``(rare) OR (common1 AND common2) ...``) selects those rows, and only they and the best
   rows are scored with the full query; every other row scores less than the k-th hit.

Each word's row count (for its bound) is kept per store object for the state of the index it
was counted in (FTS5's totals record and the last chunk id), so it is counted again after any
ingest, from any process.

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
from .sql import HIT_COLUMNS, Cursor, SQLStore, hit_from_row, words

BUSY_TIMEOUT_S = 60.0

# FTS5's bm25() constants (fts5_aux.c): a word adds idf * tf * (k1 + 1) / (tf + k1 * (1 - b +
# b * length / average length)) to a row's score, less than idf * (k1 + 1) for any tf, length.
BM25_K1 = 1.2
BM25_B = 0.75
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
# The threshold step starts with as many of the rarest words as have at most this many rows
# together (FTS5 scores each of those rows).
_THRESHOLD_ROWS = 2000
# How many words' row counts a store object keeps (for the index version it counted them in).
_KNOWN_WORDS = 4096


def fts_query(query: str) -> str | None:
    """An FTS5 query that ORs the query's words, each quoted (no FTS syntax gets through)."""
    terms = words(query)
    return _any(terms) if terms else None


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{w}"' for w in terms)


def _varints(data: bytes) -> list[int]:
    """Every SQLite varint (as FTS5 stores its totals and row sizes) in ``data``."""
    values, at = [], 0
    while at < len(data):
        value = 0
        for i in range(min(9, len(data) - at)):
            byte = data[at + i]
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
        at += i + 1
    return values


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
        self,
        cur: Cursor,
        terms: list[str],
        where: str,
        params: list[object],
        limit: int,
        known: dict[str, tuple[tuple[bytes, int], int]],
    ) -> None:
        self.cur, self.terms, self.where, self.params, self.limit = (
            cur,
            terms,
            where,
            params,
            limit,
        )
        self.known = known
        self.n_rows, self.avgdl = 0, 0.0  # from FTS5's totals record
        self.full = _any(terms)  # the reference query: its word order fixes bm25's float sum

    def top(self) -> list[_Ranked]:
        bounded = self._bounded()
        if bounded is None:
            return self._best(None, None)
        rare, bounds, counts = bounded
        found = self._threshold(rare, counts)
        if found is None:  # fewer than k visible rows among the rare words' ones
            return self._best(None, None)
        theta, size, cap, kept = found
        theta = theta * (1 - _SLACK) - _SLACK
        # A row outside ``kept`` gets at most ``cap`` from the rare words (it was not among
        # their best rows), at most the sum of the bounds of those it has: one bound for all.
        exprs = [f'"{t}"' for t in rare[size:]]
        caps = bounds[size:]
        if cap > 0:
            exprs.insert(0, f"({_any(rare[:size])})")
            caps.insert(0, min(cap * (1 + _SLACK) + _SLACK, sum(bounds[:size])))
        candidates = _can_reach(exprs, caps, theta) if exprs else None
        if isinstance(candidates, str) and candidates.count('"') > 2 * _MAX_PHRASES:
            # A row that has none of the first ``needed`` terms has the rest's bounds at most.
            needed = next(i for i in range(len(exprs)) if sum(caps[i + 1 :]) < theta) + 1
            candidates = " OR ".join(exprs[:needed]) if needed < len(exprs) else True
        if candidates is True:
            return self._best(None, None)
        return self._best(candidates or None, kept)

    def _bounded(self) -> tuple[list[str], list[float], list[int]] | None:
        """The distinct words, rarest first, with each one's bound on what it adds to a score
        and its row count; None where bounds do not help (one word, very many words)."""
        if not 1 < len(self.terms) <= _MAX_BOUNDED_WORDS:
            return None
        cur = self.cur
        cur.execute(
            "SELECT (SELECT block FROM chunk_fts_data WHERE id = 1), "
            "(SELECT max(id) FROM chunk_texts)"
        )
        totals, last = cur.fetchone()
        if not totals:  # an empty index has no totals record yet
            return None
        sizes = _varints(bytes(totals))
        n_rows = self.n_rows = sizes[0]
        self.avgdl = sum(sizes[1:]) / n_rows if n_rows and len(sizes) > 1 else 0.0
        version = (bytes(totals), last)
        counted = []
        for i, term in enumerate(self.terms):
            known = self.known.get(term)
            if known is None or known[0] != version:
                match = f'"{term}"'
                cur.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (match,))
                if len(self.known) >= _KNOWN_WORDS:
                    self.known.clear()
                known = self.known[term] = (version, int(cur.fetchone()[0]))
            counted.append((known[1], i, term))
        counted.sort()
        bounds = []
        for n, _, _ in counted:
            if n > n_rows:
                return None  # the counts do not fit the totals: score everything instead
            idf = math.log((n_rows - n + 0.5) / (n + 0.5))
            bounds.append((idf if idf > 0 else 1e-6) * (BM25_K1 + 1) * (1 + _SLACK) + _SLACK)
        return [c[2] for c in counted], bounds, [c[0] for c in counted]

    def _threshold(
        self, rare: list[str], counts: list[int]
    ) -> tuple[float, int, float, list[int]] | None:
        """A score the k-th hit reaches (the k-th best visible partial score of the best rows
        by the rarest ``size`` words alone, widened a word at a time until k are visible),
        ``size``, the partial score that no other row beats (0 if every row with one of those
        words was fetched) and the visible fetched rows; None if too few are visible."""
        cur, k = self.cur, self.limit
        fetch = max(FETCH_ROWS, 4 * k)
        first = 1  # start with as many rare words as are cheap to score in full
        while first < len(rare) - 1 and sum(counts[: first + 1]) <= _THRESHOLD_ROWS:
            first += 1
        for size in range(first, len(rare)):
            cur.execute(
                "SELECT rowid, bm25(chunk_fts) AS s FROM chunk_fts WHERE chunk_fts MATCH ? "
                "ORDER BY s, rowid LIMIT ?",
                (_any(rare[:size]), fetch),
            )
            rows = cur.fetchall()
            partial = {int(cid): -float(score) for cid, score in rows}
            cur.execute(
                "SELECT o.chunk_id FROM occurrences o "
                "CROSS JOIN documents d ON d.id = o.document_id "
                f"WHERE o.chunk_id IN (SELECT value FROM json_each(?)) AND {self.where}",
                (json.dumps(list(partial)), *self.params),
            )
            seen = collections.Counter(int(r[0]) for r in cur.fetchall())
            if seen.total() < k:
                continue
            least = self._least(rare, counts, size, list(seen), partial)
            scores = sorted(s for cid, n in seen.items() for s in [least[cid]] * n)
            cap = -float(rows[-1][1]) if len(rows) >= fetch else 0.0
            return scores[-k], size, cap, sorted(seen)
        return None

    def _least(
        self,
        rare: list[str],
        counts: list[int],
        size: int,
        ids: list[int],
        partial: dict[int, float],
    ) -> dict[int, float]:
        """Lower bounds of the full scores of rows ``ids``: their ``partial`` score from the
        rarest ``size`` words, plus what each other word they have adds at least (as if it
        were there once: bm25 grows with the count)."""
        least = {cid: partial[cid] for cid in ids}
        if not self.avgdl:
            return least
        cur = self.cur
        cur.execute(
            "SELECT id, sz FROM chunk_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
        norm = {
            int(cid): BM25_K1 * (1 - BM25_B + BM25_B * sum(_varints(bytes(sz))) / self.avgdl)
            for cid, sz in cur.fetchall()
            if sz
        }
        group = _any(rare[:size])
        for term, n in zip(rare[size:], counts[size:], strict=True):
            idf = math.log((self.n_rows - n + 0.5) / (n + 0.5))
            idf = idf if idf > 0 else 1e-6
            cur.execute(
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?", (f'"{term}" AND ({group})',)
            )
            for (cid,) in cur.fetchall():
                if cid in least and cid in norm:
                    least[cid] += idf * (BM25_K1 + 1) / (1 + norm[cid]) * (1 - _SLACK)
        return least

    def _best(self, within: str | None, kept: list[int] | None) -> list[_Ranked]:
        """The best ``limit`` visible occurrences by the bm25 of the full query among every
        matching row, or (``kept`` given) among the rows in ``kept`` or matching ``within``."""
        cur, k = self.cur, self.limit
        args: tuple[object, ...] = (self.full,)
        restrict = ""
        if kept is not None:
            among = "SELECT value FROM json_each(?)"
            args += (json.dumps(kept),)
            if within:
                among = f"SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? UNION {among}"
                args = (self.full, within, json.dumps(kept))
            restrict = f" AND +rowid IN ({among})"
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
            "CROSS JOIN documents d ON d.id = o.document_id "
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
    """An FTS5 query for the rows whose terms (FTS5 expressions) among ``terms[at:]`` can add
    up to ``theta``: True for every row, None for none. Each row it leaves out scores below
    ``theta``."""
    if theta <= 0:
        return True
    if sum(bounds[at:]) < theta:
        return None
    if depth >= _MAX_DEPTH or at == len(terms) - 1:
        return " OR ".join(terms[at:])
    word = terms[at]
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
        self._known: dict[str, tuple[tuple[bytes, int], int]] = {}
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

    def _ranked(
        self, terms: list[str], where: str, params: list[object], limit: int
    ) -> list[Hit]:
        with self._read() as cur:
            ranked = _Ranker(cur, terms, where, params, limit, self._known).top()
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
