"""Store connections shared by the threads of one process, two ways: a pool (``Stores``: a
connection checked out per request, so requests run side by side) and one connection behind a
lock (``OneStore``: a caller that holds one open store already). Both are ``checkout()``: the
servers (``serve``, ``mcp --http``) take a pool, ``mcp`` over stdio its one store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from ..errors import QuoteboundError, StoreError
from .base import Store


class Connections(Protocol):
    """Where a thread gets a store connection for one piece of work."""

    def checkout(self) -> AbstractContextManager[Store]: ...


class Stores:
    """A pool of store connections: one is checked out per request and given back after it;
    at most ``idle`` stay open between requests; one that failed is closed, never reused.
    ``url``: as ``open_store`` takes it (None: the data directory's SQLite store)."""

    def __init__(self, url: str | None, idle: int) -> None:
        self.url = url
        self.idle = idle
        self._free: list[Store] = []
        self._lock = threading.Lock()
        self._closed = False
        self.opened = 0  # connections opened so far (for tests and the log)

    @contextmanager
    def checkout(self) -> Iterator[Store]:
        from . import open_store  # (the package opens stores; this module is part of it)

        with self._lock:
            store = self._free.pop() if self._free else None
        if store is None:
            store = open_store(self.url)
            with self._lock:
                self.opened += 1
        healthy = False
        try:
            yield store
            healthy = True
        except StoreError:
            raise
        except QuoteboundError:  # the request failed, not the connection (a 404, a 400)
            healthy = True
            raise
        finally:
            self._give_back(store, healthy)

    def _give_back(self, store: Store, healthy: bool) -> None:
        """Keep a healthy connection for the next request (up to ``idle``); close the rest.
        A StoreError, or anything unexpected, closes it: it may be broken."""
        if healthy:
            with self._lock:
                if not self._closed and len(self._free) < self.idle:
                    self._free.append(store)
                    return
        store.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for store in free:
            store.close()


class OneStore:
    """One open store shared by threads, one at a time (its caller closes it); a thread that
    holds it may check it out again."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.RLock()

    @contextmanager
    def checkout(self) -> Iterator[Store]:
        with self._lock:
            yield self.store
