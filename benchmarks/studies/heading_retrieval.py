"""Would headings in the index help retrieval? A measurement, before building it.

The full-text index holds chunk texts only (a chunk text is stored once, whatever documents
hold it); a document's title and a chunk's section heading reach ranking only through the dense
reranker, which reads the section. This script tries the cheapest form of "titles and sections
in the index": every distinct (document, section) heading of a store, its document's title then
the section, indexed on its own (an in-memory FTS5 table with the store's tokenizer); a
question's best ``--headings`` headings by bm25 each bring their first ``--chunks`` chunks, and
that list is fused with BM25's hits by reciprocal rank (k = 10, as the reranker fuses) before
``pipeline.retrieve`` re-ranks and puts the named documents first, as ``ask`` does by default.

It reports, per setting, on two sets: the Contoso PDFs (``contoso.py``'s store and 50 questions:
a gold page in the top 5, top 10 and packed) and CLAPNQ dev pooled (``retrieval.py``'s 600
passages titled as CLAPNQ titles them, its 200 answerable questions after the first 100: the
gold passage at 1, 5 and 10). ``--headings 0`` is today's retrieval.

    .venv/bin/python -m benchmarks.studies.heading_retrieval                # about 15 minutes
    .venv/bin/python -m benchmarks.studies.heading_retrieval --sets contoso --rerank off

Recorded (a study, done): the table of docs/corpus.md, "Headings in the index (measured, not
built)", one run, and its summary in docs/results.md's Contoso section: on CLAPNQ pooled the
gold passage first for 181 of 200 against 175 today, on the Contoso PDFs a gold page in the top
5 for 32 of 50 against 37, so headings are not indexed yet.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import clapnq, contoso, rank_of
from quotebound.answering.rerank import RERANK_K, DenseReranker
from quotebound.corpus import Hit
from quotebound.ingest import chunk_document, load_file
from quotebound.packing import DEFAULT_BUDGET_CHARS, pack
from quotebound.pipeline import AskOptions, retrieve
from quotebound.store import Store, open_store
from quotebound.store.sql import HIT_COLUMNS, hit_from_row, words


class Headed:
    """A store whose ``search`` fuses BM25's hits with the chunks under the best headings."""

    def __init__(self, store: Store, path: Path) -> None:
        self.store, self.headings, self.chunks = store, 0, 0  # (set per setting)
        self.db = sqlite3.connect(path)
        self.index = sqlite3.connect(":memory:")
        self.index.execute(
            "CREATE VIRTUAL TABLE h USING fts5(text, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.heads: dict[int, tuple[int, str | None]] = {}
        for doc, title, name, section in self.db.execute(
            "SELECT DISTINCT d.id, d.title, d.name, o.section FROM occurrences o "
            "JOIN documents d ON d.id = o.document_id WHERE d.current = 1 AND d.deleted = 0"
        ):
            self.heads[len(self.heads) + 1] = (doc, section)
            text = f"{title or name} {section or ''}"
            self.index.execute("INSERT INTO h (rowid, text) VALUES (?, ?)", (len(self.heads), text))

    def close(self) -> None:
        self.db.close()
        self.index.close()

    def under_headings(self, question: str) -> list[Hit]:
        terms = words(question)
        if not terms or not self.headings:
            return []
        best = self.index.execute(
            "SELECT rowid FROM h WHERE h MATCH ? ORDER BY bm25(h) LIMIT ?",
            (" OR ".join(f'"{t}"' for t in terms), self.headings),
        ).fetchall()
        out = []
        for (head,) in best:
            doc, section = self.heads[head]
            rows = self.db.execute(
                f"SELECT {HIT_COLUMNS}, 0.0 FROM occurrences o "
                "JOIN chunk_texts ct ON ct.id = o.chunk_id "
                "JOIN documents d ON d.id = o.document_id "
                "WHERE o.document_id = ? AND o.section IS ? ORDER BY o.ordinal LIMIT ?",
                (doc, section, self.chunks),
            ).fetchall()
            out += [hit_from_row(r) for r in rows]
        return out

    def search(
        self,
        query: str,
        corpora: Sequence[str] | None = None,
        groups: Sequence[str] = (),
        limit: int = 10,
    ) -> list[Hit]:
        hits = self.store.search(query, corpora=corpora, groups=groups, limit=limit)
        extra = self.under_headings(query)
        if not extra:
            return hits
        found = list(hits)
        at = {(h.key, h.ordinal): i for i, h in enumerate(hits)}
        for h in extra:
            if (h.key, h.ordinal) not in at:
                at[(h.key, h.ordinal)] = len(found)
                found.append(h)
        score = [0.0] * len(found)
        for order in (range(len(hits)), [at[(h.key, h.ordinal)] for h in extra]):
            for rank, i in enumerate(order, 1):
                score[i] += 1.0 / (RERANK_K + rank)
        ranked = sorted(range(len(found)), key=lambda i: (-score[i], i))
        return [found[i] for i in ranked][:limit]


def on_contoso(path: Path, settings: list[tuple[int, int]], rerank: DenseReranker | None) -> None:
    with open_store(f"sqlite:///{path}") as store:
        for pdf in sorted((contoso.DATA / "pdfs").glob("*.pdf")):
            doc = load_file(pdf, pdf.name)
            store.ingest(contoso.CORPUS, doc, chunk_document(doc))
        items = contoso.questions(50)
        options = AskOptions(corpora=[contoso.CORPUS], limit=20, rerank=rerank)
        headed = Headed(store, path)
        for headings, chunks in settings:
            headed.headings, headed.chunks = headings, chunks
            found = {"top 5": 0, "top 10": 0, "packed": 0}
            for question, gold in items:
                hits, _, _ = retrieve(question, headed, options)  # type: ignore[arg-type]
                found["top 5"] += any(contoso.on_gold(h.key, h.pages, gold) for h in hits[:5])
                found["top 10"] += any(contoso.on_gold(h.key, h.pages, gold) for h in hits[:10])
                sent = pack(hits, budget_chars=DEFAULT_BUDGET_CHARS).working_set
                found["packed"] += any(
                    contoso.on_gold(s.key, [s.page] if s.page else [], gold) for s in sent
                )
            cells = ", ".join(f"{k} {v}/{len(items)}" for k, v in found.items())
            print(f"contoso  headings {headings} x {chunks} chunks: {cells}", flush=True)
        headed.close()


def on_clapnq(path: Path, settings: list[tuple[int, int]], rerank: DenseReranker | None) -> None:
    every, answerable = clapnq.pooled()
    questions = answerable[100:300]
    with open_store(f"sqlite:///{path}") as store:
        by_text = clapnq.ingest_pooled(store, every)
        options = AskOptions(corpora=[clapnq.CORPUS], limit=10, rerank=rerank)
        headed = Headed(store, path)
        for headings, chunks in settings:
            headed.headings, headed.chunks = headings, chunks
            at = {1: 0, 5: 0, 10: 0}
            for row in questions:
                hits, _, _ = retrieve(row["input"], headed, options)  # type: ignore[arg-type]
                rank = rank_of(hits, by_text[row["passages"][0]["text"]])
                for k in at:
                    at[k] += rank is not None and rank <= k
            cells = ", ".join(f"at {k} {v}/{len(questions)}" for k, v in at.items())
            print(f"clapnq   headings {headings} x {chunks} chunks: {cells}", flush=True)
        headed.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sets", nargs="+", choices=("contoso", "clapnq"), default=["contoso", "clapnq"]
    )
    parser.add_argument("--headings", nargs="+", type=int, default=[0, 5, 5, 10])
    parser.add_argument("--chunks", nargs="+", type=int, default=[0, 2, 4, 2])
    parser.add_argument("--rerank", choices=("dense", "off"), default="dense")
    args = parser.parse_args(argv)
    if len(args.headings) != len(args.chunks):
        parser.error("--headings and --chunks pair up: give as many of each")
    if not contoso.DATA.exists() or not clapnq.DATA.exists():
        print("the data is read from ../shared/data (contoso_hr_benefits, clapnq)", file=sys.stderr)
        return 2
    settings = list(zip(args.headings, args.chunks, strict=True))
    rerank = DenseReranker() if args.rerank == "dense" else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if "contoso" in args.sets:
                on_contoso(Path(tmp) / "contoso.db", settings, rerank)
            if "clapnq" in args.sets:
                on_clapnq(Path(tmp) / "clapnq.db", settings, rerank)
    finally:
        if rerank is not None:
            rerank.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
