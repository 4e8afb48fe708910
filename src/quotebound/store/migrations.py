"""Named, append-only schema migrations, one list per dialect.

Rules: a migration, once released, is never edited or removed; a change is a new migration at
the end. Each runs in its own transaction together with the row that records it, so a store is
always at a known migration, and two processes opening a fresh store apply each one once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]


def _append_only(table: str, dialect: str) -> tuple[str, ...]:
    if dialect == "sqlite":
        return tuple(
            f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            for op in ("UPDATE", "DELETE")
        )
    return (
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION qb_append_only()",
    )


def _corpus(dialect: str) -> Migration:
    pk = "INTEGER PRIMARY KEY" if dialect == "sqlite" else "BIGSERIAL PRIMARY KEY"
    ref = "INTEGER" if dialect == "sqlite" else "BIGINT"
    statements = [
        f"CREATE TABLE chunk_texts (id {pk}, hash TEXT NOT NULL UNIQUE, text TEXT NOT NULL"
        + (
            ", tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
            if dialect == "postgresql"
            else ""
        )
        + ")",
        f"""CREATE TABLE documents (
            id {pk}, key TEXT NOT NULL, corpus TEXT NOT NULL, name TEXT NOT NULL,
            version INTEGER NOT NULL, content_hash TEXT NOT NULL, media_type TEXT NOT NULL,
            title TEXT, url TEXT, updated TEXT, supersedes TEXT,
            current INTEGER NOT NULL DEFAULT 1, deleted INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL, UNIQUE (key, version))""",
        "CREATE INDEX documents_key_current ON documents (key, current)",
        "CREATE INDEX documents_corpus ON documents (corpus)",
        f"""CREATE TABLE document_acl (
            document_id {ref} NOT NULL REFERENCES documents (id), grp TEXT NOT NULL,
            PRIMARY KEY (document_id, grp))""",
        f"""CREATE TABLE occurrences (
            id {pk}, document_id {ref} NOT NULL REFERENCES documents (id),
            chunk_id {ref} NOT NULL REFERENCES chunk_texts (id), ordinal INTEGER NOT NULL,
            start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL,
            pages TEXT NOT NULL, section TEXT)""",
        "CREATE INDEX occurrences_chunk ON occurrences (chunk_id)",
        "CREATE INDEX occurrences_document ON occurrences (document_id)",
        "CREATE TABLE blobs (hash TEXT PRIMARY KEY, text TEXT NOT NULL)",
    ]
    if dialect == "sqlite":
        statements += [
            "CREATE VIRTUAL TABLE chunk_fts USING fts5(text, content='chunk_texts', "
            "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
            "CREATE TRIGGER chunk_texts_fts AFTER INSERT ON chunk_texts BEGIN "
            "INSERT INTO chunk_fts (rowid, text) VALUES (new.id, new.text); END",
        ]
    else:
        statements += ["CREATE INDEX chunk_texts_tsv ON chunk_texts USING GIN (tsv)"]
    return Migration("0001_corpus", tuple(statements))


def _traces(dialect: str) -> Migration:
    statements = [
        """CREATE TABLE traces (
            id TEXT PRIMARY KEY, created_at TEXT NOT NULL, question TEXT NOT NULL,
            model TEXT, corpus TEXT, status TEXT, owner TEXT, prompt_hash TEXT,
            timings TEXT NOT NULL, counts TEXT NOT NULL, retrieved TEXT NOT NULL)""",
        "CREATE INDEX traces_owner ON traces (owner, created_at)",
        """CREATE TABLE trace_sources (
            trace_id TEXT NOT NULL REFERENCES traces (id), position INTEGER NOT NULL,
            sid TEXT NOT NULL, text_hash TEXT NOT NULL, key TEXT, title TEXT, url TEXT,
            updated TEXT, kind TEXT NOT NULL, page INTEGER, start_offset INTEGER,
            end_offset INTEGER, version INTEGER, PRIMARY KEY (trace_id, position))""",
        """CREATE TABLE trace_attempts (
            trace_id TEXT NOT NULL REFERENCES traces (id), attempt INTEGER NOT NULL,
            output_hash TEXT NOT NULL, verdict TEXT, PRIMARY KEY (trace_id, attempt))""",
    ]
    if dialect == "postgresql":
        statements.append(
            "CREATE FUNCTION qb_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$"
        )
    for table in ("traces", "trace_sources", "trace_attempts"):
        statements += _append_only(table, dialect)
    return Migration("0002_traces", tuple(statements))


def _api_keys(dialect: str) -> Migration:
    """API keys of the HTTP service: stored as sha256 of the key, never the key itself."""
    return Migration(
        "0003_api_keys",
        (
            """CREATE TABLE api_keys (
                id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT,
                groups TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT)""",
        ),
    )


def _term_sizes(dialect: str) -> Migration:
    """What SQLite's ranking bounds each word's share of a bm25 score with: for every indexed
    term and every count ``tf`` it has in some chunk, the fewest tokens a chunk with ``tf`` of
    it has (the chunk where those ``tf`` weigh most). Kept up to date by every ingest, in its
    transaction, for the chunks up to ``fts_term_sizes_state.covered``; the store fills it in
    for chunks already there when it first opens (``covered`` starts at 0). PostgreSQL ranks
    with ``ts_rank_cd`` and keeps none."""
    if dialect != "sqlite":
        return Migration("0004_term_sizes", ())
    return Migration(
        "0004_term_sizes",
        (
            """CREATE TABLE fts_term_sizes (
                term TEXT NOT NULL, tf INTEGER NOT NULL, size INTEGER NOT NULL,
                PRIMARY KEY (term, tf)) WITHOUT ROWID""",
            """CREATE TABLE fts_term_sizes_state (
                id INTEGER PRIMARY KEY CHECK (id = 1), covered INTEGER NOT NULL)""",
            "INSERT INTO fts_term_sizes_state (id, covered) VALUES (1, 0)",
        ),
    )


def _attempt_errors(dialect: str) -> Migration:
    """A failed model call's error as a column of its attempt (it was written as the output,
    ``<provider error: KIND> message``, which readers still understand)."""
    return Migration("0005_attempt_errors", ("ALTER TABLE trace_attempts ADD COLUMN error TEXT",))


def _answer_checks(dialect: str) -> Migration:
    """Each answer check's judgement of an ask (``TraceRecord.answer_checks``), as JSON: NULL in
    traces written before, or by asks that ran no check."""
    return Migration("0009_answer_checks", ("ALTER TABLE traces ADD COLUMN answer_checks TEXT",))


def _originals(dialect: str) -> Migration:
    """Each document version's original file, content-addressed: one row per distinct file,
    however many versions, corpora or names point at it (``documents.original_hash``)."""
    data = "BLOB" if dialect == "sqlite" else "BYTEA"
    return Migration(
        "0006_originals",
        (
            f"""CREATE TABLE originals (
                hash TEXT PRIMARY KEY, media_type TEXT NOT NULL, size INTEGER NOT NULL,
                data {data} NOT NULL)""",
            "ALTER TABLE documents ADD COLUMN original_hash TEXT",
        ),
    )


# BM25 on PostgreSQL: FTS5's constants (``postgres._scores`` ranks with them and the corpus's
# real average length); 0007's stored weights used a fixed average chunk length in lexemes
# (``PG_BM25_AVG_LEN``, ``PG_WEIGHT``: kept for that migration, which 0008 undoes).
PG_BM25_K1 = 1.2
PG_BM25_B = 0.75
PG_BM25_AVG_LEN = 64.0
PG_TF = "coalesce(cardinality(positions), 1)"
PG_WEIGHT = (
    f"({PG_TF} * {PG_BM25_K1 + 1}) / ({PG_TF} + {PG_BM25_K1} * "
    f"({1 - PG_BM25_B} + {PG_BM25_B} * len / {PG_BM25_AVG_LEN}))"
)


def _bm25_postings(dialect: str) -> Migration:
    """PostgreSQL's ranked retrieval from the index: for each chunk text and each lexeme of its
    ``tsv``, the lexeme's BM25 weight in it (``chunk_terms``, read best first per lexeme), and
    each lexeme's document frequency with the number of chunk texts under ``''``
    (``term_stats``). Ingest keeps both in step with the chunk texts it stores, in its own
    transaction (``PostgresStore._chunks_added``; chunk texts are append-only); the texts
    stored before are filled in here, with writers held off meanwhile. SQLite ranks with
    FTS5's own bm25 and keeps none."""
    if dialect != "postgresql":
        return Migration("0007_bm25_postings", ())
    return Migration(
        "0007_bm25_postings",
        (
            "LOCK TABLE chunk_texts IN SHARE ROW EXCLUSIVE MODE",
            """CREATE TABLE chunk_terms (
                chunk_id BIGINT NOT NULL, term TEXT NOT NULL, w REAL NOT NULL,
                tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (chunk_id, term))""",
            "CREATE TABLE term_stats (term TEXT PRIMARY KEY, df BIGINT NOT NULL)",
            f"""INSERT INTO chunk_terms (chunk_id, term, w, tf, len)
                SELECT c.id, u.lexeme, {PG_WEIGHT.replace("positions", "u.positions")},
                    {PG_TF.replace("positions", "u.positions")}, l.len
                FROM chunk_texts c
                CROSS JOIN LATERAL (SELECT coalesce(sum({PG_TF}), 0) AS len
                                    FROM unnest(c.tsv)) l
                CROSS JOIN LATERAL unnest(c.tsv) u""",
            """INSERT INTO term_stats (term, df)
                SELECT u.lexeme, count(*) FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv) u
                GROUP BY u.lexeme""",
            "INSERT INTO term_stats (term, df) SELECT '', count(*) FROM chunk_texts",
            "CREATE INDEX chunk_terms_best ON chunk_terms (term, w DESC, chunk_id)",
        ),
    )


