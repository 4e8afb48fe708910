"""SQLite retrieval ranks exactly as a plain FTS5 bm25 query over every visible chunk.

``SQLiteStore.search`` scores only the rows that could reach the top k (a bound per word, a
threshold from the rarest words); these tests hold it to the plain query it replaces, hit for
hit and score for score, on a corpus with common and rare words, ACL groups, corpora, shared
chunk texts, old versions and deleted documents, at several limits, and with the top-rows
fetch cut small so that its slow path runs too.
"""

from __future__ import annotations

import collections
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import quotebound.store.ranking as ranking
import quotebound.store.sqlite as sqlite_store
from kits.corpuskit import make_doc
from quotebound.store import Hit, open_store
from quotebound.store.ranking import _can_reach, _length, fts_query
from quotebound.store.sql import HIT_COLUMNS, hit_from_row, visible
from quotebound.store.sqlite import SQLiteStore

SEED = 20260301
CORPORA = ("handbook", "finance")
GROUPS = ("hr", "legal", "execs")
# A few words in most chunks, more in some, many in few (names): a Zipf-like spread.
COMMON = ("staff", "team", "days", "approval", "records", "manager")
MIDDLE = tuple(f"topic{i}" for i in range(40))
RARE = tuple(f"name{i}" for i in range(400))

# The query the ranker replaces: every matching row scored, filtered, sorted, cut at the limit.
REFERENCE = (
    f"SELECT {HIT_COLUMNS}, -top.score FROM ("
    "SELECT o.id AS oid, bm25(chunk_fts) AS score, d.key AS dkey, o.ordinal AS ord "
    "FROM chunk_fts JOIN occurrences o ON o.chunk_id = chunk_fts.rowid "
    "JOIN documents d ON d.id = o.document_id "
    "WHERE chunk_fts MATCH ? AND {where} ORDER BY score, dkey, ord LIMIT ?) top "
    "JOIN occurrences o ON o.id = top.oid JOIN chunk_texts ct ON ct.id = o.chunk_id "
    "JOIN documents d ON d.id = o.document_id ORDER BY top.score, top.dkey, top.ord"
)


def reference(
    store: SQLiteStore, query: str, corpora: tuple[str, ...] | None, groups: tuple[str, ...], k: int
) -> list[Hit]:
    match = fts_query(query)
    if match is None:
        return []
    where, params = visible(corpora, groups)
    rows = store._conn.execute(REFERENCE.format(where=where), (match, *params, k)).fetchall()
    return [hit_from_row(r) for r in rows]


def _paragraph(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(8, 40)):
        r = rng.random()
        pool = COMMON if r < 0.35 else MIDDLE if r < 0.8 else RARE
        words.append(pool[min(int(rng.paretovariate(1.2)) - 1, len(pool) - 1)])
        if rng.random() < 0.3:  # names cluster: a document repeats its own
            words.append(rng.choice(RARE))
    return " ".join(words) + "."


def _fill(store: SQLiteStore, rng: random.Random, docs: int, paragraphs: int) -> None:
    """Ingest ``docs`` documents ``a0.txt``... of ``paragraphs`` random paragraphs each."""
    for n in range(docs):
        paras = [_paragraph(rng) for _ in range(paragraphs)]
        store.ingest("handbook", *make_doc(f"a{n}.txt", *paras))


def _assert_exact(store: SQLiteStore, count: int, seed: int) -> None:
    """``count`` seeded queries return exactly what the plain bm25 query returns."""
    for text, corpora, groups in _queries(count, seed):
        got = store.search(text, corpora=corpora, groups=groups, limit=5)
        assert got == reference(store, text, corpora, groups, 5), (text, corpora, groups)


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    rng = random.Random(SEED)
    path: Path = tmp_path_factory.mktemp("ranking") / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        shared = _paragraph(rng)  # one chunk text in several documents: equal scores, tie-break
        for n in range(240):
            paragraphs = [_paragraph(rng) for _ in range(rng.randint(3, 8))]
            if n % 40 == 0:
                paragraphs.append(shared)
            acl = (rng.choice(GROUPS),) if rng.random() < 0.25 else ()
            doc, chunks = make_doc(f"doc{n:03d}.txt", *paragraphs)
            store.ingest(CORPORA[n % 2], doc, chunks, acl=acl)
        for n in range(0, 240, 17):  # a new version of some: the old one must not be found
            doc, chunks = make_doc(f"doc{n:03d}.txt", *(_paragraph(rng) for _ in range(4)))
            store.ingest(CORPORA[n % 2], doc, chunks)
        for n in range(5, 240, 23):
            store.delete(f"{CORPORA[n % 2]}:doc{n:03d}.txt")
        yield store


