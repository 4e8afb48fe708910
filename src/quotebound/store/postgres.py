"""PostgreSQL, for a store shared by many workers: full-text search over a stored tsvector.

Writers that could race take a transaction-scoped advisory lock: ingest per document key (two
workers adding versions of one document serialise; different documents do not), migrations on
one global key. Traces need no lock: their ids are unique and their texts content-addressed.
Ranking is BM25 over English stems (PostgreSQL's ``english`` text search configuration), the
query's words ORed, with FTS5's constants and a fixed average chunk length: each chunk's weight
for each lexeme is stored as the chunk is (``chunk_terms``, kept by a trigger), and the best
hits are read from an index of those weights best first, never by scoring every match.
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

from ..corpus import Hit
from ..errors import StoreError
from .integrity import Backup
from .migrations import PG_TF, PG_WEIGHT
from .sql import HIT_COLUMNS, SQLStore, hit_from_row

# Step 1: each lexeme's best chunks, scored in full (then MaxScore, if they do not settle it).
_FIRST_DEPTH = 64
_SLACK = 1e-6  # (weights are stored as REAL: a bound must never fall below a real score)
# Both steps: the chunks of ``top`` scored in full over ``q``, filtered, the best first.
_SCORED = (
    "scored AS (SELECT p.chunk_id, sum(q.idf * p.w) AS score FROM top CROSS JOIN q "
    "  JOIN chunk_terms p ON p.chunk_id = top.chunk_id AND p.term = q.term "
    "  GROUP BY p.chunk_id) "
    "SELECT {hits}, s.score FROM scored s JOIN chunk_texts ct ON ct.id = s.chunk_id "
    "JOIN occurrences o ON o.chunk_id = s.chunk_id JOIN documents d ON d.id = o.document_id "
    "WHERE {where} ORDER BY s.score DESC, d.key, o.ordinal LIMIT ?"
)
_CANDIDATES = (
    "WITH q(term, idf) AS (SELECT * FROM unnest(?::text[], ?::float8[])), "
    "top AS (SELECT DISTINCT b.chunk_id FROM q CROSS JOIN LATERAL ("
    "  SELECT chunk_id FROM chunk_terms WHERE term = q.term ORDER BY w DESC LIMIT ?) b), " + _SCORED
)
# Step 2: the chunks of each lexeme with a cutoff whose weight reaches it, scored in full.
_REST = (
    "WITH q(term, idf, cutoff) AS (SELECT * FROM unnest(?::text[], ?::float8[], ?::float8[])), "
    "top AS (SELECT DISTINCT p.chunk_id FROM q JOIN chunk_terms p "
    "  ON p.term = q.term AND p.w >= q.cutoff WHERE q.cutoff IS NOT NULL), " + _SCORED
)
# Each lexeme's document frequency and best weight (the first entry of its index range).
_STATS = (
    "SELECT s.term, s.df, (SELECT w FROM chunk_terms p WHERE p.term = s.term "
    "ORDER BY w DESC LIMIT 1) FROM term_stats s WHERE s.term = ANY(%s)"
)
_BOUND = (
    "SELECT sum(q.idf * coalesce(n.w, 0)) FROM unnest(%s::text[], %s::float8[]) q(term, idf) "
    "LEFT JOIN LATERAL (SELECT w FROM chunk_terms WHERE term = q.term "
    "ORDER BY w DESC OFFSET %s LIMIT 1) n ON true"
)


_ADD_WEIGHTS = (
    f"INSERT INTO chunk_terms (chunk_id, term, w, tf, len) "
    f"SELECT c.id, u.lexeme, {PG_WEIGHT.replace('positions', 'u.positions')}, "
    f"{PG_TF.replace('positions', 'u.positions')}, l.len "
    f"FROM chunk_texts c CROSS JOIN LATERAL (SELECT coalesce(sum({PG_TF}), 0) AS len "
    f"FROM unnest(c.tsv)) l CROSS JOIN LATERAL unnest(c.tsv) u WHERE c.id = ANY(%s)"
)
_ADD_STATS = (
    "INSERT INTO term_stats (term, df) SELECT term, n FROM ("
    "SELECT '' AS term, %s::bigint AS n UNION ALL "
    "SELECT u.lexeme, count(*) FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) u "
    "WHERE c.id = ANY(%s) GROUP BY u.lexeme) x ORDER BY term "
    "ON CONFLICT (term) DO UPDATE SET df = term_stats.df + excluded.df"
)


def _cutoffs(lexemes: dict[str, tuple[float, float]], theta: float) -> dict[str, float]:
    """MaxScore: of ``lexemes`` (idf, best weight), those a chunk scoring ``theta`` or more
    may owe its score to, each with the least weight it then has for it (where a lexeme's
    whole list must be read: 0). The others, whose bounds together fall short of ``theta``,
    get none."""
    bounds = {t: idf * best for t, (idf, best) in lexemes.items()}
    left, alone = 0.0, set()
    for t in sorted(bounds, key=lambda t: (bounds[t], t)):
        if left + bounds[t] >= theta:
            break
        left += bounds[t]
        alone.add(t)
    total = sum(bounds.values())
    return {
        t: max(0.0, (theta - (total - bounds[t])) / lexemes[t][0] - _SLACK)
        for t in bounds
        if t not in alone
    }


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
                yield cur
        except psycopg.Error as exc:
            raise StoreError(f"store read failed: {exc}") from exc

    def _ranked(self, terms: list[str], where: str, params: list[object], limit: int) -> list[Hit]:
        """The best ``limit`` visible occurrences by BM25 over the query's lexemes (English
        stems, ORed), read best first from ``chunk_terms``; exact for the stored weights
        (``PG_BM25_AVG_LEN``).

        1. Each lexeme's ``_FIRST_DEPTH`` best chunks are scored in full and filtered by
           ``where``; a chunk in none of those lists scores at most the sum of each lexeme's
           next weight times its idf, so if the ``limit``-th hit scores more, that is all.
        2. Else (MaxScore) the ``limit``-th score ``theta`` is a floor for the real one. The
           lexemes whose bounds (idf times their best weight), smallest first, add up to less
           than ``theta`` cannot make a hit alone: a hit has one of the others, and of such a
           lexeme ``t`` it has a weight of at least ``(theta - (sum of every other lexeme's
           bound)) / idf(t)``. Those parts of the other lexemes' lists are read (from the
           index, best first), their chunks scored in full and filtered: the hits."""
        with self._read() as cur:
            cur.execute(
                "SELECT coalesce(array_agg(DISTINCT x), '{}') "
                "FROM unnest(tsvector_to_array(to_tsvector('english', %s))) x",
                (" ".join(terms),),
            )
            lexemes = [str(x) for x in cur.fetchone()[0]]
            if not lexemes:
                return []  # only stop words
            cur.execute(_STATS, ([*lexemes, ""],))
            stats = {str(t): (int(df), float(best or 0.0)) for t, df, best in cur.fetchall()}
            total = stats.pop("", (0, 0.0))[0]
            idf = {t: _idf(total, df) for t, (df, _) in stats.items() if df > 0}
            if not idf:
                return []
            names, weights = list(idf), [idf[t] for t in idf]
            candidates = self._sql(_CANDIDATES.format(hits=HIT_COLUMNS, where=where))
            cur.execute(candidates, (names, weights, _FIRST_DEPTH, *params, limit))
            rows = cur.fetchall()
            if max(stats[t][0] for t in names) <= _FIRST_DEPTH:
                return [hit_from_row(r) for r in rows]  # every chunk with a lexeme was scored
            cur.execute(_BOUND, (names, weights, _FIRST_DEPTH))
            bound = float(cur.fetchone()[0] or 0.0)
            if len(rows) >= limit and float(rows[limit - 1][-1]) > bound + _SLACK:
                return [hit_from_row(r) for r in rows]
            theta = float(rows[limit - 1][-1]) - _SLACK if len(rows) >= limit else 0.0
            cutoffs = _cutoffs({t: (idf[t], stats[t][1]) for t in names}, theta)
            cur.execute(
                self._sql(_REST.format(hits=HIT_COLUMNS, where=where)),
                (names, weights, [cutoffs.get(t) for t in names], *params, limit),
            )
            return [hit_from_row(r) for r in cur.fetchall()]

    def _chunks_added(self, cur: Any, added: list[tuple[int, str]]) -> None:
        """The BM25 weights of the chunk texts this ingest stored first, and their words'
        document frequencies, in its transaction: one statement for all of a document's new
        texts (the rows of ``term_stats`` locked in one order, so writers never deadlock)."""
        ids = [chunk_id for chunk_id, _ in added]
        cur.execute(_ADD_WEIGHTS, (ids,))
        cur.execute(_ADD_STATS, (len(ids), ids))

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
