"""Shared fixtures: a private data directory for every test, and the two store backends."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pgcluster import Cluster, start_cluster
from quotebound.store import Store, open_store

# `make test` (and so CI) explores the same examples on every run, so a red run is the code's
# doing, never the dice's, and a slow CI machine is no failure either (no deadline, no too_slow
# check); `make fuzz` (QB_HYPOTHESIS=fuzz) draws new ones, many more of them.
_PATIENT = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "print_blob": True}
settings.register_profile("repeatable", derandomize=True, **_PATIENT)
settings.register_profile("fuzz", derandomize=False, **_PATIENT)
settings.load_profile(os.environ.get("QB_HYPOTHESIS", "repeatable"))


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test touches the user's real data directory."""
    monkeypatch.setenv("QUOTEBOUND_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    cluster = start_cluster()
    if isinstance(cluster, str):
        pytest.skip(cluster)
    try:
        yield cluster
    finally:
        cluster.stop()


_databases = itertools.count()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's throwaway cluster."""
    import psycopg

    name = f"qb_test_{next(_databases)}"
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return pg_cluster.url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend (the PostgreSQL one skips where no server can run)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield opened