def _queries(count: int, seed: int) -> list[tuple[str, tuple[str, ...] | None, tuple[str, ...]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = [
            rng.choice(COMMON if r < 0.3 else MIDDLE if r < 0.7 else RARE)
            for r in (rng.random() for _ in range(rng.randint(2, 9)))
        ]
        if rng.random() < 0.2:
            words.append("unknownword")
        text = " ".join(words)
        if rng.random() < 0.2:
            text = f"What does the policy say about {text}?"
        corpora: tuple[str, ...] | None = (rng.choice(CORPORA),) if rng.random() < 0.4 else None
        groups = tuple(rng.sample(GROUPS, rng.randint(0, 2)))
        out.append((text, corpora, groups))
    return out


@pytest.mark.parametrize("threshold_rows", [0, 2000])
@pytest.mark.parametrize("fetch_rows", [100, 3])
@pytest.mark.parametrize("limit", [1, 3, 10, 40])
def test_search_equals_full_bm25(
    corpus_store: SQLiteStore,
    monkeypatch: pytest.MonkeyPatch,
    limit: int,
    fetch_rows: int,
    threshold_rows: int,
) -> None:
    monkeypatch.setattr(ranking, "FETCH_ROWS", fetch_rows)
    monkeypatch.setattr(ranking, "_THRESHOLD_ROWS", threshold_rows)
    for text, corpora, groups in _queries(60, SEED + limit + fetch_rows + threshold_rows):
        got = corpus_store.search(text, corpora=corpora, groups=groups, limit=limit)
        assert got == reference(corpus_store, text, corpora, groups, limit), (text, corpora, groups)


def test_pruning_runs_and_never_returns_hidden_chunks(corpus_store: SQLiteStore) -> None:
    # The candidate query must actually prune on this corpus (else the test above proves
    # little), and what it returns stays inside the caller's groups and corpora.
    text = f"{COMMON[0]} {COMMON[1]} {MIDDLE[0]} {MIDDLE[3]} {RARE[0]} {RARE[1]}"
    ranker = ranking.Ranker(
        corpus_store._conn.cursor(), text.split(), *visible(None, ()), limit=10, known={}
    )
    bounded = ranker._bounded()
    assert bounded is not None
    rare, bounds, counts = bounded
    assert bounds == sorted(bounds, reverse=True) and counts == sorted(counts)
    found = ranker._threshold(rare, counts)
    assert found is not None
    theta, size, _, kept = found
    assert theta > 0 and 0 < size < len(rare) and kept
    assert isinstance(_can_reach([f'"{t}"' for t in rare], bounds, theta), str)
    # The threshold step's bounds are lower bounds of the full scores it stands for.
    full = dict(
        corpus_store._conn.execute(
            "SELECT rowid, -bm25(chunk_fts) FROM chunk_fts WHERE chunk_fts MATCH ?",
            (fts_query(text),),
        ).fetchall()
    )
    partial = dict(
        corpus_store._conn.execute(
            "SELECT rowid, -bm25(chunk_fts) FROM chunk_fts WHERE chunk_fts MATCH ?",
            (" OR ".join(f'"{t}"' for t in rare[:1]),),
        ).fetchall()
    )
    least = ranker._least(rare, counts, 1, list(partial), partial)
    assert any(least[cid] > partial[cid] for cid in partial)
    assert all(partial[cid] <= least[cid] <= full[cid] for cid in partial)
    hidden = {
        key
        for (key,) in corpus_store._conn.execute(
            "SELECT d.key FROM documents d JOIN document_acl a ON a.document_id = d.id"
        )
    }
    for groups in ((), ("hr",)):
        hits = corpus_store.search(text, corpora=["finance"], groups=groups, limit=50)
        assert hits
        assert all(h.key.startswith("finance:") for h in hits)
        assert groups or not {h.key for h in hits} & hidden


def test_ties_break_by_key_and_ordinal_deterministically(corpus_store: SQLiteStore) -> None:
    shared = corpus_store._conn.execute(
        "SELECT ct.text FROM chunk_texts ct JOIN occurrences o ON o.chunk_id = ct.id "
        "GROUP BY ct.id HAVING count(*) > 2 LIMIT 1"
    ).fetchone()[0]
    query = " ".join(dict.fromkeys(w.strip(".") for w in shared.split()))
    first = corpus_store.search(query, limit=20, groups=GROUPS)
    assert first == corpus_store.search(query, limit=20, groups=GROUPS)
    same = [h for h in first if h.text == shared]
    assert len(same) > 1 and len({h.score for h in same}) == 1
    assert [(h.key, h.ordinal) for h in same] == sorted((h.key, h.ordinal) for h in same)


@pytest.mark.parametrize("seed", range(200))
def test_candidate_query_keeps_every_row_that_can_reach_theta(seed: int) -> None:
    # Evaluate the FTS5 boolean query on every set of words a row could hold: each set
    # whose bounds add up to theta must match; a set that matches may still fall short.
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    terms = [f"w{i}" for i in range(n)]
    bounds = sorted((rng.uniform(0.0, 8.0) for _ in range(n)), reverse=True)
    theta = rng.uniform(0.1, sum(bounds) * 1.1)
    query = _can_reach([f'"{t}"' for t in terms], bounds, theta)
    for mask in range(1, 2**n):
        held = {terms[i] for i in range(n) if mask >> i & 1}
        total = sum(bounds[i] for i in range(n) if mask >> i & 1)
        matches = query is True or (isinstance(query, str) and _eval(query, held))
        if total >= theta:
            assert matches, (terms, bounds, theta, query, held)


def _eval(query: str, held: set[str]) -> bool:
    """The truth of a query of quoted words, AND, OR and brackets for a row holding ``held``."""
    expr = query.replace("(", " ( ").replace(")", " ) ")
    tokens = [
        t if t in ("(", ")", "AND", "OR") else str(t.strip('"') in held) for t in expr.split()
    ]
    return bool(eval(" ".join(tokens).replace("AND", "and").replace("OR", "or")))


def test_search_on_an_empty_store(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'empty.db'}") as store:
        assert store.search("parental leave weeks in Germany") == []


def test_counts_kept_for_an_index_version_only(tmp_path: Path) -> None:
    # Row counts are kept per store object for one state of the index: an ingest (here from
    # another store object on the same file) moves the counts, and the ranking follows.
    rng = random.Random(SEED + 7)
    path = tmp_path / "grow.db"
    query = f"{COMMON[0]} {MIDDLE[1]} {RARE[2]} {RARE[3]}"
    with open_store(f"sqlite:///{path}") as store, open_store(f"sqlite:///{path}") as writer:
        assert isinstance(store, SQLiteStore) and isinstance(writer, SQLiteStore)
        _fill(writer, rng, 6, 5)
        for round_ in range(3):
            assert store.search(query, limit=5) == reference(store, query, None, (), 5)
            for term, (_, count, _) in store._known.items():  # the counts of this index state
                match = store._conn.execute(
                    "SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (f'"{term}"',)
                )
                assert count == match.fetchone()[0], term
            assert set(store._known) == set(query.split())
            paragraphs = [f"{RARE[2]} {RARE[3]} " * (round_ + 1) + _paragraph(rng)]
            paragraphs += [_paragraph(rng) for _ in range(20)]
            writer.ingest("handbook", *make_doc(f"b{round_}.txt", *paragraphs))
        hits = store.search(query, limit=5)
        assert hits == reference(store, query, None, (), 5)
        assert hits[0].key == "handbook:b2.txt"


# -- the size statistics (fts_term_sizes) that bound each word's share of a score --------------


def _index_sizes(conn: sqlite3.Connection) -> dict[tuple[str, int], int]:
    """What ``fts_term_sizes`` must hold, read from the FTS5 index itself: for each term and
    each count it has in a chunk, the fewest tokens such a chunk has."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.qb_test_at "
        "USING fts5vocab(main, chunk_fts, instance)"
    )
    tf = collections.Counter(conn.execute("SELECT term, doc FROM temp.qb_test_at").fetchall())
    sizes = conn.execute("SELECT id, sz FROM chunk_fts_docsize").fetchall()
    length = {int(i): _length(sz) for i, sz in sizes}
    want: dict[tuple[str, int], int] = {}
    for (term, doc), n in tf.items():
        want[(term, n)] = min(want.get((term, n), 1 << 62), length[doc])
    return want


def _table_sizes(conn: sqlite3.Connection) -> dict[tuple[str, int], int]:
    return {(t, n): s for t, n, s in conn.execute("SELECT term, tf, size FROM fts_term_sizes")}


def _covered(conn: sqlite3.Connection) -> tuple[int, int | None]:
    row = conn.execute(
        "SELECT covered, (SELECT max(id) FROM chunk_texts) FROM fts_term_sizes_state"
    ).fetchone()
    return row[0], row[1]


# Texts FTS5 cuts where whitespace does not: punctuation, underscores, diacritics, digits, dashes.
TRICKY = (
    "Naïve café—ÉTÉ staff_rules x² (approval) re-approval 2025-04-12 chg-2025-0412 ½ staff's",
    "STAFF staff Staff: teams' «records» … manager/manager managers’ ①② ＡＢＣ ﬁle",
)


def test_sizes_equal_what_the_index_holds(corpus_store: SQLiteStore, tmp_path: Path) -> None:
    conn = corpus_store._conn
    assert _table_sizes(conn) == _index_sizes(conn)
    covered, last = _covered(conn)
    assert covered == last
    with open_store(f"sqlite:///{tmp_path / 'tricky.db'}") as store:
        assert isinstance(store, SQLiteStore)
        store.ingest("handbook", *make_doc("tricky.txt", *TRICKY))
        assert _table_sizes(store._conn) == _index_sizes(store._conn)
        for query in ("staff approval", "café ete records", "manager file 2025"):
            assert store.search(query, limit=5) == reference(store, query, None, (), 5)


def test_sizes_tighten_the_bounds(corpus_store: SQLiteStore) -> None:
    # With the statistics a common word's bound is below idf * (k1 + 1); without, it is that.
    text = f"{COMMON[0]} {COMMON[1]} {MIDDLE[0]} {RARE[0]}"
    cur = corpus_store._conn.cursor()
    tokens = corpus_store._sizes.terms_of(cur, text.split())
    tight = ranking.Ranker(cur, text.split(), *visible(None, ()), 10, {}, tokens)._bounded()
    loose = ranking.Ranker(cur, text.split(), *visible(None, ()), 10, {})._bounded()
    assert tight is not None and loose is not None
    assert tight[0] == loose[0] and tight[2] == loose[2]
    assert all(t <= g for t, g in zip(tight[1], loose[1], strict=True))
    assert tight[1][-1] < loose[1][-1]  # the commonest word's


def test_sizes_follow_other_writers_and_new_versions(tmp_path: Path) -> None:
    # Ingests from two store objects on one file, new versions, shared chunk texts: the
    # statistics stay those of the index, and every search stays exact.
    rng = random.Random(SEED + 11)
    path = tmp_path / "two.db"
    with open_store(f"sqlite:///{path}") as one, open_store(f"sqlite:///{path}") as two:
        assert isinstance(one, SQLiteStore) and isinstance(two, SQLiteStore)
        shared = _paragraph(rng)
        for n in range(30):
            writer = one if n % 3 else two
            paragraphs = [_paragraph(rng) for _ in range(rng.randint(1, 5))] + [shared]
            writer.ingest(CORPORA[n % 2], *make_doc(f"d{n % 12}.txt", *paragraphs))
            if n % 5 == 0:
                for store in (one, two):
                    text, corpora, groups = _queries(1, SEED + n)[0]
                    got = store.search(text, corpora=corpora, groups=groups, limit=5)
                    assert got == reference(store, text, corpora, groups, 5)
        assert _table_sizes(one._conn) == _index_sizes(one._conn)
        assert _covered(one._conn)[0] == _covered(one._conn)[1]


def test_chunks_stored_without_sizes_are_caught_up(tmp_path: Path) -> None:
    # A writer that keeps no statistics (an older version) stores a chunk: searches stay
    # exact without them (the generic bound), and the next ingest adds the missing chunk.
    rng = random.Random(SEED + 13)
    path = tmp_path / "old-writer.db"
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        _fill(store, rng, 5, 4)
        conn = sqlite3.connect(path, isolation_level=None)
        text = f"{RARE[7]} {COMMON[0]} " * 3 + _paragraph(rng)
        conn.execute("INSERT INTO chunk_texts (hash, text) VALUES ('old', ?)", (text,))
        cid = conn.execute("SELECT id FROM chunk_texts WHERE hash = 'old'").fetchone()[0]
        doc = conn.execute("SELECT id FROM documents LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO occurrences (document_id, chunk_id, ordinal, start_offset, end_offset, "
            "pages) VALUES (?, ?, 99, 0, 1, '')",
            (doc, cid),
        )
        conn.close()
        covered, last = _covered(store._conn)
        assert covered < last == cid
        query = f"{RARE[7]} {COMMON[0]} {MIDDLE[2]}"
        assert store.search(query, limit=5) == reference(store, query, None, (), 5)
        store.ingest("handbook", *make_doc("b.txt", _paragraph(rng)))
        covered, last = _covered(store._conn)
        assert covered == last
        assert _table_sizes(store._conn) == _index_sizes(store._conn)
        assert store.search(query, limit=5) == reference(store, query, None, (), 5)


def test_sizes_are_filled_in_for_a_store_from_before_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store with chunks, opened by a version that keeps statistics for the first time
    # (migration 0004 not applied yet): they are computed on open, for every chunk.
    rng = random.Random(SEED + 17)
    path = tmp_path / "before.db"
    with open_store(f"sqlite:///{path}") as store:
        _fill(store, rng, 8, 5)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE fts_term_sizes")
    conn.execute("DROP TABLE fts_term_sizes_state")
    conn.execute("DELETE FROM qb_migrations WHERE name = '0004_term_sizes'")
    conn.close()
    monkeypatch.setattr(sqlite_store, "_COVER_BATCH", 7)  # several transactions
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        covered, last = _covered(store._conn)
        assert covered == last and last is not None
        assert _table_sizes(store._conn) == _index_sizes(store._conn)
        _assert_exact(store, 20, SEED + 19)


def test_given_up_sizes_leave_search_exact(tmp_path: Path) -> None:
    # covered < 0 marks statistics that could not be kept: searches use the generic bound.
    rng = random.Random(SEED + 23)
    path = tmp_path / "off.db"
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        _fill(store, rng, 6, 5)
        store._conn.execute("UPDATE fts_term_sizes_state SET covered = -1")
        store.ingest("handbook", *make_doc("b.txt", _paragraph(rng)))
        assert _covered(store._conn)[0] == -1
        _assert_exact(store, 20, SEED + 29)
    # the rebuild docs/corpus.md gives: reset, then one open catches every chunk up
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("UPDATE fts_term_sizes_state SET covered = 0; DELETE FROM fts_term_sizes")
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        covered, last = _covered(store._conn)
        assert covered == last
        assert _table_sizes(store._conn) == _index_sizes(store._conn)


def test_a_chunk_cut_otherwise_than_fts5_is_tokenized_by_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cutting at a letter too (never so: whitespace and ASCII punctuation always separate)
    # gives the wrong token count; the check against FTS5's length catches it and FTS5
    # tokenizes the whole chunk instead, so the statistics stay exact.
    monkeypatch.setattr(ranking, "_SEPARATORS", str.maketrans({"a": " ", "-": " "}))
    rng = random.Random(SEED + 31)
    with open_store(f"sqlite:///{tmp_path / 'cut.db'}") as store:
        assert isinstance(store, SQLiteStore)
        _fill(store, rng, 4, 3)
        assert _table_sizes(store._conn) == _index_sizes(store._conn)
        covered, last = _covered(store._conn)
        assert covered == last


def _lagging_store(path: Path, seed: int) -> None:
    """A store whose statistics lag behind its chunks (as a writer that keeps none leaves it)."""
    rng = random.Random(seed)
    with open_store(f"sqlite:///{path}") as store:
        _fill(store, rng, 5, 4)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE fts_term_sizes_state SET covered = 0")
    conn.close()


def test_a_store_that_cannot_be_written_opens_and_searches_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The catch-up on open writes; a read-only store (here: SQLite's mode=ro, what a file the
    # user cannot write gives) skips it and searches without the statistics, exactly.
    path = tmp_path / "ro.db"
    _lagging_store(path, SEED + 37)
    real = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda p, **kw: real(f"file:{p}?mode=ro", uri=True, **kw)
    )
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        assert _covered(store._conn)[0] == 0  # still behind
        _assert_exact(store, 20, SEED + 41)


def test_a_writer_holding_the_lock_does_not_stop_an_open(tmp_path: Path) -> None:
    # Another writer's long transaction: the catch-up gives up at once (an open does not
    # wait on a writer), the store opens with its usual busy timeout and searches exactly;
    # the next open, with the lock free, catches up.
    path = tmp_path / "busy.db"
    _lagging_store(path, SEED + 43)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with open_store(f"sqlite:///{path}") as store:
            assert isinstance(store, SQLiteStore)
            assert _covered(store._conn)[0] == 0
            timeout = store._conn.execute("PRAGMA busy_timeout").fetchone()[0]
            assert timeout == int(sqlite_store.BUSY_TIMEOUT_S * 1000)
            _assert_exact(store, 10, SEED + 47)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_store(f"sqlite:///{path}") as store:
        assert isinstance(store, SQLiteStore)
        covered, last = _covered(store._conn)
        assert covered == last
        assert _table_sizes(store._conn) == _index_sizes(store._conn)
