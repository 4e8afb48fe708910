"""Corpus and trace storage: SQLite by default, PostgreSQL by URL.

``open_store()`` opens the SQLite store in the data directory (``$QUOTEBOUND_HOME``, default
``~/.quotebound``); ``open_store("postgresql://...")`` opens PostgreSQL. Both apply their
migrations on open.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..corpus import Hit
from ..errors import InputError
from .base import (
    ApiKey,
    DocumentInfo,
    IngestResult,
    Store,
    TraceAttempt,
    TraceRecord,
    TraceSource,
    TraceSummary,
    document_key,
    new_trace_id,
)

__all__ = [
    "ApiKey",
    "DocumentInfo",
    "Hit",
    "IngestResult",
    "Store",
    "TraceAttempt",
    "TraceRecord",
    "TraceSource",
    "TraceSummary",
    "data_dir",
    "document_key",
    "new_trace_id",
    "open_store",
]


def data_dir() -> Path:
    """Where the embedded store lives: ``$QUOTEBOUND_HOME``, else ``~/.quotebound``."""
    home = os.environ.get("QUOTEBOUND_HOME")
    return Path(home).expanduser() if home else Path.home() / ".quotebound"


def open_store(url: str | None = None) -> Store:
    """Open a store: None (SQLite in the data directory), ``sqlite:///path``, or a
    ``postgresql://`` URL."""
    if url is None:
        from .sqlite import SQLiteStore

        return SQLiteStore(data_dir() / "quotebound.db")
    if url.startswith("sqlite:///"):
        from .sqlite import SQLiteStore

        return SQLiteStore(Path(url.removeprefix("sqlite:///")))
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url)
    raise InputError(f"unknown store URL {url!r}: use sqlite:///PATH or postgresql://...")
