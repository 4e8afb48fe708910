"""PostgreSQL, for a store shared by many workers: full-text search over a stored tsvector.

Writers that could race take a transaction-scoped advisory lock: ingest per document key (two
workers adding versions of one document serialise; different documents do not), migrations on
one global key. Traces need no lock: their ids are unique and their texts content-addressed.
Ranking is BM25 over English stems (PostgreSQL's ``english`` text search configuration), the
query's words ORed, with FTS5's constants and a fixed average chunk length: each chunk's weight
for each lexeme is stored as the chunk is (``chunk_terms``, kept by ingest), and the best hits
are read from an index of those weights best first, never by scoring every match.
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

# Step 1: each lexeme's best chunks, scored in full (then step 2, if they do not settle it).
_FIRST_DEPTH = 64
# Step 2: the part of theta that chunks step 2 does not read may reach at most (the lower,
# the deeper each list is read and the fewer chunks are scored in full; 0.25 measured best
# at 50,000 chunks: benchmarks/store_speed.py).
_SHARE = 0.25
# The most step 2 reads of one lexeme's list, and the most chunks it scores in full: the
# bound on its work. Past either, the hits are the best of what was read, not proven the
# best (``last_search_exact``); at 50,000 chunks neither is reached by 96% of the queries.
_MOST_READ = 32768
_MOST_SCORED = 1000
_SLACK = 1e-6  # (sums in another order differ in the last bits: a bound must cover them)
# Both steps: the chunks of ``top`` scored in full over ``q`` (each weight one probe of the
# primary key); of their visible occurrences the best ``limit``, found on narrow rows (ids,
# scores, keys), and only theirs read whole.
_SCORED = (
    "scored AS (SELECT top.chunk_id, s.score FROM top CROSS JOIN LATERAL ("
    "  SELECT sum(q.idf * p.w) AS score FROM q JOIN chunk_terms p "
    "  ON p.chunk_id = top.chunk_id AND p.term = q.term) s), "
    "best AS (SELECT v.id, s.score FROM scored s CROSS JOIN LATERAL ("
    "  SELECT o.id, d.key, o.ordinal FROM occurrences o JOIN documents d ON d.id = o.document_id "
    "  WHERE o.chunk_id = s.chunk_id AND {where}) v "
    "  ORDER BY s.score DESC, v.key, v.ordinal LIMIT ?) "
    "SELECT {hits}, b.score, o.chunk_id{checks} FROM best b JOIN occurrences o ON o.id = b.id "
    "JOIN chunk_texts ct ON ct.id = o.chunk_id JOIN documents d ON d.id = o.document_id "
    "ORDER BY b.score DESC, d.key, o.ordinal"
)
_CANDIDATES = (
    "WITH q(term, idf) AS (SELECT * FROM unnest(?::text[], ?::float8[])), "
    "top AS (SELECT DISTINCT b.chunk_id FROM q CROSS JOIN LATERAL ("
    "  SELECT chunk_id FROM chunk_terms WHERE term = q.term ORDER BY w DESC LIMIT ?) b), " + _SCORED
)
# Step 2: each lexeme with a cutoff read down to it (at most ``_MOST_READ`` entries); each
# chunk read gets a ceiling (its weights read times idf, plus the bound of each lexeme it was
# not read in); those whose ceiling reaches theta are scored in full, with step 1's hits (if
# more than ``_MOST_SCORED`` reach it: the ``_MOST_SCORED`` best ceilings among the chunks
# the caller may see). Every row also says whether a list was cut and whether more reached.
_REST = (
    "WITH q(term, idf, cutoff, bound, df) AS (SELECT * FROM unnest(?::text[], ?::float8[], "
    "  ?::float8[], ?::float8[], ?::bigint[])), "
    "b AS (SELECT q.*, CASE WHEN q.df > ?::bigint THEN (SELECT w FROM chunk_terms "
    "  WHERE term = q.term ORDER BY w DESC OFFSET ?::bigint LIMIT 1) >= q.cutoff "
    "  ELSE false END AS cut FROM q), "
    "total AS (SELECT sum(bound) AS bound FROM b), "
    "r AS (SELECT p.chunk_id, sum(b.idf * p.w - b.bound) + (SELECT bound FROM total) AS ceiling "
    "  FROM b CROSS JOIN LATERAL (SELECT chunk_id, w FROM chunk_terms WHERE term = b.term "
    "  AND w >= b.cutoff ORDER BY w DESC LIMIT ?::bigint) p WHERE b.cutoff IS NOT NULL "
    "  GROUP BY p.chunk_id), "
    "reach AS (SELECT chunk_id, ceiling FROM r WHERE ceiling >= ?::float8), "
    "many AS (SELECT count(*) > ?::bigint AS over FROM reach), "
    "top AS (SELECT chunk_id FROM reach WHERE NOT (SELECT over FROM many) UNION ALL "
    "  (SELECT x.chunk_id FROM reach x WHERE (SELECT over FROM many) AND EXISTS (SELECT 1 "
    "  FROM occurrences o JOIN documents d ON d.id = o.document_id "
    "  WHERE o.chunk_id = x.chunk_id AND {where}) ORDER BY x.ceiling DESC LIMIT ?) "
    "  UNION SELECT unnest(?::bigint[])), " + _SCORED
)
_CHECKS = ", (SELECT bool_or(cut) FROM b), (SELECT over FROM many)"
# Each lexeme's document frequency, best weight (the first entry of its index range) and the
# weight after its first ``_FIRST_DEPTH`` (the most a chunk that step 1 did not read has).
_STATS = (
    "SELECT s.term, s.df, (SELECT w FROM chunk_terms p WHERE p.term = s.term "
    "ORDER BY w DESC LIMIT 1), (SELECT w FROM chunk_terms p WHERE p.term = s.term "
    "ORDER BY w DESC OFFSET %s LIMIT 1) FROM term_stats s WHERE s.term = ANY(%s)"
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
    """Where to stop reading each of ``lexemes`` (idf, the most a chunk step 1 did not read
    weighs for it) so that a chunk read in none of them scores below ``theta``: the lexemes
    whose bounds (idf times that weight), smallest first, stay under an equal share of what
    is left of ``theta`` are not read (no cutoff); the others share the rest equally, each
    read down to the weight its share allows."""
    bounds = {t: idf * most for t, (idf, most) in lexemes.items()}
    rest, order = _SHARE * theta - _SLACK, sorted(bounds, key=lambda t: (bounds[t], t))
    while order and bounds[order[0]] < rest / len(order):
        rest -= bounds[order.pop(0)]
    return {t: (rest / len(order)) / lexemes[t][0] for t in order}


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
        # what bounded the last search's work, if anything ("read": a list was cut at
        # _MOST_READ; "scored": more than _MOST_SCORED chunks could reach the hits)
        self.last_search_bounds: tuple[str, ...] = ()
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
        stems, ORed), read best first from ``chunk_terms``; exact for the stored weights
        (``PG_BM25_AVG_LEN``) unless step 2 reaches its bounds on work.

        1. Each lexeme's ``_FIRST_DEPTH`` best chunks are scored in full and filtered by
           ``where``; a chunk in none of those lists has, for each lexeme, at most the
           weight after them (``after``): if the ``limit``-th hit scores more than those
           weights times their idfs together, that is all.
        2. Else that hit's score ``theta`` is a floor for the real ``limit``-th, and only a
           chunk step 1 did not read can still beat it; each lexeme's ``after`` bounds
           such a chunk's weight for it. The lexemes
           whose bounds, smallest first, fit under an equal share of ``_SHARE * theta`` are
           not read; the others share the rest, each read down to the weight its share
           allows (``_cutoffs``). A chunk read in none of them scores below theta. Each
           chunk read gets a ceiling: its weights read, plus for each lexeme it was not
           read in the most an entry not read adds. Those whose ceiling reaches theta are
           scored in full and filtered, with step 1's hits: the hits.
        ``last_search_exact`` says whether the hits are proven the best (False when a list
        had more than ``_MOST_READ`` entries to read, or more than ``_MOST_SCORED`` chunks
        reached theta, visible or not: the hits are then the best of those read and
        scored, ``last_search_bounds`` says which)."""
        self.last_search_bounds = ()
        with self._read() as cur:
            cur.execute(
                "SELECT coalesce(array_agg(DISTINCT x), '{}') "
                "FROM unnest(tsvector_to_array(to_tsvector('english', %s))) x",
                (" ".join(terms),),
            )
            lexemes = [str(x) for x in cur.fetchone()[0]]
            if not lexemes:
                return []  # only stop words
            cur.execute(_STATS, (_FIRST_DEPTH, [*lexemes, ""]))
            stats = {
                str(t): (int(df), float(most or 0.0), float(after or 0.0))
                for t, df, most, after in cur.fetchall()
            }
            total = stats.pop("", (0, 0.0, 0.0))[0]
            idf = {t: _idf(total, df) for t, (df, _, _) in stats.items() if df > 0}
            if not idf:
                return []
            names, weights = list(idf), [idf[t] for t in idf]
            dfs = [stats[t][0] for t in names]
            candidates = self._sql(_CANDIDATES.format(hits=HIT_COLUMNS, where=where, checks=""))
            cur.execute(candidates, (names, weights, _FIRST_DEPTH, *params, limit))
            rows = cur.fetchall()
            if max(dfs) <= _FIRST_DEPTH:
                return [hit_from_row(r) for r in rows]  # every chunk with a lexeme was scored
            bound = sum(idf[t] * stats[t][2] for t in names)
            if len(rows) >= limit and float(rows[limit - 1][-2]) > bound + _SLACK:
                return [hit_from_row(r) for r in rows]
            theta = float(rows[limit - 1][-2]) - _SLACK if len(rows) >= limit else 0.0
            cutoffs = _cutoffs({t: (idf[t], stats[t][2]) for t in names}, theta)
            # What an entry not read adds at most: below its cutoff, and after step 1's reads.
            bounds = [idf[t] * max(0.0, min(stats[t][2], cutoffs.get(t, math.inf))) for t in names]
            rest = _REST.format(hits=HIT_COLUMNS, where=where, checks=_CHECKS)
            cur.execute(
                self._sql(rest),
                (
                    names,
                    weights,
                    [cutoffs.get(t) for t in names],
                    bounds,
                    dfs,
                    _MOST_READ,
                    _MOST_READ,
                    _MOST_READ,
                    theta,
                    _MOST_SCORED,
                    *params,
                    _MOST_SCORED,
                    [int(r[-1]) for r in rows],
                    *params,
                    limit,
                ),
            )
            rows = cur.fetchall()
            if rows:
                cut, over = bool(rows[0][-2]), bool(rows[0][-1])
            else:  # (nothing visible: whether a list was long enough to be cut, or to reach)
                cut, over = max(dfs) > _MOST_READ, sum(dfs) > _MOST_SCORED
            self.last_search_bounds = ("read",) * cut + ("scored",) * over
            return [hit_from_row(r) for r in rows]

    @property
    def last_search_exact(self) -> bool:
        """Whether the last search's hits are proven the best (no bound on work reached)."""
        return not self.last_search_bounds

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
