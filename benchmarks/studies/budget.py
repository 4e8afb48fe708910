"""The working set's budget: what a larger one packs, and what it costs the local model.

``ask`` packs the retrieved chunks, in rank order, into at most ``budget`` characters of
sources (``AskOptions.budget_chars``, capped by the provider's ``context_chars``: 6,000 for
the embedded model, ``quotebound.providers.local.DEFAULT_CONTEXT_CHARS``). Per budget:

- **recall**: questions with their gold evidence among the sources packed, retrieved as ``ask``
  retrieves by default (BM25's hits re-ranked with MiniLM, the documents a question names
  first, the first 20 hits offered to the packer):
  - PolicyQA dev (the design set: ``--policyqa N`` seeded distinct questions of each of its
    20 policies, each policy its own corpus and each of its paragraphs a document; the gold is
    any paragraph of the policy the question is asked of);
  - the Contoso HR PDFs (the issue's end-to-end set: a gold page packed, as
    ``benchmarks/quality/contoso.py`` counts it);
- **cost** (``--timed N``, the local model loaded): seconds for the packaged model to write
  its answer to the first N Contoso questions under the contract (the JSON schema with each
  source's sentences as the quotes it may copy; one call, no repair, no verification), p50 and
  max, and the prompt's size in characters.

Run from the repository root (PolicyQA and Contoso are read in place from ../shared/data)::

    .venv/bin/python -m benchmarks.studies.budget       # recall, 2,000 to 12,000 chars
    .venv/bin/python -m benchmarks.studies.budget --policyqa 0 --budgets 3000 6000 9000 12000 \\
        --timed 6

Recorded (a study, done): the table "The working-set budget, measured" in docs/results.md, one
run: at the shipped 6,000 characters a gold source packed for 77.0% of the PolicyQA questions
and 78.0% of Contoso's, the 1.5B's answer p50 28.7 s; each 3,000 characters more costs it about
11 s, so 6,000 stays (``quotebound.providers.local.DEFAULT_CONTEXT_CHARS``; docs/answering.md's
``local`` row cites it).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

from benchmarks.common import SHARED_DATA
from benchmarks.common.contoso import CORPUS, on_gold, questions
from benchmarks.common.contoso import ingest as ingest_contoso
from quotebound.answering.rerank import DenseReranker
from quotebound.contract import build_request
from quotebound.corpus import LoadedDocument
from quotebound.ingest import chunk_document
from quotebound.packing import pack
from quotebound.pipeline import AskOptions, retrieve
from quotebound.providers.base import ProviderError
from quotebound.sources import Source
from quotebound.store import Store, open_store

POLICYQA = SHARED_DATA / "policyqa" / "dev.json"
SEED = 20261205
BUDGETS = (2000, 3000, 4000, 6000, 9000, 12000)
LIMIT = AskOptions().limit  # the hits ask offers the packer


Asked = tuple[str, str, Callable[[Source], bool]]  # (corpus, question, is a gold source)


def policyqa(store: Store, per_policy: int) -> list[Asked]:
    """Ingest PolicyQA dev (each policy a corpus, each paragraph a document); return
    ``per_policy`` seeded questions of each policy, the gold every paragraph of that policy
    the same question is asked of (over half of PolicyQA's questions are asked of several)."""
    if per_policy < 1:
        return []
    data = json.loads(POLICYQA.read_text("utf-8"))["data"]
    rng = random.Random(SEED)
    out: list[Asked] = []
    for n, policy in enumerate(data):
        corpus = f"policy{n:02d}"
        gold: dict[str, set[str]] = {}
        for k, paragraph in enumerate(policy["paragraphs"]):
            name = f"p{k:03d}.txt"
            doc = LoadedDocument(name, paragraph["context"], "text/plain", title=policy["title"])
            store.ingest(corpus, doc, chunk_document(doc))
            for qa in paragraph["qas"]:
                gold.setdefault(qa["question"], set()).add(f"{corpus}:{name}")
        for question in rng.sample(sorted(gold), min(per_policy, len(gold))):
            out.append((corpus, question, partial(_document_in, frozenset(gold[question]))))
    return out


def contoso(store: Store) -> list[Asked]:
    """Ingest the Contoso PDFs; return their 50 questions, the gold a page the answer cites."""
    ingest_contoso(store)
    return [(CORPUS, q, partial(_on_page, gold)) for q, gold in questions(50)]


def _document_in(keys: frozenset[str], source: Source) -> bool:
    return (source.key or "").split("#", 1)[0] in keys


def _on_page(gold: set[tuple[str, int]], source: Source) -> bool:
    return on_gold(source.key, [source.page] if source.page else [], gold)


def packed_recall(
    store: Store, asked: list[Asked], budgets: list[int], reranker: DenseReranker
) -> dict[int, int]:
    """Per budget, the questions with a gold source among those packed."""
    found = dict.fromkeys(budgets, 0)
    for corpus, question, is_gold in asked:
        options = AskOptions(corpora=[corpus], limit=LIMIT, rerank=reranker)
        hits, _, _ = retrieve(question, store, options)
        for budget in budgets:
            found[budget] += any(map(is_gold, pack(hits, budget_chars=budget).working_set))
    return found


def timed(
    store: Store, budgets: list[int], n: int, reranker: DenseReranker
) -> dict[int, dict[str, list[float]]]:
    """Per budget, the packaged model's seconds to answer the first ``n`` Contoso questions."""
    from quotebound.entailment.judge import JUDGE_MODEL
    from quotebound.providers.local import LocalProvider

    provider = LocalProvider(JUDGE_MODEL)
    out: dict[int, dict[str, list[float]]] = {b: {"seconds": [], "chars": []} for b in budgets}
    try:
        for question, _ in questions(n):
            options = AskOptions(corpora=[CORPUS], limit=LIMIT, rerank=reranker)
            hits, _, _ = retrieve(question, store, options)
            for budget in budgets:
                ws = pack(hits, budget_chars=budget).working_set
                request = build_request(question, ws, "json", provider.capabilities)
                started = time.perf_counter()
                try:
                    provider.complete(request)
                except ProviderError as exc:  # timed all the same, and said
                    print(f"  {budget:>6} provider error ({exc.kind}): {exc}", file=sys.stderr)
                out[budget]["seconds"].append(time.perf_counter() - started)
                out[budget]["chars"].append(sum(len(m.content) for m in request.messages))
                print(f"  {budget:>6} {out[budget]['seconds'][-1]:6.1f} s", file=sys.stderr)
    finally:
        provider.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--policyqa", type=int, default=15, help="questions per policy (0: none)")
    parser.add_argument("--timed", type=int, default=0, help="Contoso questions to time")
    args = parser.parse_args(argv)
    budgets = sorted(set(args.budgets))
    reranker = DenseReranker()
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/b.db") as store:
        sets = {"PolicyQA dev": policyqa(store, args.policyqa), "Contoso": contoso(store)}
        sets = {name: asked for name, asked in sets.items() if asked}  # --policyqa 0: none
        recall = {
            name: packed_recall(store, asked, budgets, reranker) for name, asked in sets.items()
        }
        cost = timed(store, budgets, args.timed, reranker) if args.timed else {}
    reranker.close()
    sizes = {name: len(asked) for name, asked in sets.items()}
    print(f"{'budget (chars)':>15} " + " ".join(f"{name + ' packed':>22}" for name in recall))
    for budget in budgets:
        cells = [
            f"{recall[k][budget]:>4}/{sizes[k]} ({100 * recall[k][budget] / sizes[k]:4.1f}%)"
            for k in recall
        ]
        line = f"{budget:>15} " + " ".join(f"{c:>22}" for c in cells)
        if cost:
            s = cost[budget]["seconds"]
            line += (
                f"   answer p50 {statistics.median(s):5.1f} s, max {max(s):5.1f} s "
                f"(prompt {statistics.median(cost[budget]['chars']):,.0f} chars, n={len(s)})"
            )
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
