"""PostgreSQL, for a store shared by many workers: full-text search over a stored tsvector.

Writers that could race take a transaction-scoped advisory lock: ingest per document key (two
workers adding versions of one document serialise; different documents do not), migrations on
one global key. Traces need no lock: their ids are unique and their texts content-addressed.
Ranking is BM25 over English stems (PostgreSQL's ``english`` text search configuration), the
query's words ORed, with FTS5's constants and idf and the corpus's average chunk length: each
lexeme's postings are stored packed (``term_postings``, kept by ingest), read whole and scored
with numpy, so the ranking is exact at a few milliseconds, and only the best texts are read.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import subprocess
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus import Hit
from ..errors import StoreError
from .integrity import Backup
from .migrations import PG_BM25_B, PG_BM25_K1, PG_POSTINGS, PG_TF
from .sql import HIT_COLUMNS, SQLStore, hit_from_row

# A search reads every segment of its lexemes' postings (``term_postings``: one row per segment,
# a few dozen at most per lexeme) and scores every chunk text in them with numpy; the texts
# are then read best first, in batches of chunk ids, until ``limit`` visible hits are found:
# the first batch ``_FIRST_BATCH`` texts (or ``4 * limit``), each next one ``_GROWTH`` times
# larger (a caller who may see little of the corpus reads more of them).
_FIRST_BATCH = 64
_GROWTH = 8
# The postings of the query's lexemes, every segment of each.
_POSTINGS = (
    "SELECT term, n, ids, tfs, lens FROM term_postings "
    "WHERE term = ANY(tsvector_to_array(to_tsvector('english', %s))) ORDER BY term, seg"
)
# The visible occurrences of a batch of chunk texts (id, score), best first: found on narrow
# rows (ids, scores, keys), and only the hits' texts read whole.
_VISIBLE = (
    "WITH s(chunk_id, score) AS (SELECT * FROM unnest(?::bigint[], ?::float8[])), "
    "best AS (SELECT o.id, s.score FROM s JOIN occurrences o ON o.chunk_id = s.chunk_id "
    "  JOIN documents d ON d.id = o.document_id WHERE {where} "
    "  ORDER BY s.score DESC, d.key, o.ordinal LIMIT ?) "
    "SELECT {hits}, b.score FROM best b JOIN occurrences o ON o.id = b.id "
    "JOIN chunk_texts ct ON ct.id = o.chunk_id JOIN documents d ON d.id = o.document_id "
    "ORDER BY b.score DESC, d.key, o.ordinal"
)
# Size-tiered merging of a lexeme's segments after an ingest: segments whose entry counts
# share a power of ``_TIER`` are merged once there are ``_TIER`` of them, so a lexeme keeps
# fewer than ``_TIER`` segments per power (a few dozen rows at most) and each entry is copied
# about log4(df) times in all. One merger at a time (a try-lock: a busy one is left to the
# next ingest); a merge deletes the segments it reads and writes them back as one, in one
# statement, so a search's snapshot holds either the old segments or the new one.
_TIER = 4
# Merging reads the segment sizes of every lexeme touched (~430 for a 20-chunk document): done
# every ``_MERGE_EVERY`` ingests of one store object and when it closes, for all of them at once.
_MERGE_EVERY = 8
_MERGE_LOCK = "quotebound:postings-merge"
_MERGE = (
    "WITH m(term, seg, grp) AS (SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[])), "
    "gone AS (DELETE FROM term_postings p USING m WHERE p.term = m.term AND p.seg = m.seg "
    "  RETURNING p.term, p.seg, p.n, p.ids, p.tfs, p.lens, m.grp) "
    "INSERT INTO term_postings (term, n, ids, tfs, lens) SELECT term, sum(n), "
    "string_agg(ids, '' ORDER BY seg), string_agg(tfs, '' ORDER BY seg), "
    "string_agg(lens, '' ORDER BY seg) FROM gone GROUP BY term, grp ORDER BY term "
    "RETURNING term, n"
)
# An ingest's new chunk texts: a segment per lexeme (each its texts' postings), and the
# lexemes' document frequencies and the texts' count and length added to ``term_stats`` (its
# rows locked in one order, so that writers never deadlock); the segments' sizes returned.
_ADD_POSTINGS = (
    f"WITH p AS (INSERT INTO term_postings (term, n, ids, tfs, lens) {PG_POSTINGS} "
    "  WHERE c.id = ANY(%s) GROUP BY u.lexeme ORDER BY u.lexeme RETURNING term, n), "
    "s AS (INSERT INTO term_stats (term, df, lexemes) SELECT term, n, m FROM ("
    "  SELECT '' AS term, %s::bigint AS n, (SELECT coalesce(sum(" + PG_TF + "), 0) "
    "  FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) WHERE c.id = ANY(%s))::bigint AS m "
    "  UNION ALL SELECT term, n, 0 FROM p) x ORDER BY term "
    "  ON CONFLICT (term) DO UPDATE SET df = term_stats.df + excluded.df, "
    "  lexemes = term_stats.lexemes + excluded.lexemes) "
    "SELECT term, n FROM p"
)


def _tier(n: int) -> int:
    """A segment's size class: segments of ``n`` entries with the same ``n.bit_length() // 2``
    (about a power of 4) are merged once ``_TIER`` of them gather."""
    return max(int(n), 1).bit_length() // 2


def _below(n: int) -> int:
    """The smallest size past the tier of ``n`` (every tier up to it holds smaller sizes)."""
    return 1 << (2 * _tier(n) + 1)


def _merges(segments: list[tuple[str, int, int]]) -> tuple[list[str], list[int], list[int]]:
    """Which segments (term, seg, n) to merge: per term, each power of ``_TIER`` (by entry
    count) holding ``_TIER`` or more segments becomes one group. Flat (terms, segs, groups)."""
    tiers: dict[tuple[str, int], list[int]] = {}
    for term, seg, n in segments:
        tiers.setdefault((term, _tier(n)), []).append(int(seg))
    terms: list[str] = []
    segs: list[int] = []
    groups: list[int] = []
    for (term, _), chosen in sorted(tiers.items()):
        if len(chosen) >= _TIER:
            group = len(set(groups))
            terms += [term] * len(chosen)
            segs += chosen
            groups += [group] * len(chosen)
    return terms, segs, groups


def _scores(rows: list[tuple[Any, ...]], total: int, lexemes: int) -> tuple[Any, Any] | None:
    """Every chunk text in the postings ``rows`` (term, n, ids, tfs, lens; each lexeme's
    segments together) scored by BM25 (FTS5's constants and idf, the corpus's average
    length): (chunk ids, scores), unordered; None when no lexeme has postings."""
    avg = lexemes / total if total and lexemes else 1.0
    ids: list[Any] = []
    weights: list[Any] = []
    by_term: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_term.setdefault(str(row[0]), []).append(row)
    for segments in by_term.values():
        idf = _idf(total, sum(int(r[1]) for r in segments))
        tf = np.frombuffer(b"".join(r[3] for r in segments), ">i2").astype(np.float64)
        length = np.frombuffer(b"".join(r[4] for r in segments), ">i2")
        norm = PG_BM25_K1 * ((1 - PG_BM25_B) + PG_BM25_B * length.astype(np.float64) / avg)
        ids.append(np.frombuffer(b"".join(r[2] for r in segments), ">i4"))
        weights.append(idf * tf * (PG_BM25_K1 + 1) / (tf + norm))
    if not ids:
        return None
    every, weight = np.concatenate(ids).astype(np.int64), np.concatenate(weights)
    if int(every.max()) < 4 * len(every) + (1 << 20):  # ids dense enough to count directly
        summed = np.bincount(every, weights=weight)
        chunk_ids = np.flatnonzero(summed)
        scores = summed[chunk_ids]
    else:
        chunk_ids, where = np.unique(every, return_inverse=True)
        scores = np.bincount(where, weights=weight)
    return chunk_ids, scores


def _best(chunk_ids: Any, scores: Any, size: int) -> tuple[Any, Any, Any, Any]:
    """The ``size`` best of scored chunk texts, and every other scoring as much as the last of
    them (ties are never split), best first; and the rest, unordered. A partition, not a sort
    of every match: at 500,000 chunks a common query scores a quarter million texts."""
    if size >= len(scores):
        top = np.arange(len(scores))
    else:
        floor = np.partition(scores, len(scores) - size)[len(scores) - size]
        top = np.flatnonzero(scores >= floor)
    order = top[np.lexsort((chunk_ids[top], -scores[top]))]  # (ties: by id, then key in SQL)
    rest = np.ones(len(scores), dtype=bool)
    rest[top] = False
    return chunk_ids[order], scores[order], chunk_ids[rest], scores[rest]


def _idf(total: int, df: int) -> float:
    """FTS5's idf: ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6."""
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


