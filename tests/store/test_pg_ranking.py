"""PostgreSQL retrieval ranks exactly as BM25 over every visible chunk.

``PostgresStore.search`` scores every chunk text in its lexemes' packed postings
(``term_postings``) and reads the best visible ones in batches; these tests hold it to a plain
query written apart from it (every chunk text with a query lexeme scored from its ``tsvector``
with the corpus's real average length, filtered, sorted, cut), hit for hit, on the corpus of
test_search_ranking (common and rare words, ACL groups, corpora, shared chunk texts, old
versions, deleted documents), with batches cut small so that later batches run; and they hold
the postings and statistics (kept by ingest, ``PostgresStore._chunks_added``, merged after it,
``_ingested``) in step with what is stored: after ingest, re-ingest, new versions, a
rolled-back write, a writer killed mid-ingest, merges, and a store from before them.
"""

from __future__ import annotations

import math
import random
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quotebound.store.postgres as pg
from kits.corpuskit import make_doc
from quotebound.errors import StoreError
from quotebound.store import Hit, open_store
from quotebound.store.migrations import PG_BM25_B, PG_BM25_K1
from quotebound.store.sql import HIT_COLUMNS, hit_from_row, visible
from tests.store.test_search_ranking import CORPORA, GROUPS, SEED, _paragraph, _queries

# Every chunk text with one of the query's lexemes, scored from its tsvector: what the ranker
# must equal. (tf: a lexeme's positions; length: every lexeme's positions; avg: over all texts.)
REFERENCE = (
    "WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
    "t AS (SELECT c.id, u.lexeme, coalesce(cardinality(u.positions), 1) AS tf, l.len "
    "  FROM chunk_texts c CROSS JOIN LATERAL (SELECT sum(coalesce(cardinality(positions), 1)) "
    "  AS len FROM unnest(c.tsv)) l CROSS JOIN LATERAL unnest(c.tsv) u), "
    f"s AS (SELECT t.id AS chunk_id, sum(q.idf * t.tf * {PG_BM25_K1 + 1} / (t.tf + {PG_BM25_K1} "
    f"  * ({1 - PG_BM25_B} + {PG_BM25_B} * t.len / %s))) AS score "
    "  FROM t JOIN q ON q.term = t.lexeme GROUP BY t.id) "
    f"SELECT {HIT_COLUMNS}, s.score FROM s "
    "JOIN chunk_texts ct ON ct.id = s.chunk_id JOIN occurrences o ON o.chunk_id = s.chunk_id "
    "JOIN documents d ON d.id = o.document_id WHERE {where} "
    "ORDER BY s.score DESC, d.key, o.ordinal LIMIT %s"
)


def _counted(conn: Any) -> tuple[dict[str, int], int, float]:
    """Each lexeme's document frequency, the number of chunk texts and their average length,
    counted from the texts themselves."""
    df = dict(
        conn.execute(
            "SELECT u.lexeme, count(*) FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) u "
            "GROUP BY u.lexeme"
        ).fetchall()
    )
    total, length = conn.execute(
        "SELECT count(*), (SELECT coalesce(sum(coalesce(cardinality(u.positions), 1)), 0) "
        "FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) u) FROM chunk_texts"
    ).fetchone()
    return df, int(total), (float(length) / total if total else 1.0)


