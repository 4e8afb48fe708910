"""Exact BM25 ranking over SQLite's FTS5, with the work cut: the embedded store's retrieval.

Ranking is FTS5's ``bm25()`` over the OR of the query's words, exactly: the hits are the ones
a plain ``MATCH ... ORDER BY bm25`` over every visible chunk returns, in the same order with
the same scores. Only the work is cut (MaxScore/WAND style): FTS5 spends ~0.6 us per row it
scores, and a query with a few common words matches half the corpus. ``bm25`` is a sum over
the query's words, and one word adds less than ``idf * (k1 + 1)`` to any row, so:

1. the rarest words alone give partial scores (FTS5 ranks their rows cheaply); each other
   word a best row has adds at least what it adds once (looked up with ``word AND (rare
   words)``), so the k-th best visible of these sums is a threshold ``theta`` that the real
   k-th hit reaches;
2. a row outside those best ones gets at most the last one's partial score from the rare
   words, and at most its bound from each other word: a row can reach ``theta`` only if the
   bounds of what it contains add up to ``theta``. An FTS5 boolean query over the words
   (``(rare) OR (common1 AND common2) ...``) selects those rows, and only they and the best
   rows are scored with the full query; every other row scores less than the k-th hit.

Each word's row count (for its bound) is kept per store object for the state of the index it
was counted in (FTS5's totals record and the last chunk id), so it is counted again after any
ingest, from any process.

The ACL and corpus filter is applied to scored rows before they are counted towards the k,
so a chunk outside the caller's groups is never returned and never takes a hit's place.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .sql import Cursor, words

# FTS5's bm25() constants (fts5_aux.c): a word adds idf * tf * (k1 + 1) / (tf + k1 * (1 - b +
# b * length / average length)) to a row's score, less than idf * (k1 + 1) for any tf, length.
BM25_K1 = 1.2
BM25_B = 0.75
# How many best-scored rows a ranking step fetches before it checks them against the ACL and
# corpus filter (it fetches more only when too few of them are visible).
FETCH_ROWS = 100
# Bound sums are widened by this much, so float rounding can never drop a row that could win.
_SLACK = 1e-9
# The candidate query nests ANDs at most this deep; deeper, it ORs the rest (more rows, still
# every row that could win). One with more quoted words than _MAX_PHRASES (each one a pass
# over that word's rows) is replaced by the OR of the fewest rarest words that can win.
_MAX_DEPTH = 3
_MAX_PHRASES = 48
# A query with more words than this skips the candidate query (it could grow too large) and
# scores every matching row.
MAX_BOUNDED_WORDS = 12
# The threshold step starts with as many of the rarest words as have at most this many rows
# together (FTS5 scores each of those rows).
_THRESHOLD_ROWS = 2000
# How many words' row counts a store object keeps (for the index version it counted them in).
_KNOWN_WORDS = 4096
# How many whitespace-separated pieces' FTS5 terms, and how many (term, tf) sizes, a store
# object keeps (then it forgets them all and learns again).
_KNOWN_PIECES = 200_000
_KNOWN_SIZES = 500_000
_RECORD_BATCH = 500
# What a piece of text maps to when FTS5 cuts it into other than one term.
_SPLIT = "\x00"
_UNKNOWN = "\x01"  # (a piece not learnt: never, once its chunk's pieces are)
# FTS5's unicode61 cuts at every ASCII character but letters and digits (as at whitespace).
_SEPARATORS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def fts_query(query: str) -> str | None:
    """An FTS5 query that ORs the query's words, each quoted (no FTS syntax gets through)."""
    terms = words(query)
    return _any(terms) if terms else None


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{w}"' for w in terms)


def _varints(data: bytes) -> list[int]:
    """Every SQLite varint (as FTS5 stores its totals and row sizes) in ``data``."""
    values, at = [], 0
    while at < len(data):
        value = 0
        for i in range(min(9, len(data) - at)):
            byte = data[at + i]
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
        at += i + 1
    return values


# What a store object keeps of a word for one state of the index: that state (FTS5's totals
# record, the last chunk id, whether the size statistics cover it), the word's row count and,
# where they cover it, its term's (tf, fewest tokens) pairs.
Known = tuple[tuple[bytes, int, bool], int, tuple[tuple[int, int], ...] | None]


def _length(docsize: bytes) -> int:
    """A chunk's token count, from its ``chunk_fts_docsize`` record (one count per column)."""
    return sum(_varints(bytes(docsize)))


