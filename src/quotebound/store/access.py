"""Who may read what: API keys and a caller's trace list, in SQL both backends run.

Invariants:
- A key's secret is shown once, at creation, and never stored: the store keeps its sha256.
  Secrets carry 256 random bits, so a plain sha256 (no salt, no stretching) cannot be reversed
  or guessed, and lookup by hash leaks nothing about other keys.
- A key is bound to ACL groups at creation; its id is the owner of the traces it writes, so a
  caller reads only their own traces.
- Revocation is a timestamp (kept for audit), effective on the next request.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import secrets
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..errors import InputError
from .base import ApiKey, TraceSummary

Cursor = Any

KEY_PREFIX = "qb_"
_KEY_SHAPE = re.compile(r"^qb_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$")
_KEY_COLUMNS = "id, name, groups, created_at, revoked_at"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        id=row[0],
        name=row[1],
        groups=tuple(json.loads(row[2])),
        created_at=row[3],
        revoked_at=row[4],
    )


class AccessMixin:
    """API keys and trace listing for a SQL store (``_tx``, ``_read``, ``_sql`` provided)."""

    @abstractmethod
    def _tx(self, lock: str | None = None) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]: ...

    @abstractmethod
    def _sql(self, statement: str) -> str: ...

    def ping(self) -> None:
        with self._read() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()

    def create_key(self, groups: Sequence[str] = (), name: str | None = None) -> tuple[ApiKey, str]:
        for group in groups:
            if not group or group != group.strip():
                raise InputError(f"ACL group {group!r} must be non-empty without edge spaces")
        key_id = secrets.token_hex(4)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(key_id, name, tuple(sorted(set(groups))), _now())
        with self._tx() as cur:
            cur.execute(
                self._sql(
                    "INSERT INTO api_keys (id, hash, name, groups, created_at) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (key.id, hash_secret(secret), name, json.dumps(list(key.groups)), key.created_at),
            )
        return key, secret

    def authenticate(self, secret: str) -> ApiKey | None:
        if not _KEY_SHAPE.match(secret):
            return None
        with self._read() as cur:
            cur.execute(
                self._sql(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE hash = ?"),
                (hash_secret(secret),),
            )
            row = cur.fetchone()
        if row is None or row[4] is not None:
            return None
        return _key(row)

    def list_keys(self) -> list[ApiKey]:
        with self._read() as cur:
            cur.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id")
            return [_key(r) for r in cur.fetchall()]

    def revoke_key(self, key_id: str) -> bool:
        with self._tx() as cur:
            cur.execute(
                self._sql("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                (_now(), key_id),
            )
            return bool(cur.rowcount)

    def list_traces(self, owner: str | None, limit: int = 50) -> list[TraceSummary]:
        who = "owner IS NULL" if owner is None else "owner = ?"
        with self._read() as cur:
            cur.execute(
                self._sql(
                    "SELECT id, created_at, question, status, model FROM traces "
                    f"WHERE {who} ORDER BY created_at DESC, id DESC LIMIT ?"
                ),
                (max(0, limit),) if owner is None else (owner, max(0, limit)),
            )
            return [TraceSummary(*r) for r in cur.fetchall()]