def reference(store: Any, text: str, corpora: Any, groups: Any, k: int) -> list[Hit]:
    from quotebound.store.sql import words

    conn = store._conn
    lexemes = conn.execute(
        "SELECT array(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %s))))",
        (" ".join(words(text)),),
    ).fetchone()[0]
    df, total, avg = _counted(conn)
    idf = {
        t: max(math.log((total - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in lexemes if t in df
    }
    if not idf:
        return []
    where, params = visible(corpora, groups)
    sql = REFERENCE.replace("{where}", where.replace("?", "%s"))
    rows = conn.execute(sql, (list(idf), list(idf.values()), avg, *params, k)).fetchall()
    return [hit_from_row(r) for r in rows]


@pytest.fixture(scope="module")
def pg_store(pg_cluster: Any) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE qb_pg_ranking")
    rng = random.Random(SEED)
    with open_store(pg_cluster.url("qb_pg_ranking")) as store:
        shared = _paragraph(rng)
        for n in range(120):
            paragraphs = [_paragraph(rng) for _ in range(rng.randint(3, 8))]
            if n % 40 == 0:
                paragraphs.append(shared)
            acl = (rng.choice(GROUPS),) if rng.random() < 0.25 else ()
            store.ingest(CORPORA[n % 2], *make_doc(f"doc{n:03d}.txt", *paragraphs), acl=acl)
        for n in range(0, 120, 17):
            store.ingest(
                CORPORA[n % 2], *make_doc(f"doc{n:03d}.txt", *(_paragraph(rng) for _ in range(4)))
            )
        for n in range(5, 120, 23):
            store.delete(f"{CORPORA[n % 2]}:doc{n:03d}.txt")
        yield store


def _close(got: list[Hit], want: list[Hit]) -> bool:
    """Equal hit for hit; scores equal up to float rounding (sums in another order)."""
    return len(got) == len(want) and all(
        (a.key, a.ordinal, a.text) == (b.key, b.ordinal, b.text) and abs(a.score - b.score) < 1e-6
        for a, b in zip(got, want, strict=True)
    )


@pytest.mark.parametrize("first_batch, growth", [(1, 2), (64, 8)])
@pytest.mark.parametrize("limit", [1, 3, 10, 40])
def test_search_equals_bm25_over_every_visible_chunk(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch, limit: int, first_batch: int, growth: int
) -> None:
    monkeypatch.setattr(pg, "_FIRST_BATCH", first_batch)
    monkeypatch.setattr(pg, "_GROWTH", growth)
    for text, corpora, groups in _queries(40, SEED + limit + first_batch):
        got = pg_store.search(text, corpora=corpora, groups=groups, limit=limit)
        want = reference(pg_store, text, corpora, groups, limit)
        assert _close(got, want), (text, corpora, groups)
    hidden = {h.key for h in pg_store.search("staff team days", groups=(), limit=200)}
    assert hidden and all("doc" in k for k in hidden)


def _postings(conn: Any) -> Counter[tuple[str, int, int, int]]:
    """Every (lexeme, chunk id, tf, length) the packed segments hold, decoded."""
    out: Counter[tuple[str, int, int, int]] = Counter()
    for term, n, ids, tfs, lens in conn.execute(
        "SELECT term, n, ids, tfs, lens FROM term_postings"
    ).fetchall():
        ids, tfs, lens = bytes(ids), bytes(tfs), bytes(lens)
        assert len(ids) == 4 * n and len(tfs) == len(lens) == 2 * n
        for k in range(n):
            out[
                (
                    term,
                    struct.unpack_from(">i", ids, 4 * k)[0],
                    struct.unpack_from(">h", tfs, 2 * k)[0],
                    struct.unpack_from(">h", lens, 2 * k)[0],
                )
            ] += 1
    return out


@pytest.fixture(autouse=True)
def _merge_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments merged after every ingest (``_in_step`` checks they were)."""
    monkeypatch.setattr(pg, "_MERGE_EVERY", 1)


def _in_step(conn: Any, merged: bool = True) -> None:
    """term_postings and term_stats are what the stored chunk texts make, each posting once;
    and (``merged``) no lexeme holds ``_TIER`` segments of one size (merged after the ingest)."""
    want = Counter(
        (str(t), int(c), int(tf), int(n))
        for t, c, tf, n in conn.execute(
            "SELECT u.lexeme, c.id, coalesce(cardinality(u.positions), 1), l.len "
            "FROM chunk_texts c CROSS JOIN LATERAL (SELECT sum(coalesce(cardinality(positions), "
            "1)) AS len FROM unnest(c.tsv)) l CROSS JOIN LATERAL unnest(c.tsv) u"
        ).fetchall()
    )
    assert _postings(conn) == want
    df, total, avg = _counted(conn)
    stats = {t: (int(n), int(m)) for t, n, m in conn.execute("SELECT * FROM term_stats")}
    assert stats.pop("", (0, 0)) == (total, round(avg * total))
    assert {t: n for t, (n, _) in stats.items()} == df
    if merged:
        sizes = conn.execute("SELECT term, seg, n FROM term_postings").fetchall()
        assert pg._merges(sizes) == ([], [], [])


def test_postings_and_statistics_follow_ingest_reingest_and_new_versions(pg_url: str) -> None:
    with open_store(pg_url) as store:
        _in_step(store._conn)  # empty
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        _in_step(store._conn)
        before = _postings(store._conn)
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        assert _postings(store._conn) == before
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotels are capped at 180 EUR.")
        )
        store.ingest("d", *make_doc("b.txt", "Staff travel needs approval."))  # a shared text
        _in_step(store._conn)
        assert [h.key for h in store.search("hotels capped")] == ["c:a.txt"]


def test_segments_merge_by_size_and_search_the_same(pg_url: str) -> None:
    """Forty documents sharing 'staff': its segments merged by size as they come (fewer than
    ``_TIER`` of a size left), every posting kept once, and the ranking equal to the plain
    query's after each merge."""
    with open_store(pg_url) as store:
        for n in range(40):
            store.ingest("c", *make_doc(f"d{n:02d}.txt", f"Staff rule {n}.", f"Travel item {n}."))
            if n % 9 == 0:
                _in_step(store._conn)
                assert _close(
                    store.search("staff rule 3", limit=5),
                    reference(store, "staff rule 3", None, (), 5),
                )
        _in_step(store._conn)
        segments = store._conn.execute(
            "SELECT n FROM term_postings WHERE term = 'staff' ORDER BY n"
        ).fetchall()
        assert sum(n for (n,) in segments) == 40 and 1 < len(segments) < 8


def test_a_merge_held_off_by_another_merger_is_done_later(pg_url: str) -> None:
    import psycopg

    with open_store(pg_url) as store, psycopg.connect(pg_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (pg._MERGE_LOCK,))
        for n in range(6):  # the other merger holds the lock: ingest goes on, nothing merged
            store.ingest("c", *make_doc(f"d{n}.txt", f"Staff rule {n}."))
        count = "SELECT count(*) FROM term_postings WHERE term = 'staff'"
        assert store._conn.execute(count).fetchone()[0] == 6
        hits = store.search("staff rule", limit=6)
        assert len(hits) == 6
        other.rollback()  # its merge ends
        store.ingest("c", *make_doc("d6.txt", "Another text."))  # touches no 'staff'
        assert store._conn.execute(count).fetchone()[0] < 6  # the held-off lexemes merged
        _in_step(store._conn)
        again = store.search("staff rule", limit=6)  # (scores moved: one more text counted)
        assert [h.key for h in again] == [h.key for h in hits]
        assert _close(again, reference(store, "staff rule", None, (), 6))


def test_segments_merge_every_few_ingests_and_when_the_store_closes(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg, "_MERGE_EVERY", 8)
    count = "SELECT count(*) FROM term_postings WHERE term = 'staff'"
    with open_store(pg_url) as store:
        for n in range(7):
            store.ingest("c", *make_doc(f"d{n}.txt", f"Staff rule {n}."))
        assert store._conn.execute(count).fetchone()[0] == 7  # not yet
        store.ingest("c", *make_doc("d7.txt", "Staff rule 7."))
        assert store._conn.execute(count).fetchone()[0] == 1  # the eight of one size: one
        _in_step(store._conn)
        for n in range(8, 13):
            store.ingest("c", *make_doc(f"d{n}.txt", f"Staff rule {n}."))
    with open_store(pg_url) as store:  # the first closed after merging its last five
        assert store._conn.execute(count).fetchone()[0] == 2
        _in_step(store._conn)


def test_writers_ingesting_and_merging_at_once_keep_every_posting_once(
    pg_url: str, tmp_path: Path
) -> None:
    """Three processes ingest documents sharing their words at once, each merging after every
    ingest (their merges contend for the one merger's lock): every posting is kept once and
    the ranking is the plain query's."""
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "import quotebound.store.postgres as pg\n"
        "from kits.corpuskit import make_doc\nfrom quotebound.store import open_store\n"
        "pg._MERGE_EVERY = 1\n"
        "with open_store(sys.argv[1]) as s:\n"
        "    for n in range(25):\n"
        "        paras = [f'Staff travel rule {n} part {k} by {sys.argv[2]}.' for k in range(4)]\n"
        "        s.ingest('c', *make_doc(f'{sys.argv[2]}-{n}.txt', *paras))\n",
        encoding="utf-8",
    )
    with open_store(pg_url):
        pass  # migrated before the writers start
    procs = [subprocess.Popen([sys.executable, str(script), pg_url, f"w{k}"]) for k in range(3)]
    assert [p.wait(timeout=240) for p in procs] == [0, 0, 0]
    with open_store(pg_url) as store:
        _in_step(store._conn, merged=False)  # (a merge held off at a writer's close is left)
        assert len(store.documents()) == 75
        for text in ("staff travel", "rule 7 part 2 w1", "w2"):
            assert _close(store.search(text, limit=20), reference(store, text, None, (), 20))


def test_a_rolled_back_write_leaves_nothing(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.ingest("c", *make_doc("a.txt", "Staff travel needs approval."))
        conn = store._conn
        with pytest.raises(RuntimeError), conn.transaction():
            conn.execute(
                "INSERT INTO chunk_texts (hash, text) VALUES ('x', 'Unseen budget words.')"
            )
            raise RuntimeError("the writer fails before it commits")
        _in_step(conn)
        assert store.search("unseen budget") == []


def test_chunk_ids_past_four_bytes_are_a_clear_error_and_lose_nothing(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.ingest("c", *make_doc("a.txt", "Staff travel needs approval."))
        store._conn.execute("SELECT setval('chunk_texts_id_seq', 2147483647)")
        with pytest.raises(StoreError, match="integer out of range"):
            store.ingest("c", *make_doc("b.txt", "Hotel stays are capped."))
        assert [d.key for d in store.documents()] == ["c:a.txt"]
        _in_step(store._conn)
        assert store.search("staff travel")[0].key == "c:a.txt"


def test_a_writer_killed_mid_ingest_leaves_the_index_in_step(pg_url: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from kits.corpuskit import make_doc\nfrom quotebound.store import open_store\n"
        "with open_store(sys.argv[1]) as s:\n"
        "    for n in range(100000):\n"
        "        paras = [f'Part {n} {k}: staff travel word{n * 7 + k}.' for k in range(20)]\n"
        "        s.ingest('c', *make_doc(f'd{n}.txt', *paras))\n"
        "        print(n, flush=True)\n",
        encoding="utf-8",
    )
    with open_store(pg_url):
        pass  # migrated before the writer starts
    proc = subprocess.Popen(
        [sys.executable, str(script), pg_url], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    for _ in range(5):
        proc.stdout.readline()  # a few documents in
    time.sleep(0.05)
    proc.kill()  # mid-transaction, most likely
    proc.wait()
    proc.stdout.close()
    with open_store(pg_url) as store:
        _in_step(store._conn, merged=False)  # (a kill may leave a merge undone: done later)
        assert store.search("staff travel", limit=3)


def test_a_store_from_before_the_packed_postings_gets_them_at_open(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        store.ingest("c", *make_doc("b.txt", "Hotel rules.", "Approval of travel."))
        hits = store.search("hotel approval")
        conn = store._conn
        conn.execute("DROP TABLE term_postings")
        conn.execute("ALTER TABLE term_stats DROP COLUMN lexemes")
        conn.execute("CREATE TABLE chunk_terms (chunk_id BIGINT)")  # (0007's, dropped by 0008)
        conn.execute("DELETE FROM qb_migrations WHERE name = '0008_packed_postings'")
    with open_store(pg_url) as store:  # migrated again: the postings packed from the texts
        _in_step(store._conn)
        assert store.search("hotel approval") == hits
        tables = store._conn.execute(
            "SELECT count(*) FROM pg_tables WHERE tablename = 'chunk_terms'"
        ).fetchone()[0]
        assert tables == 0


def _filler(n: int, words: int) -> str:
    return " ".join(f"f{n}x{i}" for i in range(words))


def _hidden_best(store: Any) -> None:
    """The strongest chunks for 'alpha beta' readable only by the board; public ones below
    them, of distinct lengths; and chunks without either word."""
    for n in range(6):
        store.ingest("c", *make_doc(f"board{n}.txt", "alpha beta alpha beta alpha"), acl=("board",))
    for n in range(30):
        store.ingest("c", *make_doc(f"pub{n:02d}.txt", f"alpha beta {_filler(n, n % 9 + 1)}"))
    for n in range(20):
        store.ingest("c", *make_doc(f"alpha{n:02d}.txt", f"alpha {_filler(50 + n, 12)}"))
    for n in range(120):
        store.ingest("c", *make_doc(f"other{n:03d}.txt", _filler(200 + n, 8)))


@pytest.mark.parametrize("first_batch", [1, 4, 64])
def test_when_the_best_are_hidden_later_batches_find_the_visible_best(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, first_batch: int
) -> None:
    """The first batches hold only what the board may read: the public caller's hits come
    from later ones, still the best it may see, in order; the board gets its own."""
    monkeypatch.setattr(pg, "_FIRST_BATCH", first_batch)
    monkeypatch.setattr(pg, "_GROWTH", 2)
    with open_store(pg_url) as store:
        _hidden_best(store)
        got = store.search("alpha beta", groups=(), limit=3)
        assert len(got) == 3 and all(h.key.startswith("c:pub") for h in got)
        assert _close(got, reference(store, "alpha beta", None, (), 3))
        every = store.search("alpha beta", groups=(), limit=1000)
        assert _close(every, reference(store, "alpha beta", None, (), 1000))
        assert len(every) == 50  # every public chunk with either word, none hidden
        board = store.search("alpha beta", groups=("board",), limit=3)
        assert [h.key[:7] for h in board] == ["c:board"] * 3
