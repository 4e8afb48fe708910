"""The store, one suite for both backends: migrations, versions, dedup, ACL-filtered BM25
retrieval, append-only traces, concurrency and crash safety."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from kits.corpuskit import make_doc
from quotebound import Source, verify
from quotebound.errors import InputError, NotFoundError, StoreError
from quotebound.store import Store, TraceAttempt, TraceRecord, TraceSource, open_store
from quotebound.store.migrations import migrations

LEAVE = make_doc(
    "leave.txt",
    "Employees are entitled to 16 weeks of paid parental leave unless local law provides more.",
    "Leave may be taken in up to three blocks within 12 months of the birth.",
    title="Leave policy",
)
SALARY = make_doc("salary.txt", "Salary bands are reviewed every April by the compensation team.")


def test_migrations_apply_from_empty_and_once(store_url: str) -> None:
    names = [m.name for m in migrations("sqlite")]
    with open_store(store_url) as first:
        assert first.applied_migrations() == names  # type: ignore[attr-defined]
    with open_store(store_url) as again:  # reopening applies nothing twice
        assert again.applied_migrations() == names  # type: ignore[attr-defined]


def test_ingest_is_versioned_and_idempotent(store: Store) -> None:
    doc, chunks = LEAVE
    first = store.ingest("handbook", doc, chunks)
    assert (first.key, first.version, first.status) == ("handbook:leave.txt", 1, "added")
    assert store.ingest("handbook", doc, chunks).status == "unchanged"
    changed, changed_chunks = make_doc("leave.txt", "Employees are entitled to 18 weeks of leave.")
    second = store.ingest("handbook", changed, changed_chunks)
    assert (second.version, second.status) == (2, "new_version")
    assert store.document_text("handbook:leave.txt", 1) == doc.text  # type: ignore[attr-defined]
    assert store.document_text("handbook:leave.txt") == changed.text  # type: ignore[attr-defined]
    [info] = store.documents("handbook")
    assert (info.version, info.chunks) == (2, 1)
    hits = store.search("weeks leave", corpora=["handbook"])
    assert [h.text for h in hits] == ["Employees are entitled to 18 weeks of leave."]


def test_corpus_prefix_keeps_equal_names_apart(store: Store) -> None:
    doc, chunks = LEAVE
    store.ingest("handbook", doc, chunks)
    store.ingest("vendor", doc, chunks)
    keys = {d.key for d in store.documents()}
    assert keys == {"handbook:leave.txt", "vendor:leave.txt"}
    assert {h.key for h in store.search("parental", corpora=["vendor"])} == {"vendor:leave.txt"}


def test_identical_chunk_text_is_stored_once(store: Store, store_url: str) -> None:
    doc, chunks = LEAVE
    store.ingest("handbook", doc, chunks)
    copy, copy_chunks = make_doc("copy.txt", *(c.text for c in chunks))
    store.ingest("handbook", copy, copy_chunks)
    assert _count(store_url, "chunk_texts") == 2
    assert _count(store_url, "occurrences") == 4
    hits = store.search("parental leave")
    assert {h.key for h in hits} == {"handbook:leave.txt", "handbook:copy.txt"}


def test_bm25_ranks_the_matching_chunk_first(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    store.ingest("handbook", *SALARY)
    hits = store.search("How many weeks of parental leave?")
    assert hits[0].text.startswith("Employees are entitled to 16 weeks")
    assert hits[0].score > 0
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert store.search("salary April")[0].key == "handbook:salary.txt"
    assert store.search("") == [] and store.search("?!") == []
    # query syntax never reaches the engine: quotes, operators and brackets are just words
    assert store.search('parental" OR * NEAR( -')[0].key == "handbook:leave.txt"


def test_search_hit_carries_offsets_and_metadata(store: Store) -> None:
    doc, chunks = LEAVE
    store.ingest("handbook", doc, chunks, url="https://hr.example/leave")
    hit = store.search("three blocks")[0]
    assert doc.text[hit.start : hit.end] == hit.text
    assert (hit.title, hit.url, hit.version, hit.ordinal) == (
        "Leave policy",
        "https://hr.example/leave",
        1,
        1,
    )


def test_acl_filters_before_ranking(store: Store) -> None:
    secret, secret_chunks = make_doc(
        "exec.txt", "Executives get 52 weeks of paid parental leave, parental leave, leave."
    )
    store.ingest("handbook", secret, secret_chunks, acl=["executives"])
    store.ingest("handbook", *LEAVE)  # public
    anyone = store.search("parental leave weeks", limit=50)
    assert all(h.key != "handbook:exec.txt" for h in anyone)
    assert anyone and anyone[0].key == "handbook:leave.txt"
    staff = store.search("parental leave weeks", groups=["staff"], limit=50)
    assert all(h.key != "handbook:exec.txt" for h in staff)
    execs = store.search("parental leave weeks", groups=["staff", "executives"])
    assert execs[0].key == "handbook:exec.txt"


def test_acl_change_takes_effect_without_a_new_version(store: Store) -> None:
    doc, chunks = LEAVE
    store.ingest("handbook", doc, chunks, acl=["hr"])
    assert store.search("parental") == []
    assert store.ingest("handbook", doc, chunks).status == "unchanged"  # groups kept
    assert store.search("parental") == []
    result = store.ingest("handbook", doc, chunks, acl=[])  # same text, now public
    assert (result.status, result.version) == ("updated", 1)
    assert store.search("parental") != []
    changed, changed_chunks = make_doc("leave.txt", "Parental leave is now 20 weeks.")
    store.ingest("handbook", changed, changed_chunks, acl=["hr"])
    newer, newer_chunks = make_doc("leave.txt", "Parental leave is now 22 weeks.")
    assert store.ingest("handbook", newer, newer_chunks).version == 3
    assert store.search("parental") == []  # a new version keeps its groups too
    assert store.search("parental", groups=["hr"])[0].text.endswith("22 weeks.")


def test_deleted_documents_leave_retrieval(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    assert store.delete("handbook:leave.txt")
    assert not store.delete("handbook:leave.txt")
    assert store.search("parental") == []
    assert store.ingest("handbook", *LEAVE).status == "new_version"  # re-ingest brings it back
    assert store.search("parental") != []


def test_chunks_lists_current_chunks_whatever_their_acl_newest_first(store: Store) -> None:
    """What a server warms its vectors from: every current chunk, never a deleted or old one."""
    secret, secret_chunks = make_doc("exec.txt", "Executives get 52 weeks of paid leave.")
    store.ingest("handbook", *LEAVE)
    store.ingest("handbook", secret, secret_chunks, acl=["executives"])
    old, old_chunks = make_doc("old.txt", "An old rule about parking.")
    store.ingest("handbook", old, old_chunks)
    store.delete("handbook:old.txt")
    listed = store.chunks(100)
    assert listed[0].key == "handbook:exec.txt"  # the newest document first
    assert {h.key for h in listed} == {"handbook:exec.txt", "handbook:leave.txt"}
    assert len(listed) == len(LEAVE[1]) + 1 and all(h.hash for h in listed)
    assert len(store.chunks(1)) == 1


@pytest.mark.parametrize("bad", ["", "a:b", " x"])
def test_bad_corpus_names_are_refused(store: Store, bad: str) -> None:
    with pytest.raises(InputError):
        store.ingest(bad, *LEAVE)


def _trace(store: Store, owner: str | None = "alice") -> TraceRecord:
    hit = store.search("parental leave")[0]
    source = TraceSource(
        "S1",
        hit.text,
        key=hit.key,
        title=hit.title,
        start=hit.start,
        end=hit.end,
        version=hit.version,
    )
    raw = (
        '{"answerable": true, "claims": [{"text": "Employees get 16 weeks.", "citations": '
        '[{"source": "S1", "quote": "entitled to 16 weeks of paid parental leave"}]}]}'
    )
    verdict = verify(TraceRecord(question="q", sources=(source,)).working_set(), raw)
    trace = TraceRecord(
        question="How long is parental leave?",
        sources=(source,),
        attempts=(TraceAttempt(raw, verdict.to_dict()),),
        prompt="PROMPT with <sources>",
        model="scripted",
        corpus="handbook",
        status=verdict.status,
        owner=owner,
        timings={"total_ms": 12.5},
        counts={"claims": 1},
        retrieved=(hit.key,),
    )
    store.write_trace(trace)
    return trace


def test_trace_round_trip(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    trace = _trace(store)
    back = store.get_trace(trace.id)
    assert back == trace
    assert back.working_set().get("S1") == Source(
        "S1", trace.sources[0].text, key="handbook:leave.txt", title="Leave policy"
    )


def test_answer_checks_round_trip_and_none_reads_as_empty(store: Store) -> None:
    sources = (TraceSource("S1", "Employees get 16 weeks of paid parental leave."),)
    judged = {"attempt": 1, "label": "unrelated", "score": 0.41, "backend": "fast+judge"}
    checked = TraceRecord("q", sources, answer_checks=(judged, {**judged, "attempt": 2}))
    unchecked = TraceRecord("q", sources)
    store.write_trace(checked)
    store.write_trace(unchecked)
    assert store.get_trace(checked.id).answer_checks == checked.answer_checks
    assert store.get_traces([unchecked.id])[0].answer_checks == ()  # stored as NULL


def test_a_failed_call_is_an_attempt_error_and_legacy_markers_read_as_one(store: Store) -> None:
    sources = (TraceSource("S1", "Employees get 16 weeks of paid parental leave."),)
    new = TraceRecord("q", sources, (TraceAttempt("", error="timeout: no answer in 30 s"),))
    # written before 0005_attempt_errors: the error was the attempt's output
    legacy = TraceRecord("q", sources, (TraceAttempt("<provider error: auth> bad key"),))
    ok = TraceRecord("q", sources, (TraceAttempt("<provider error: x> is just text", {}),))
    for trace in (new, legacy, ok):
        store.write_trace(trace)
    assert store.get_trace(new.id) == new
    assert store.get_trace(legacy.id).attempts == (TraceAttempt("", None, "auth: bad key"),)
    assert store.get_trace(ok.id) == ok  # an output with a verdict is an output, whatever it says


def test_traces_are_read_together_in_the_order_asked(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    mine = [_trace(store, owner="alice") for _ in range(3)]
    theirs = _trace(store, owner="mallory")
    a, b, c = (t.id for t in mine)
    asked = [c, "nope", theirs.id, a, c]
    assert store.get_traces(asked, owner="alice") == [mine[2], mine[0]]  # whole, equal
    assert [t.id for t in store.get_traces(asked)] == [c, theirs.id, a]
    assert store.get_traces([b]) == [store.get_trace(b)] == [mine[1]]
    assert store.get_traces([]) == [] and store.get_traces(["nope"]) == []


def test_a_trace_list_costs_a_few_queries_not_a_few_per_trace(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        store.ingest("handbook", *LEAVE)
        ids = [_trace(store).id for _ in range(30)]
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        assert [t.id for t in store.get_traces(ids)] == ids
        store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert sum(s.lstrip().upper().startswith("SELECT") for s in statements) == 4, statements


def test_trace_owner_is_enforced(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    trace = _trace(store, owner="alice")
    assert store.get_trace(trace.id, owner="alice").id == trace.id
    with pytest.raises(NotFoundError):
        store.get_trace(trace.id, owner="mallory")
    with pytest.raises(NotFoundError):
        store.get_trace("nope")


def test_citation_reopens_from_the_trace_after_the_corpus_moved(store: Store) -> None:
    store.ingest("handbook", *LEAVE)
    trace = _trace(store)
    changed, changed_chunks = make_doc("leave.txt", "Parental leave is now 20 weeks.")
    store.ingest("handbook", changed, changed_chunks)
    store.delete("handbook:leave.txt")
    reopened = store.get_trace(trace.id)
    span = reopened.attempts[0].verdict["claims"][0]["citations"][0]["span"]  # type: ignore[index]
    text = reopened.source("S1").text  # type: ignore[union-attr]
    assert text[span[0] : span[1]] == "entitled to 16 weeks of paid parental leave"


def test_traces_are_append_only(store: Store, store_url: str) -> None:
    store.ingest("handbook", *LEAVE)
    trace = _trace(store)
    with pytest.raises(StoreError):
        store.write_trace(trace)  # the same id again
    for sql in (
        f"UPDATE traces SET question = 'edited' WHERE id = '{trace.id}'",
        f"DELETE FROM trace_sources WHERE trace_id = '{trace.id}'",
    ):
        with pytest.raises(Exception, match="append-only"):
            _execute(store_url, sql)
    assert store.get_trace(trace.id).question == "How long is parental leave?"


# -- several processes at once ------------------------------------------------------------------


def _worker(url: str, n: int, rounds: int) -> None:
    with open_store(url) as store:
        for i in range(rounds):
            doc, chunks = make_doc(f"w{n}-{i}.txt", f"Worker {n} wrote paragraph {i} about leave.")
            store.ingest("shared", doc, chunks)
            shared, shared_chunks = make_doc("shared.txt", f"Shared version by {n}/{i}.")
            store.ingest("shared", shared, shared_chunks)
            store.write_trace(TraceRecord(question=f"{n}/{i}", sources=(TraceSource("S1", "x"),)))


def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    open_store(store_url).close()  # migrate once, as a deployment would
    workers, rounds = 4, 15
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(store_url, n, rounds)) for n in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        assert p.exitcode == 0
    with open_store(store_url) as store:
        docs = {d.key: d for d in store.documents("shared")}
        assert len(docs) == workers * rounds + 1
        assert docs["shared:shared.txt"].version == workers * rounds
        assert _count(store_url, "traces") == workers * rounds
        assert len(store.search("worker paragraph leave", limit=1000)) == workers * rounds


def _slow_ingest(url: str) -> None:
    with open_store(url) as store:
        doc, chunks = make_doc(
            "big.txt", *(f"Paragraph {i} of a big document." for i in range(20000))
        )
        store.ingest("crash", doc, chunks)


def test_killed_writer_leaves_the_store_consistent(store_url: str) -> None:
    with open_store(store_url) as store:
        store.ingest("crash", *LEAVE)
    proc = multiprocessing.get_context("spawn").Process(target=_slow_ingest, args=(store_url,))
    proc.start()
    time.sleep(2.5)  # well inside the big transaction
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    with open_store(store_url) as store:
        keys = {d.key for d in store.documents("crash")}
        assert "crash:leave.txt" in keys
        if "crash:big.txt" in keys:  # the transaction committed before the kill: all of it
            assert len(store.search("paragraph big document", limit=100000)) == 20000
        else:
            assert _count(store_url, "occurrences") == 2
        store.ingest("crash", *SALARY)  # and it still takes writes
    if store_url.startswith("sqlite"):
        assert _execute(store_url, "PRAGMA integrity_check") == [("ok",)]


# -- helpers ----------------------------------------------------------------------------------


def _execute(url: str, sql: str) -> list[tuple[object, ...]]:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def _count(url: str, table: str) -> int:
    return int(_execute(url, f"SELECT COUNT(*) FROM {table}")[0][0])  # type: ignore[call-overload]


def test_unknown_store_url_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        open_store("mysql://nope")
    with pytest.raises(StoreError):
        open_store("postgresql://nobody@127.0.0.1:1/none")


def test_migrations_apply_from_the_oldest_schema(tmp_path: Path) -> None:
    """A store left at the first migration is brought up to date on open, data intact."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE qb_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    first = migrations("sqlite")[0]
    for statement in first.statements:
        conn.execute(statement)
    conn.execute("INSERT INTO qb_migrations VALUES (?, 'then')", (first.name,))
    conn.execute("INSERT INTO blobs (hash, text) VALUES ('h', 'kept')")
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert store.applied_migrations() == [m.name for m in migrations("sqlite")]  # type: ignore[attr-defined]
        store.ingest("handbook", *LEAVE)
        _trace(store)
    assert _execute(f"sqlite:///{path}", "SELECT text FROM blobs WHERE hash = 'h'") == [("kept",)]
