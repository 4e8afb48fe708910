"""The store as a system of record: `check` finds each kind of damage in plain words, and a
backup, made while the store is in use, restores to a store whose every trace reopens."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kits.clikit import run
from kits.corpuskit import make_doc
from kits.pgcluster import Cluster
from quotebound.corpus import sha256_text
from quotebound.store import Store, TraceAttempt, TraceRecord, TraceSource, open_store

LEAVE = (
    "Employees are entitled to 16 weeks of paid parental leave. In Germany the company tops up "
    "pay for the first 14 weeks. Contractors are not eligible for company-paid parental leave."
)


def _fill(store: Store) -> list[TraceRecord]:
    for n, text in enumerate((LEAVE, "Receipts are uploaded within 30 days of travel.")):
        doc, chunks = make_doc(f"doc{n}.txt", *text.split(". "))
        store.ingest("handbook", doc, chunks)
    traces = []
    for n, hit in enumerate(store.search("parental leave weeks", limit=3)):
        source = TraceSource("S1", hit.text, key=hit.key, start=hit.start, end=hit.end)
        trace = TraceRecord(
            f"question {n}", (source,), (TraceAttempt(f"output {n}", {"status": "x"}),), "p"
        )
        store.write_trace(trace)
        traces.append(trace)
    return traces


def _execute(store: Store, sql: str, *params: object) -> None:
    with store._tx() as cur:  # type: ignore[attr-defined]
        cur.execute(store._sql(sql), params)  # type: ignore[attr-defined]


def test_a_sound_store_checks_clean(store: Store) -> None:
    traces = _fill(store)
    report = store.check()
    assert report.ok, report.problems
    assert report.counts["documents"] == 2 and report.counts["traces"] == len(traces) == 3
    assert report.counts["occurrences"] >= 3 and report.counts["blobs"] >= 2 + 3 * 2


def test_check_names_each_kind_of_damage(store: Store) -> None:
    traces = _fill(store)
    digest = store.documents()[0].content_hash
    # a document's text changed in place, behind the store's back
    _execute(store, "UPDATE blobs SET text = ? WHERE hash = ?", "tampered", digest)
    problems = store.check().problems
    assert any(f"blobs: the text stored under {digest[:12]}" in p for p in problems), problems
    assert any("is not the document's text there" in p for p in problems), problems
    # a trace's output removed
    _execute(store, "DELETE FROM blobs WHERE hash = ?", sha256_text("output 1"))
    problems = store.check().problems
    assert any(f"trace {traces[1].id}: a model output is missing" in p for p in problems)


def test_check_finds_a_full_text_index_out_of_step(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
        _fill(store)
        _execute(store, "DELETE FROM chunk_fts WHERE rowid = (SELECT min(id) FROM chunk_texts)")
        problems = store.check().problems
    assert any("full-text index" in p for p in problems), problems


def test_check_and_backup_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    with open_store(url) as store:
        traces = _fill(store)
        dest = tmp_path / "copy.db"
        # backed up while this connection still holds the store open
        code, out, err = run(["backup", str(dest), "--store", url, "--json"], capsys)
        assert code == 0, err
        result = json.loads(out)
        assert result["kind"] == "sqlite" and result["traces"] == 3
        assert result["verified"]["ok"] and result["size"] == dest.stat().st_size
    code, out, _ = run(["backup", str(dest), "--store", url], capsys)
    assert code == 2  # never overwrites
    code, out, _ = run(["check", "--store", f"sqlite:///{dest}"], capsys)
    assert code == 0 and "sound" in out
    # restore = the copy put in place: every trace reopens, exactly
    restored = tmp_path / "restored.db"
    restored.write_bytes(dest.read_bytes())
    with open_store(f"sqlite:///{restored}") as again:
        assert again.get_traces([t.id for t in traces]) == traces
    with open_store(url) as store:
        _execute(store, "DELETE FROM blobs WHERE hash = ?", store.documents()[0].content_hash)
    code, out, _ = run(["check", "--store", url, "--json"], capsys)
    report = json.loads(out)
    assert code == 1 and not report["ok"] and report["problem_counts"] == {"missing": 1}


def test_a_postgresql_backup_restores_into_a_new_database(
    pg_cluster: Cluster, pg_url: str, tmp_path: Path
) -> None:
    with open_store(pg_url) as store:
        traces = _fill(store)
        result = store.backup(tmp_path / "store.dump")
    assert result.kind == "pg_dump" and result.entries and result.traces == 3
    # the documented restore: a new database, pg_restore into it, then check
    subprocess.run(
        [
            str(pg_cluster.bindir / "createdb"),
            "--host=127.0.0.1",
            f"--port={pg_cluster.port}",
            "--username=postgres",
            "qb_restored",
        ],
        check=True,
    )
    subprocess.run(
        [
            str(pg_cluster.bindir / "pg_restore"),
            "--no-owner",
            f"--dbname={pg_cluster.url('qb_restored')}",
            str(tmp_path / "store.dump"),
        ],
        check=True,
    )
    with open_store(pg_cluster.url("qb_restored")) as restored:
        assert restored.check().ok
        assert restored.get_traces([t.id for t in traces]) == traces
