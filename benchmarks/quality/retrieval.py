"""Retrieval on CLAPNQ dev, all 600 passages pooled in one corpus: how often the question's
gold passage is among the first 1, 5 and 10 hits, in each of the orders ``ask`` can pack:
BM25's, BM25's with the named documents first, BM25 fused with MiniLM (``--rerank dense``),
and fused with the named documents first (``--named-first on``, the default).

Each passage is one document, titled as CLAPNQ titles it (the Wikipedia article's title), so
a question that names an article ("when did the Charlesfort outpost ...") names a document:
the held-out test of ``AskOptions.named_first``, which was designed on the Contoso PDFs, where
the documents' names are plans ("Northwind Health Plus"). The questions are the answerable
ones outside ``answer_quality.py``'s sample (its seeded order, after the first ``--skip``).

Run from the repository root (CLAPNQ is read in place from ../shared/data/clapnq)::

    .venv/bin/python -m benchmarks.quality.retrieval      # 200 questions, about 8 minutes
    .venv/bin/python -m benchmarks.quality.retrieval --questions 50 --rerank off

Prints one row per order (hits at 1, 5, 10 with 95% Wilson intervals) and, for each order
with the named documents first, the questions it gained and lost against the same order
without; ``--rows FILE`` writes each question's ranks and the documents it named.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import rank_of
from benchmarks.common.clapnq import CORPUS, DATA, ingest_pooled, pooled
from quotebound.pipeline import NAMED_DEPTH, named_documents_first
from quotebound.store import open_store


def wilson(k: int, n: int) -> tuple[float, float]:
    if not n:
        return 0.0, 0.0
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def sign_p(gained: int, lost: int) -> float:
    """Two-sided sign test of gained against lost."""
    n, k = gained + lost, min(gained, lost)
    if not n:
        return 1.0
    return float(min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200, help="answerable questions (200)")
    parser.add_argument(
        "--skip", type=int, default=100, help="of the seeded order: answer_quality.py's sample"
    )
    parser.add_argument("--rerank", choices=("dense", "off"), default="dense")
    parser.add_argument("--rows", type=Path, help="write each question's ranks here (JSON)")
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"CLAPNQ not found at {DATA}", file=sys.stderr)
        return 2
    every, answerable = pooled()
    questions = answerable[args.skip : args.skip + args.questions]
    reranker = None
    if args.rerank == "dense":
        from quotebound.answering.rerank import DenseReranker

        reranker = DenseReranker()
    orders = ["bm25", "bm25, named first"]
    if reranker is not None:
        orders += ["bm25+dense", "bm25+dense, named first"]
    ranks: dict[str, list[int | None]] = {o: [] for o in orders}
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_store(f"sqlite:///{Path(tmp) / 'clapnq.db'}") as store,
    ):
        by_text = ingest_pooled(store, every)
        for n, row in enumerate(questions, 1):
            question = row["input"]
            gold = by_text[row["passages"][0]["text"]]
            hits = store.search(question, corpora=[CORPUS], limit=NAMED_DEPTH)
            named_hits, named = named_documents_first(question, hits)
            found = {"bm25": hits, "bm25, named first": named_hits}
            if reranker is not None:
                fused = list(reranker.rerank(question, hits).hits)
                found["bm25+dense"] = fused
                found["bm25+dense, named first"] = named_documents_first(question, fused)[0]
            for order, got in found.items():
                ranks[order].append(rank_of(got, gold))
            rows.append(
                {
                    "question": question,
                    "title": row["passages"][0]["title"],
                    "named": list(named),
                    "ranks": {o: r[-1] for o, r in ranks.items()},
                }
            )
            if sys.stderr.isatty():
                print(f"\r{n}/{len(questions)}", end="", file=sys.stderr, flush=True)
    if reranker is not None:
        reranker.close()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    total = len(questions)
    named_count = sum(bool(r["named"]) for r in rows)
    named_gold = sum(
        any(d in by_text[q["passages"][0]["text"]] for d in r["named"])
        for r, q in zip(rows, questions, strict=True)
    )
    print(
        f"CLAPNQ dev retrieval: {total} answerable questions (seeded order, after {args.skip}) "
        f"against all {len(every)} passages pooled; {named_count} name a document, "
        f"{named_gold} of them (also) the gold one"
    )
    header = ("order", "at 1", "at 5", "at 10", "gained@5", "lost@5", "sign p")
    table: list[tuple[str, ...]] = [header]
    for order in orders:
        cells = [order]
        for k in (1, 5, 10):
            hit = sum(r is not None and r <= k for r in ranks[order])
            low, high = wilson(hit, total)
            cells.append(f"{hit}/{total} ({100 * low:.1f}-{100 * high:.1f}%)")
        if order.endswith(", named first"):
            base = ranks[order.removesuffix(", named first")]
            at5 = [
                (b is not None and b <= 5, r is not None and r <= 5)
                for b, r in zip(base, ranks[order], strict=True)
            ]
            gained = sum(r and not b for b, r in at5)
            lost = sum(b and not r for b, r in at5)
            cells += [str(gained), str(lost), f"{sign_p(gained, lost):.2f}"]
        else:
            cells += ["", "", ""]
        table.append(tuple(cells))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print(
            "  ".join(
                c.ljust(w) if j == 0 else c.rjust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if i == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    if args.rows:
        args.rows.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
