"""PostgreSQL, for a store shared by many workers: full-text search over a stored tsvector.

Writers that could race take a transaction-scoped advisory lock: ingest per document key (two
workers adding versions of one document serialise; different documents do not), migrations on
one global key. Traces need no lock: their ids are unique and their texts content-addressed.
Ranking is PostgreSQL's ``ts_rank_cd`` over English stems, with the words of the query ORed.
"""

from __future__ import annotations

import glob
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
from .sql import HIT_COLUMNS, SQLStore, hit_from_row

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
        sql = (
            f"SELECT {HIT_COLUMNS}, ts_rank_cd(ct.tsv, q.query) AS score "
            "FROM (SELECT to_tsquery('english', ?) AS query) q "
            "JOIN chunk_texts ct ON ct.tsv @@ q.query "
            "JOIN occurrences o ON o.chunk_id = ct.id JOIN documents d ON d.id = o.document_id "
            f"WHERE {where} ORDER BY score DESC, d.key, o.ordinal LIMIT ?"
        )
        tsquery = " | ".join(terms)  # words are \\w+ only: no tsquery syntax gets through
        with self._read() as cur:
            cur.execute(self._sql(sql), (tsquery, *params, limit))
            return [hit_from_row(r) for r in cur.fetchall()]

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
