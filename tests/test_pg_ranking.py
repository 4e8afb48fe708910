"""PostgreSQL retrieval ranks exactly as BM25 over every visible chunk with the stored weights.

``PostgresStore.search`` reads each lexeme's best chunks from ``chunk_terms`` and stops once the
k-th hit beats the bound on every chunk not read; these tests hold it to the plain query it
replaces (every chunk with a query lexeme scored, filtered, sorted, cut), hit for hit, on the
corpus of test_search_ranking (common and rare words, ACL groups, corpora, shared chunk texts,
old versions, deleted documents), with the first read cut small so its deeper reads run; and
they hold the weights and statistics (kept by ingest, ``PostgresStore._chunks_added``) in step
with what is stored: after ingest, re-ingest, new
versions, a rolled-back write, a writer killed mid-ingest, and a store from before them.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quotebound.store.postgres as pg
from corpuskit import make_doc
from quotebound.store import Hit, open_store
from quotebound.store.migrations import PG_BM25_AVG_LEN, PG_BM25_B, PG_BM25_K1
from quotebound.store.sql import HIT_COLUMNS, hit_from_row, visible
from test_search_ranking import CORPORA, GROUPS, SEED, _paragraph, _queries

# Every chunk with one of the query's lexemes, scored in full: what the ranker must equal.
REFERENCE = (
    "WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])) "
    f"SELECT {HIT_COLUMNS}, s.score FROM (SELECT p.chunk_id, sum(q.idf * p.w) AS score "
    "FROM chunk_terms p JOIN q ON q.term = p.term GROUP BY p.chunk_id) s "
    "JOIN chunk_texts ct ON ct.id = s.chunk_id JOIN occurrences o ON o.chunk_id = s.chunk_id "
    "JOIN documents d ON d.id = o.document_id WHERE {where} "
    "ORDER BY s.score DESC, d.key, o.ordinal LIMIT %s"
)


def _idf(conn: Any, text: str) -> dict[str, float]:
    lexemes = conn.execute(
        "SELECT array(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %s))))",
        (text,),
    ).fetchone()[0]
    stats = dict(
        conn.execute(
            "SELECT term, df FROM term_stats WHERE term = ANY(%s)", ([*lexemes, ""],)
        ).fetchall()
    )
    total = stats.pop("", 0)
    return {
        t: max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6) for t, df in stats.items() if df
    }


def reference(store: Any, text: str, corpora: Any, groups: Any, k: int) -> list[Hit]:
    from quotebound.store.sql import words

    idf = _idf(store._conn, " ".join(words(text)))
    if not idf:
        return []
    where, params = visible(corpora, groups)
    sql = REFERENCE.replace("{where}", where.replace("?", "%s"))
    rows = store._conn.execute(sql, (list(idf), list(idf.values()), *params, k)).fetchall()
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


@pytest.mark.parametrize("share", [0.05, 0.25, 0.9])
@pytest.mark.parametrize("first_depth", [1, 64])
@pytest.mark.parametrize("limit", [1, 3, 10, 40])
def test_search_equals_bm25_over_every_visible_chunk(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch, limit: int, first_depth: int, share: float
) -> None:
    monkeypatch.setattr(pg, "_FIRST_DEPTH", first_depth)
    monkeypatch.setattr(pg, "_SHARE", share)
    for text, corpora, groups in _queries(40, SEED + limit + first_depth):
        got = pg_store.search(text, corpora=corpora, groups=groups, limit=limit)
        want = reference(pg_store, text, corpora, groups, limit)
        assert pg_store.last_search_exact, (text, corpora, groups)
        assert _close(got, want), (text, corpora, groups)
    hidden = {h.key for h in pg_store.search("staff team days", groups=(), limit=200)}
    assert hidden and all("doc" in k for k in hidden)


@pytest.mark.parametrize("most_read, most_scored", [(4, 1000), (32768, 30), (16, 40)])
def test_bounded_work_says_when_it_proved_the_best(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch, most_read: int, most_scored: int
) -> None:
    """With step 2's reads or scoring cut short: a search that says it is exact equals the
    full ranking; one that does not still returns visible hits with their real scores, best
    first, none missing that scores more than the last one it returns from what it read."""
    monkeypatch.setattr(pg, "_FIRST_DEPTH", 1)
    monkeypatch.setattr(pg, "_MOST_READ", most_read)
    monkeypatch.setattr(pg, "_MOST_SCORED", most_scored)
    exact = bounded = found = 0
    for text, corpora, groups in _queries(60, SEED + most_read + most_scored):
        got = pg_store.search(text, corpora=corpora, groups=groups, limit=10)
        every = reference(pg_store, text, corpora, groups, 100_000)
        if pg_store.last_search_exact:
            exact += 1
            assert _close(got, every[:10]), (text, corpora, groups)
            continue
        bounded += 1
        real = {(h.key, h.ordinal): h.score for h in every}
        assert len(got) <= 10
        found += bool(got)
        for hit in got:
            assert abs(real[(hit.key, hit.ordinal)] - hit.score) < 1e-6  # visible, scored in full
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
        assert not got or got[0].score >= every[0].score * 0.5  # (the lists' best were read)
    assert exact and bounded, (exact, bounded)  # both paths ran
    assert found >= 0.8 * bounded


def _in_step(conn: Any) -> None:
    """chunk_terms and term_stats are what the stored chunk texts make."""
    assert (
        conn.execute(
            "SELECT count(*) FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) u"
        ).fetchone()[0]
        == conn.execute("SELECT count(*) FROM chunk_terms").fetchone()[0]
    )
    bad = conn.execute(
        "SELECT count(*) FROM (SELECT u.lexeme, count(*) AS n FROM chunk_texts c "
        "CROSS JOIN LATERAL unnest(c.tsv) u GROUP BY u.lexeme) x "
        "FULL JOIN (SELECT term, df FROM term_stats WHERE term <> '') s ON s.term = x.lexeme "
        "WHERE s.df IS DISTINCT FROM x.n"
    ).fetchone()[0]
    assert bad == 0
    total = conn.execute("SELECT df FROM term_stats WHERE term = ''").fetchone()
    assert (total[0] if total else 0) == conn.execute(
        "SELECT count(*) FROM chunk_texts"
    ).fetchone()[0]
    # each weight is BM25's for its term frequency and the chunk's length
    row = conn.execute(
        "SELECT p.w, cardinality(u.positions), l.len, p.tf, p.len FROM chunk_terms p "
        "JOIN chunk_texts c "
        "ON c.id = p.chunk_id CROSS JOIN LATERAL unnest(c.tsv) u CROSS JOIN LATERAL "
        "(SELECT sum(cardinality(positions)) AS len FROM unnest(c.tsv)) l "
        "WHERE u.lexeme = p.term ORDER BY p.chunk_id DESC, p.term LIMIT 1"
    ).fetchone()
    if row is not None:
        w, tf, length, kept_tf, kept_len = row
        assert (kept_tf, kept_len) == (tf, length)  # what the weight was computed from
        norm = 1 - PG_BM25_B + PG_BM25_B * float(length) / PG_BM25_AVG_LEN
        assert w == pytest.approx(tf * (PG_BM25_K1 + 1) / (tf + PG_BM25_K1 * norm), rel=1e-6)


def test_weights_and_statistics_follow_ingest_reingest_and_new_versions(pg_url: str) -> None:
    with open_store(pg_url) as store:
        _in_step(store._conn)  # empty
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        _in_step(store._conn)
        before = store._conn.execute("SELECT count(*) FROM chunk_terms").fetchone()[0]
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        assert store._conn.execute("SELECT count(*) FROM chunk_terms").fetchone()[0] == before
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotels are capped at 180 EUR.")
        )
        store.ingest("d", *make_doc("b.txt", "Staff travel needs approval."))  # a shared text
        _in_step(store._conn)
        assert [h.key for h in store.search("hotels capped")] == ["c:a.txt"]


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


def test_a_writer_killed_mid_ingest_leaves_the_index_in_step(pg_url: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from corpuskit import make_doc\nfrom quotebound.store import open_store\n"
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
        _in_step(store._conn)
        assert store.search("staff travel", limit=3)


def test_a_store_from_before_the_weights_gets_them_at_open(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.ingest(
            "c", *make_doc("a.txt", "Staff travel needs approval.", "Hotel stays are capped.")
        )
        hits = store.search("hotel approval")
        conn = store._conn
        conn.execute("DROP TABLE chunk_terms, term_stats")
        conn.execute("DELETE FROM qb_migrations WHERE name = '0007_bm25_postings'")
    with open_store(pg_url) as store:  # migrated again: the weights filled in from the texts
        _in_step(store._conn)
        assert store.search("hotel approval") == hits


def _filler(n: int, words: int) -> str:
    return " ".join(f"f{n}x{i}" for i in range(words))


def test_a_lexeme_not_read_still_bounds_what_a_chunk_can_score(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'beta' is too weak to be read in step 2, but a chunk with both words owes part of its
    score to it: the bound of an unread lexeme must count in every ceiling."""
    monkeypatch.setattr(pg, "_FIRST_DEPTH", 1)
    paragraphs = ["alpha alpha", "alpha alpha beta", "alpha " + _filler(0, 100), "beta beta beta"]
    paragraphs += [f"beta {_filler(n + 1, 100)}" for n in range(43)]
    paragraphs += [_filler(100 + n, 5) for n in range(53)]
    with open_store(pg_url) as store:
        store.ingest("c", *make_doc("a.txt", *paragraphs))
        for limit in (1, 2, 3):
            got = store.search("alpha beta", limit=limit)
            assert store.last_search_exact
            assert _close(got, reference(store, "alpha beta", None, (), limit)), limit
        assert store.search("alpha beta", limit=1)[0].text == "alpha alpha beta"


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