# A chunk text's postings as ``term_postings`` packs them: its id (4 bytes), the lexeme's term
# frequency and the text's length in lexemes (2 bytes each, capped at 32,767), big-endian, in
# one segment per lexeme and write; ``PostgresStore`` scores them with numpy.
PG_POSTING_TF = f"least({PG_TF.replace('positions', 'u.positions')}, 32767)::int2"
PG_POSTING_LEN = "least(l.len, 32767)::int2"
PG_POSTINGS = (
    "SELECT u.lexeme, count(*), string_agg(int4send(c.id::int4), '' ORDER BY c.id), "
    f"string_agg(int2send({PG_POSTING_TF}), '' ORDER BY c.id), "
    f"string_agg(int2send({PG_POSTING_LEN}), '' ORDER BY c.id) "
    f"FROM chunk_texts c CROSS JOIN LATERAL (SELECT coalesce(sum({PG_TF}), 0) AS len "
    "FROM unnest(c.tsv)) l CROSS JOIN LATERAL unnest(c.tsv) u "
)


def _packed_postings(dialect: str) -> Migration:
    """PostgreSQL's postings packed: for each lexeme, segments holding every chunk text that
    has it (``term_postings``: ids, term frequencies and lengths as arrays of big-endian
    integers, stored uncompressed), read whole by a search and scored with the corpus's real
    average length (``term_stats.lexemes`` of ``''``: the lexemes of every chunk text). Ingest
    adds one segment per lexeme of the texts it stores first, in its transaction; segments of
    like size are merged after (``PostgresStore.merge_postings``). The per-row weights of 0007
    (``chunk_terms``, 90% of a store's size) and the GIN index on ``tsv`` (the first ranker's)
    are dropped: nothing reads them. Chunk text ids
    must fit in 4 bytes (2,147,483,647). SQLite ranks with FTS5 and keeps none."""
    if dialect != "postgresql":
        return Migration("0008_packed_postings", ())
    return Migration(
        "0008_packed_postings",
        (
            "LOCK TABLE chunk_texts IN SHARE ROW EXCLUSIVE MODE",
            """CREATE TABLE term_postings (
                term TEXT NOT NULL, seg BIGSERIAL, n INTEGER NOT NULL, ids BYTEA NOT NULL,
                tfs BYTEA NOT NULL, lens BYTEA NOT NULL, PRIMARY KEY (term, seg))""",
            "ALTER TABLE term_postings ALTER COLUMN ids SET STORAGE EXTERNAL, "
            "ALTER COLUMN tfs SET STORAGE EXTERNAL, ALTER COLUMN lens SET STORAGE EXTERNAL",
            # (merges replace rows all the time: vacuumed sooner than the default 20% dead)
            "ALTER TABLE term_postings SET (autovacuum_vacuum_scale_factor = 0.02, "
            "toast.autovacuum_vacuum_scale_factor = 0.02)",
            f"INSERT INTO term_postings (term, n, ids, tfs, lens) {PG_POSTINGS} GROUP BY u.lexeme",
            "ALTER TABLE term_stats ADD COLUMN lexemes BIGINT NOT NULL DEFAULT 0",
            f"""UPDATE term_stats SET lexemes = (SELECT coalesce(sum({PG_TF}), 0)
                FROM chunk_texts c CROSS JOIN LATERAL unnest(c.tsv)) WHERE term = ''""",
            "DROP TABLE chunk_terms",
            "DROP INDEX IF EXISTS chunk_texts_tsv",
        ),
    )


_MIGRATIONS: tuple[Callable[[str], Migration], ...] = (
    _corpus,
    _traces,
    _api_keys,
    _term_sizes,
    _attempt_errors,
    _originals,
    _bm25_postings,
    _packed_postings,
    _answer_checks,
)


def migrations(dialect: str) -> list[Migration]:
    """Every migration of a dialect ("sqlite" or "postgresql"), in the order they apply."""
    return [make(dialect) for make in _MIGRATIONS]