def _idf(n_rows: int, n: int) -> float:
    """bm25's idf of a word in ``n`` of ``n_rows`` rows, floored as FTS5 floors it."""
    idf = math.log((n_rows - n + 0.5) / (n + 0.5))
    return idf if idf > 0 else 1e-6


def _bound(idf: float, stats: tuple[tuple[int, int], ...] | None, avgdl: float) -> float:
    """More than a word adds to any row's bm25: ``idf * (k1 + 1)`` without statistics; with
    them (each count ``tf`` the word has in some chunk, with the fewest tokens such a chunk
    has), the most it adds to any chunk: bm25 grows with ``tf`` and falls with the length."""
    if stats is None or not avgdl:
        most = BM25_K1 + 1
    elif not stats:
        return 0.0  # in no chunk
    else:
        most = max(
            tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * size / avgdl))
            for tf, size in stats
        )
    return idf * most * (1 + _SLACK) + _SLACK


@dataclass(frozen=True, order=True)
class _Ranked:
    """One visible occurrence: FTS5's bm25 (lower is better), then the tie-breakers."""

    score: float
    key: str
    ordinal: int
    occurrence: int


class Ranker:
    """The top ``limit`` visible occurrences by exact FTS5 bm25 over the OR of ``terms``."""

    def __init__(
        self,
        cur: Cursor,
        terms: list[str],
        where: str,
        params: list[object],
        limit: int,
        known: dict[str, Known],
        tokens: Sequence[tuple[str, ...]] | None = None,
    ) -> None:
        self.cur, self.terms, self.where, self.params, self.limit = (
            cur,
            terms,
            where,
            params,
            limit,
        )
        self.known = known
        # Each word's FTS5 terms (its phrase's tokens): a word of one term has size statistics.
        self.tokens = tokens
        self.n_rows, self.avgdl = 0, 0.0  # from FTS5's totals record
        self.full = _any(terms)  # the reference query: its word order fixes bm25's float sum

    def top(self) -> list[_Ranked]:
        bounded = self._bounded()
        if bounded is None:
            return self._best(None, None)
        rare, bounds, counts = bounded
        found = self._threshold(rare, counts)
        if found is None:  # fewer than k visible rows among the rare words' ones
            return self._best(None, None)
        theta, size, cap, kept = found
        theta = theta * (1 - _SLACK) - _SLACK
        # A row outside ``kept`` gets at most ``cap`` from the rare words (it was not among
        # their best rows), at most the sum of the bounds of those it has: one bound for all.
        exprs = [f'"{t}"' for t in rare[size:]]
        caps = bounds[size:]
        if cap > 0:
            exprs.insert(0, f"({_any(rare[:size])})")
            caps.insert(0, min(cap * (1 + _SLACK) + _SLACK, sum(bounds[:size])))
        candidates = _can_reach(exprs, caps, theta)
        if isinstance(candidates, str) and candidates.count('"') > 2 * _MAX_PHRASES:
            # A row that has none of the first ``needed`` terms has the rest's bounds at most.
            needed = next(i for i in range(len(exprs)) if sum(caps[i + 1 :]) < theta) + 1
            candidates = " OR ".join(exprs[:needed]) if needed < len(exprs) else True
        if candidates is True:
            return self._best(None, None)
        return self._best(candidates, kept)

    def _bounded(self) -> tuple[list[str], list[float], list[int]] | None:
        """The distinct words, rarest first, with each one's bound on what it adds to a score
        and its row count; None where bounds do not help (one word, very many words)."""
        if not 1 < len(self.terms) <= MAX_BOUNDED_WORDS:
            return None
        cur = self.cur
        cur.execute(
            "SELECT (SELECT block FROM chunk_fts_data WHERE id = 1), "
            "(SELECT max(id) FROM chunk_texts), (SELECT covered FROM fts_term_sizes_state)"
        )
        totals, last, covered = cur.fetchone()
        if not totals:  # an empty index has no totals record yet
            return None
        sizes = _varints(bytes(totals))
        n_rows = self.n_rows = sizes[0]
        self.avgdl = sum(sizes[1:]) / n_rows if n_rows and len(sizes) > 1 else 0.0
        # The size statistics hold for this snapshot if they cover its every chunk.
        sized = self.tokens is not None and last is not None and covered == last
        version = (bytes(totals), last, sized)
        counted = []
        for i, term in enumerate(self.terms):
            known = self.known.get(term)
            if known is None or known[0] != version:
                match = f'"{term}"'
                cur.execute("SELECT count(*) FROM chunk_fts WHERE chunk_fts MATCH ?", (match,))
                count = int(cur.fetchone()[0])
                stats = None
                if sized and self.tokens is not None and len(self.tokens[i]) == 1:
                    cur.execute(
                        "SELECT tf, size FROM fts_term_sizes WHERE term = ?", (self.tokens[i][0],)
                    )
                    stats = tuple((int(tf), int(size)) for tf, size in cur.fetchall())
                if len(self.known) >= _KNOWN_WORDS:
                    self.known.clear()
                known = self.known[term] = (version, count, stats)
            counted.append((known[1], i, term, known[2]))
        counted.sort(key=lambda c: c[:3])
        bounds = []
        for n, _, _, stats in counted:
            if n > n_rows:
                return None  # the counts do not fit the totals: score everything instead
            bounds.append(_bound(_idf(n_rows, n), stats if n else (), self.avgdl))
        return [c[2] for c in counted], bounds, [c[0] for c in counted]

    def _threshold(
        self, rare: list[str], counts: list[int]
    ) -> tuple[float, int, float, list[int]] | None:
        """A score the k-th hit reaches (the k-th best visible partial score of the best rows
        by the rarest ``size`` words alone, widened a word at a time until k are visible),
        ``size``, the partial score that no other row beats (0 if every row with one of those
        words was fetched) and the visible fetched rows; None if too few are visible."""
        cur, k = self.cur, self.limit
        fetch = max(FETCH_ROWS, 4 * k)
        first = 1  # start with as many rare words as are cheap to score in full
        while first < len(rare) - 1 and sum(counts[: first + 1]) <= _THRESHOLD_ROWS:
            first += 1
        for size in range(first, len(rare)):
            cur.execute(
                "SELECT rowid, bm25(chunk_fts) AS s FROM chunk_fts WHERE chunk_fts MATCH ? "
                "ORDER BY s, rowid LIMIT ?",
                (_any(rare[:size]), fetch),
            )
            rows = cur.fetchall()
            partial = {int(cid): -float(score) for cid, score in rows}
            seen = collections.Counter(int(r[0]) for r in self._visible("o.chunk_id", partial))
            if seen.total() < k:
                continue
            least = self._least(rare, counts, size, list(seen), partial)
            scores = sorted(s for cid, n in seen.items() for s in [least[cid]] * n)
            cap = -float(rows[-1][1]) if len(rows) >= fetch else 0.0
            return scores[-k], size, cap, sorted(seen)
        return None

    def _least(
        self,
        rare: list[str],
        counts: list[int],
        size: int,
        ids: list[int],
        partial: dict[int, float],
    ) -> dict[int, float]:
        """Lower bounds of the full scores of rows ``ids``: their ``partial`` score from the
        rarest ``size`` words, plus what each other word they have adds at least (as if it
        were there once: bm25 grows with the count)."""
        least = {cid: partial[cid] for cid in ids}
        if not self.avgdl:
            return least
        cur = self.cur
        cur.execute(
            "SELECT id, sz FROM chunk_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
        norm = {
            int(cid): BM25_K1 * (1 - BM25_B + BM25_B * _length(sz) / self.avgdl)
            for cid, sz in cur.fetchall()
            if sz
        }
        group = _any(rare[:size])
        among = json.dumps(list(norm))
        for term, n in zip(rare[size:], counts[size:], strict=True):
            idf = _idf(self.n_rows, n)
            cur.execute(
                "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? "
                "AND +rowid IN (SELECT value FROM json_each(?))",
                (f'"{term}" AND ({group})', among),
            )
            for (cid,) in cur.fetchall():
                least[cid] += idf * (BM25_K1 + 1) / (1 + norm[cid]) * (1 - _SLACK)
        return least

    def _visible(self, columns: str, chunk_ids: Iterable[int]) -> list[tuple[Any, ...]]:
        """``columns`` of the occurrences of these chunks that the caller may read."""
        self.cur.execute(
            f"SELECT {columns} FROM occurrences o CROSS JOIN documents d ON d.id = o.document_id "
            f"WHERE o.chunk_id IN (SELECT value FROM json_each(?)) AND {self.where}",
            (json.dumps(list(chunk_ids)), *self.params),
        )
        rows: list[tuple[Any, ...]] = self.cur.fetchall()
        return rows

    def _best(self, within: str | None, kept: list[int] | None) -> list[_Ranked]:
        """The best ``limit`` visible occurrences by the bm25 of the full query among every
        matching row, or (``kept`` given) among the rows in ``kept`` or matching ``within``."""
        cur, k = self.cur, self.limit
        args: tuple[object, ...] = (self.full,)
        restrict = ""
        if kept is not None:
            among = "SELECT value FROM json_each(?)"
            if within:
                among = f"SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? UNION {among}"
                args += (within,)
            args += (json.dumps(kept),)
            restrict = f" AND +rowid IN ({among})"
        scored = (
            "SELECT rowid AS cid, bm25(chunk_fts) AS score FROM chunk_fts "
            f"WHERE chunk_fts MATCH ?{restrict}"
        )
        fetch = max(FETCH_ROWS, 4 * k)
        cur.execute(f"{scored} ORDER BY score, cid LIMIT ?", (*args, fetch))
        rows = cur.fetchall()
        scores = {int(cid): float(score) for cid, score in rows}
        visible = self._visible("o.id, o.chunk_id, d.key, o.ordinal", scores)
        found = sorted(_Ranked(scores[c], key, ordinal, oid) for oid, c, key, ordinal in visible)
        # Exact if every matching row was fetched, or if the k-th visible one is strictly
        # better than the last fetched (so better than every row not fetched).
        if len(rows) < fetch or (len(found) >= k and found[k - 1].score < rows[-1][1]):
            return found[:k]
        cur.execute(
            f"WITH s AS MATERIALIZED ({scored}) "
            "SELECT s.score, d.key, o.ordinal, o.id FROM s "
            "JOIN occurrences o ON o.chunk_id = s.cid JOIN documents d ON d.id = o.document_id "
            f"WHERE {self.where} "
            "ORDER BY s.score, d.key, o.ordinal LIMIT ?",
            (*args, *self.params, k),
        )
        return [_Ranked(float(s), key, int(o), int(oid)) for s, key, o, oid in cur.fetchall()]


def _can_reach(
    terms: list[str], bounds: list[float], theta: float, at: int = 0, depth: int = 0
) -> str | Literal[True] | None:
    """An FTS5 query for the rows whose terms (FTS5 expressions) among ``terms[at:]`` can add
    up to ``theta``: True for every row, None for none. Each row it leaves out scores below
    ``theta``."""
    if theta <= 0:
        return True
    if sum(bounds[at:]) < theta:
        return None
    if depth >= _MAX_DEPTH or at == len(terms) - 1:
        return " OR ".join(terms[at:])
    word = terms[at]
    rest = _can_reach(terms, bounds, theta - bounds[at], at + 1, depth + 1)
    without = _can_reach(terms, bounds, theta, at + 1, depth)
    if without is True:
        return True
    have = word if rest is True else f"({word} AND ({rest}))" if rest else None
    if have and without:
        return f"{have} OR {without}"
    return have or without


class TermSizes:
    """The ``fts_term_sizes`` statistics of one connection: each chunk's FTS5 terms with their
    counts, exactly as FTS5 tokenizes it, and what the table holds.

    FTS5's tokenizer (unicode61 under porter) cuts a text into tokens at characters outside
    letters, digits and private-use ones, and folds and stems each token on its own: whitespace
    always cuts, so a chunk's terms are those of its whitespace-separated pieces, one after
    the other. Each distinct piece is tokenized once, by FTS5 itself (a temporary contentless
    table with the store's tokenizer, read through fts5vocab), and kept; a chunk's token count
    is checked against the length FTS5 recorded for it (``chunk_fts_docsize``), and a chunk
    that differed would be tokenized whole by FTS5 instead.

    ``sizes`` keeps, per (term, tf), a size the table is known to hold or beat (the table's
    sizes only ever fall): an ingest writes only what would lower one. It learns a value only
    once the transaction that wrote it committed (``pending`` until then)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunk_fts'").fetchone()
        found = re.search(r"tokenize\s*=\s*'([^']*)'", row[0] if row else "")
        tokenize = found.group(1) if found else "unicode61"
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.qb_tokens USING fts5(text, content='', "
            f"tokenize='{tokenize}')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.qb_tokens_at "
            "USING fts5vocab(temp, qb_tokens, instance)"
        )
        # A piece's one term, or _SPLIT for a piece of none or several (those in ``split``).
        self.pieces: dict[str, str] = {}
        self.split: dict[str, tuple[str, ...]] = {}
        self.sizes: dict[tuple[str, int], int] = {}
        self.pending: dict[tuple[str, int], int] = {}

    def tokenize(self, cur: Cursor, pieces: Sequence[str]) -> None:
        """Learn the FTS5 terms of each of ``pieces`` (FTS5 tokenizes them)."""
        cur.executemany(
            "INSERT INTO temp.qb_tokens (rowid, text) VALUES (?, ?)",
            [(i + 1, piece) for i, piece in enumerate(pieces)],
        )
        cur.execute("SELECT doc, offset, term FROM temp.qb_tokens_at")
        found: list[list[tuple[int, str]]] = [[] for _ in pieces]
        for doc, offset, term in cur.fetchall():
            found[int(doc) - 1].append((int(offset), str(term)))
        cur.execute("INSERT INTO temp.qb_tokens (qb_tokens) VALUES ('delete-all')")
        for piece, terms in zip(pieces, found, strict=True):
            if len(terms) == 1:
                self.pieces[piece] = terms[0][1]
            else:
                self.pieces[piece] = _SPLIT
                self.split[piece] = tuple(term for _, term in sorted(terms))

    def _forget(self, room: int) -> None:
        if len(self.pieces) + room > _KNOWN_PIECES:
            self.pieces.clear()
            self.split.clear()

    def terms_of(self, cur: Cursor, words: Sequence[str]) -> list[tuple[str, ...]]:
        """The FTS5 terms of each word (of a query: a phrase of one word)."""
        self._forget(len(words))
        missing = list(dict.fromkeys(w for w in words if w not in self.pieces))
        if missing:
            self.tokenize(cur, missing)
        return [self.split[w] if self.pieces[w] == _SPLIT else (self.pieces[w],) for w in words]

    def record(self, cur: Cursor, chunks: Iterable[tuple[int, str]]) -> bool:
        """Add chunks (id, text; ascending ids) to the statistics; False if a chunk's terms
        could not be made to agree with FTS5's count of its tokens (then none may be used)."""
        it = iter(chunks)
        while batch := list(itertools.islice(it, _RECORD_BATCH)):
            if not self._record(cur, batch):
                return False
        return True

    def _record(self, cur: Cursor, chunks: list[tuple[int, str]]) -> bool:
        cur.execute(
            "SELECT id, sz FROM chunk_fts_docsize WHERE id >= ? AND id <= ?",
            (chunks[0][0], chunks[-1][0]),
        )
        lengths = {int(i): _length(sz) for i, sz in cur.fetchall() if sz}
        self._forget(100 * len(chunks))
        known, split = self.pieces, self.split
        unknown = itertools.repeat(_UNKNOWN)
        counted = []
        missing: set[str] = set()
        for chunk_id, text in chunks:
            pieces = text.translate(_SEPARATORS).split()
            counts = collections.Counter(map(known.get, pieces, unknown))
            if _UNKNOWN in counts:
                missing.update(set(pieces).difference(known))
            counted.append((chunk_id, text, pieces, counts))
        if missing:
            self.tokenize(cur, sorted(missing))
            for _, _, pieces, counts in counted:
                if counts.pop(_UNKNOWN, 0):
                    for piece in missing.intersection(pieces):
                        counts[known[piece]] += pieces.count(piece)
        pending, sizes_get, pending_get = self.pending, self.sizes.get, self.pending.get
        big = 1 << 62
        for chunk_id, text, pieces, counts in counted:
            length, tokens = lengths.get(chunk_id, -1), len(pieces)
            if _SPLIT in counts:  # pieces of none or several terms
                tokens -= counts.pop(_SPLIT)
                for piece in split.keys() & set(pieces):
                    times = pieces.count(piece)
                    tokens += times * len(split[piece])
                    for term in split[piece]:
                        counts[term] += times
            if tokens != length:
                # Cut other than FTS5 cuts it (never seen): FTS5 tokenizes the whole text.
                self.tokenize(cur, [text])
                whole = known.pop(text)
                counts = collections.Counter(split.pop(text) if whole == _SPLIT else (whole,))
                if counts.total() != length:
                    return False
            for key in counts.items():
                if sizes_get(key, big) > length and pending_get(key, big) > length:
                    pending[key] = length
        return True

    def flush(self, cur: Cursor) -> None:
        cur.executemany(
            "INSERT INTO fts_term_sizes (term, tf, size) VALUES (?, ?, ?) "
            "ON CONFLICT (term, tf) DO UPDATE SET size = excluded.size "
            "WHERE excluded.size < fts_term_sizes.size",
            [(term, tf, size) for (term, tf), size in self.pending.items()],
        )

    def committed(self, done: bool) -> None:
        if done:
            if len(self.sizes) + len(self.pending) > _KNOWN_SIZES:
                self.sizes.clear()
            self.sizes.update(self.pending)
        self.pending.clear()