def test_past_the_scoring_bound_the_best_visible_ceilings_are_scored(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 1 finds nothing the public may see, so step 2 reads every list whole (ceilings
    are then scores) and more chunks reach theta than may be scored: the ones scored must be
    the best the caller may see, chosen by ceiling, so the hits are still the real best."""
    monkeypatch.setattr(pg, "_FIRST_DEPTH", 1)
    monkeypatch.setattr(pg, "_MOST_SCORED", 3)
    with open_store(pg_url) as store:
        _hidden_best(store)
        got = store.search("alpha beta", groups=(), limit=3)
        assert store.last_search_bounds == ("scored",)
        assert len(got) == 3 and all(h.key.startswith("c:pub") for h in got)
        assert _close(got, reference(store, "alpha beta", None, (), 3))
        board = store.search("alpha beta", groups=("board",), limit=3)
        assert [h.key[:7] for h in board] == ["c:board"] * 3


def test_a_list_longer_than_the_read_bound_is_reported(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read whole (theta 0), 'alpha''s list of ``df`` entries is cut at ``df - 1`` and not at
    ``df``."""
    monkeypatch.setattr(pg, "_FIRST_DEPTH", 1)
    with open_store(pg_url) as store:
        _hidden_best(store)
        df = dict(store._conn.execute("SELECT term, df FROM term_stats").fetchall())
        assert df["alpha"] == 51 and df["beta"] == 31  # (the board's six share one text)
        for most_read, bounds in ((51, ()), (50, ("read",)), (31, ("read",))):
            monkeypatch.setattr(pg, "_MOST_READ", most_read)
            got = store.search("alpha beta", groups=(), limit=3)
            assert store.last_search_bounds == bounds, most_read
            if not bounds:
                assert _close(got, reference(store, "alpha beta", None, (), 3))
