"""End to end on the reference RAG-with-citations corpus: the contoso HR/benefits PDFs.

``../shared/data/contoso_hr_benefits/`` is the data of Microsoft's azure-search-openai-demo:
six HR and benefits PDFs, and 50 questions whose answers cite ``file.pdf#page=N`` (generated
with RAGAS, so treat the pages as approximate). The PDFs are ingested through the real path
(``load_file``, ``chunk_document``) into a fresh SQLite store, and each question is asked with
``quotebound.pipeline.ask`` as ``quotebound ask`` does by default (the fast support tier, the
answer check ``auto`` picks: the fast check and the judge averaged beside the packaged 1.5B,
the fast check alone beside any other provider; the fallback ranked by the fast check, and
BM25's hits re-ranked with MiniLM, the chunks of the documents the question names first;
``--answer-check off``, ``--fallback off``, ``--rerank off``, ``--named-first off`` to run
without them). Reported per
provider:

- retrieval: a gold page among the top 5 and top 10 chunks retrieved, and among the sources
  packed for the provider (what the model is sent);
- answers with at least one kept claim citing a gold page (a kept citation whose verified
  quote lies on one of the question's pages), answers with any kept claim, abstentions;
- decorative citations served (a kept citation sharing no content word with its claim),
  fragment claims served, answers the fallback served, and seconds per answer (p50, p95).

Run from the repository root (the local model takes tens of seconds a question on 2 cores)::

    .venv/bin/python -m benchmarks.quality.contoso --providers extractive
    .venv/bin/python -m benchmarks.quality.contoso --providers extractive local --limit 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import served_claims
from benchmarks.common.contoso import CORPUS, DATA, ingest, on_gold, questions
from quotebound.answering.check import chosen_check
from quotebound.answering.rerank import DenseReranker
from quotebound.choices import FALLBACKS, RERANKS
from quotebound.defaults import defaults, make_reranker
from quotebound.fragments import answer_fragments
from quotebound.packing import DEFAULT_BUDGET_CHARS, pack
from quotebound.pipeline import Answer, AskOptions, ask, retrieve
from quotebound.providers import make_provider
from quotebound.store import Store, open_store
from quotebound.text import normalize
from quotebound.text.words import content_words


def retrieval(
    store: Store,
    items: list[tuple[str, set[tuple[str, int]]]],
    budget: int,
    reranker: DenseReranker | None = None,
    named_first: bool = True,
) -> dict[str, int]:
    found = {"top5": 0, "top10": 0, "packed": 0}
    options = AskOptions(corpora=[CORPUS], limit=20, rerank=reranker, named_first=named_first)
    for question, gold in items:
        hits, _, _ = retrieve(question, store, options)
        found["top5"] += any(on_gold(h.key, h.pages, gold) for h in hits[:5])
        found["top10"] += any(on_gold(h.key, h.pages, gold) for h in hits[:10])
        packed = pack(hits, budget_chars=budget).working_set
        found["packed"] += any(on_gold(s.key, [s.page] if s.page else [], gold) for s in packed)
    return found


def served(answer: Answer, gold: set[tuple[str, int]]) -> dict[str, int]:
    """What one answer served: claims on a gold page, decorations, fragments."""
    out = {"gold": 0, "decorative": 0, "fragments": 0}
    if not answer.claims:
        return out
    served = served_claims(answer)  # as verified (a claim written twice is served once)
    out["fragments"] += sum(why is not None for why in answer_fragments([c.text for c in served]))
    for claim in served:
        words = content_words(normalize(claim.text))
        for c in claim.citations:
            if c.valid and words:
                out["decorative"] += words.isdisjoint(content_words(normalize(c.quote or "")))
    for cites in answer.claims:
        pages = [q.page for card in answer.cards if card.number in cites.cards for q in card.quotes]
        documents = {card.document for card in answer.cards if card.number in cites.cards}
        out["gold"] += any((d, p) in gold for d in documents for p in pages if p)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--providers", nargs="+", default=["extractive", "local"])
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--entailment", default="fast", help="the support tier (off: none)")
    parser.add_argument(
        "--answer-check",
        choices=("auto", "fast", "both", "off"),
        default="auto",
        help="as ask --answer-check: auto (the default) both beside the packaged 1.5B, fast "
        "beside any other provider; both the fast check and the judge averaged (the judge on "
        "the answering model where ask puts it there); fast alone; off none (every question "
        "here has an answer in the PDFs: what a check refuses is what it costs)",
    )
    parser.add_argument(
        "--fallback",
        choices=FALLBACKS,
        default="extractive",
        help="as ask --fallback: extractive (the default) the sentences the fast answer check "
        "scores as answering when the answer would be an abstention, covering those covering "
        "the question's words best (either only with --answer-check fast), off none",
    )
    parser.add_argument(
        "--rerank",
        choices=RERANKS,
        default="dense",
        help="as ask --rerank: dense (the default) BM25's first 50 hits re-ranked by fusion "
        "with MiniLM's cosine to the question; off BM25's order",
    )
    parser.add_argument(
        "--named-first",
        choices=("on", "off"),
        default="on",
        help="as ask --named-first: on (the default) the chunks of the documents the question "
        "names first; off the ranking alone",
    )
    parser.add_argument(
        "--store",
        metavar="FILE",
        help="keep the SQLite store here (the PDFs and every answer's trace, with what the "
        "model wrote: quotebound trace ID --store sqlite:///FILE reopens one); a new file",
    )
    args = parser.parse_args(argv)
    if args.store and Path(args.store).exists():
        parser.error(f"{args.store} exists: --store writes a new store")
    if not DATA.exists():
        print(f"the contoso data is not at {DATA}", file=sys.stderr)
        return 2
    items = questions(args.limit)
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite:///{Path(args.store).resolve() if args.store else Path(home) / 'c.db'}"
        return _run(args, items, url)


def _run(args: argparse.Namespace, items: list[tuple[str, set[tuple[str, int]]]], url: str) -> int:
    rows: list[tuple[str, ...]] = []
    with open_store(url) as store:
        started = time.perf_counter()
        ingest(store)
        print(f"ingested 6 PDFs in {time.perf_counter() - started:.1f} s; {len(items)} questions")
        for name in args.providers:
            # ask's parts as `quotebound ask` makes them, but a reranker that keeps no vectors
            # between questions: each is timed as a fresh `quotebound ask`
            made = defaults(
                make_provider(name, None),
                entailment=args.entailment,
                answer_check=args.answer_check,
                rerank="off",
                fallback=args.fallback,
            )
            provider = made.provider
            kind = chosen_check(args.answer_check, provider)  # as ask's: auto, both or fast
            budget = min(DEFAULT_BUDGET_CHARS, provider.context_chars or DEFAULT_BUDGET_CHARS)
            named_first = args.named_first == "on"
            tally: dict[str, Any] = {"gold": 0, "answered": 0, "abstained": 0, "decorative": 0}
            tally["fragments"] = tally["fallback"] = 0
            seconds = []
            try:
                made.rerank = make_reranker(
                    args.rerank, made.entailment, made.answer_check, cache_size=0
                )
                found = retrieval(store, items, budget, made.rerank, named_first)
                for question, gold in items:
                    t0 = time.perf_counter()
                    options = made.options(
                        corpora=[CORPUS], max_tokens=700, named_first=named_first
                    )
                    answer = ask(question, store, provider, options)
                    seconds.append(time.perf_counter() - t0)
                    got = served(answer, gold)
                    tally["gold"] += got["gold"] > 0
                    tally["decorative"] += got["decorative"]
                    tally["fragments"] += got["fragments"]
                    tally["answered"] += bool(answer.claims)
                    tally["abstained"] += answer.status == "abstained"
                    tally["fallback"] += bool(answer.counts.get("fallback_attempt"))
                    print(
                        json.dumps(
                            {
                                "provider": name,
                                "question": question,
                                "status": answer.status,
                                "claims": [c.text for c in answer.claims],
                                "gold_hit": got["gold"],
                                "gold": sorted(f"{k.split(':', 1)[1]}#{p}" for k, p in gold),
                                "cited": sorted(
                                    {
                                        f"{(card.document or '').split(':', 1)[-1]}#{q.page}"
                                        for card in answer.cards
                                        for q in card.quotes
                                    }
                                ),
                                "fallback": bool(answer.counts.get("fallback_attempt")),
                                "seconds": round(seconds[-1], 1),
                                "trace_id": answer.trace_id,
                                "answer_check": answer.answer_check.to_dict()
                                if answer.answer_check
                                else None,
                            }
                        ),
                        file=sys.stderr,
                        flush=True,
                    )
            finally:
                made.close()
            n = len(items)
            seconds.sort()
            rows.append(
                (
                    f"{name} ({provider.model})"
                    + (f", answer check {kind}" if made.answer_check else "")
                    + (f", fallback {made.fallback.model}" if made.fallback else "")
                    + (", reranked" if made.rerank else "")
                    + (", named first" if named_first else ""),
                    f"{found['top5']}/{n}",
                    f"{found['top10']}/{n}",
                    f"{found['packed']}/{n}",
                    f"{tally['gold']}/{n}",
                    f"{tally['answered']}/{n}",
                    f"{tally['abstained']}/{n}",
                    f"{tally['fallback']}/{n}",
                    str(tally["decorative"]),
                    str(tally["fragments"]),
                    f"{statistics.median(seconds):.1f}",
                    f"{seconds[min(n - 1, int(0.95 * n))]:.1f}",
                )
            )
    head = (
        "provider",
        "gold in top 5",
        "top 10",
        "packed",
        "answer cites gold page",
        "answered",
        "abstained",
        "by fallback",
        "decorative",
        "fragments",
        "p50 s",
        "p95 s",
    )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for k, row in enumerate([head, *rows]):
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if k == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