try:
    import psycopg
except ImportError:  # pragma: no cover - psycopg is a dependency
    psycopg = None  # type: ignore[assignment]


class PostgresStore(SQLStore):
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        if psycopg is None:  # pragma: no cover
            raise StoreError("PostgreSQL needs psycopg: pip install 'psycopg[binary]'")
        self.url = _redact(url)  # what reports print: never the password
        self._dsn = url  # (for pg_dump; never printed)
        # lexemes whose segments an ingest added, to merge: the size past the tiers to read
        self._touched: dict[str, int] = {}
        self._unmerged = 0  # ingests since the last merge
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL ({_redact(url)}): {exc}") from exc
        self._migrate()

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    @contextmanager
    def _tx(self, lock: str | None = None) -> Iterator[Any]:
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                if lock is not None:
                    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
                yield cur
        except psycopg.Error as exc:
            raise StoreError(f"store write failed: {exc}") from exc

    @contextmanager
    def _read(self) -> Iterator[Any]:
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                # one snapshot for every statement of the read (a search's bounds hold only
                # over the data they were read from)
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield cur
        except psycopg.Error as exc:
            raise StoreError(f"store read failed: {exc}") from exc

    def _ranked(self, terms: list[str], where: str, params: list[object], limit: int) -> list[Hit]:
        """The best ``limit`` visible occurrences by BM25 over the query's lexemes (English
        stems, ORed): every chunk text with one of them scored from the packed postings
        (``_scores``), exactly, then read best first in batches, filtered by ``where``,
        until ``limit`` visible occurrences are found or none is left. A batch holds every
        text scoring as much as its last (ties are never split), so a text not yet read
        scores less than every one read: the hits are the best the caller may see."""
        with self._read() as cur:
            cur.execute("SELECT df, lexemes FROM term_stats WHERE term = ''")
            total, lexemes = cur.fetchone() or (0, 0)
            cur.execute(_POSTINGS, (" ".join(terms),), binary=True)
            ranked = _scores(cur.fetchall(), int(total), int(lexemes))
            if ranked is None:
                return []
            chunk_ids, scores = ranked
            visible = self._sql(_VISIBLE.format(hits=HIT_COLUMNS, where=where))
            hits: list[Hit] = []
            size = max(_FIRST_BATCH, 4 * limit)
            while len(chunk_ids) and len(hits) < limit:
                ids, best, chunk_ids, scores = _best(chunk_ids, scores, size)
                cur.execute(visible, (ids.tolist(), best.tolist(), *params, limit - len(hits)))
                hits += [hit_from_row(r) for r in cur.fetchall()]
                size *= _GROWTH
            return hits

    def _chunks_added(self, cur: Any, added: list[tuple[int, str]]) -> None:
        """The postings of the chunk texts this ingest stored first (a segment per lexeme),
        and their words' document frequencies and lengths, in its transaction, in one
        statement for all of a document's new texts; the lexemes are merged after the commit
        (``_ingested``)."""
        ids = [chunk_id for chunk_id, _ in added]
        cur.execute(_ADD_POSTINGS, (ids, len(ids), ids))
        for term, n in cur.fetchall():
            self._touched[str(term)] = max(self._touched.get(str(term), 0), _below(int(n)))

    def _ingested(self) -> None:
        """After an ingest committed: every ``_MERGE_EVERY`` ingests of this store object
        (and when it closes), ``merge_postings``; after one held off by another merger, at
        each ingest until it runs."""
        self._unmerged += 1
        if self._unmerged >= _MERGE_EVERY:
            self.merge_postings()

    def merge_postings(self) -> None:
        """The segments of the lexemes this store object's ingests touched, merged where
        ``_TIER`` of one size have gathered (``_merges``), in a transaction of their own; only
        the tiers the new segments joined are read, then those the merged ones join. When
        another writer is merging, nothing waits: the lexemes are merged later (until then a
        search reads a few more segments, with the same results)."""
        if not self._touched:
            return
        touched = dict(self._touched)
        with self._tx() as cur:
            cur.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))", (_MERGE_LOCK,))
            if not cur.fetchone()[0]:
                return
            while touched:
                cur.execute(
                    "SELECT term, seg, n FROM term_postings WHERE term = ANY(%s)", (list(touched),)
                )
                sizes = [r for r in cur.fetchall() if int(r[2]) < touched[str(r[0])]]
                terms, segs, groups = _merges(sizes)
                if not terms:
                    break
                cur.execute(_MERGE, (terms, segs, groups))
                touched = {}
                for term, n in cur.fetchall():
                    touched[str(term)] = max(touched.get(str(term), 0), _below(int(n)))
        self._touched.clear()
        self._unmerged = 0

    def backup(self, dest: Path) -> Backup:
        """``pg_dump --format=custom`` of the store's database to ``dest``, then the archive
        listed (``pg_restore --list``) to see it is whole. Restore: docs/corpus.md."""
        traces = self._trace_count()
        params = psycopg.conninfo.conninfo_to_dict(self._dsn)
        env = dict(os.environ)
        password = params.pop("password", None)
        if password is not None:
            env["PGPASSWORD"] = str(password)  # (not on a command line others can read)
        dsn = psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items()})
        _run_tool("pg_dump", ["--format=custom", "--no-owner", f"--file={dest}", dsn], env)
        listing = _run_tool("pg_restore", ["--list", str(dest)], env)
        entries = sum(1 for line in listing.splitlines() if line and not line.startswith(";"))
        return Backup(self.url, str(dest), "pg_dump", dest.stat().st_size, traces, None, entries)

    def close(self) -> None:
        try:
            self.merge_postings()
        except StoreError:
            pass  # (a lost connection: the lexemes are merged after later ingests)
        finally:
            self._conn.close()


def _tool(name: str) -> str:
    """The newest installed PostgreSQL client program ``name`` (Debian keeps each version's
    in /usr/lib/postgresql/N/bin), else the one on PATH."""
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    path = found[-1] if found else shutil.which(name)
    if path is None:
        raise StoreError(f"{name} is not installed: apt-get install postgresql-client")
    return path


def _run_tool(name: str, args: list[str], env: dict[str, str]) -> str:
    try:
        done = subprocess.run(
            [_tool(name), *args], env=env, capture_output=True, text=True, timeout=3600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StoreError(f"{name} failed: {exc}") from exc
    if done.returncode != 0:
        raise StoreError(f"{name} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def _redact(url: str) -> str:
    """The URL without its password (in the userinfo or a ``password=`` parameter)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        creds, _, host = netloc.rpartition("@")
        user = creds.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in creds else f"{user}@{host}"
    query = urllib.parse.urlencode(
        [
            (k, "***" if k.lower() == "password" else v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        ]
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
