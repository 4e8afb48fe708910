"""What the relevance rule (``unrelated_evidence``) drops from real answers, to be read.

Asks the contoso HR questions (``../shared/data/contoso_hr_benefits``: its six PDFs ingested,
the questions of ``ground_truth.jsonl``) with a provider through ``quotebound.pipeline.ask``,
and prints, over every attempt's verdict: the citations that passed the id and span checks,
how many the rule dropped, and each dropped one (claim, source, quote), so that a person can
read whether it was decoration or a citation a careful reader would keep.

``--dataset clapnq`` asks the answerable questions of answer_quality.py's seeded CLAPNQ dev
sample instead (each passage ingested as its own corpus, as that benchmark does).

Run it from the repository root (the local model: about 10 s a question on two cores)::

    .venv/bin/python -m benchmarks.studies.relevance_drops [--provider local] [--limit 50]
    .venv/bin/python -m benchmarks.studies.relevance_drops --dataset clapnq --provider extractive

Recorded (a study, done): docs/evaluation.md, "The relevance rule's price": on the Contoso
questions the 0.5B's first 14 answers lost 19 citations to the rule, every one read and none a
citation a careful reader would keep; on CLAPNQ's 60 answerable questions the table of dropped
citations per provider (extractive 0 of 57, the 0.5B 12 of 77, the 1.5B 6 of 65; none kept by
a careful reader).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.common.clapnq import SEED
from benchmarks.common.clapnq import load as load_clapnq
from benchmarks.common.contoso import DATA
from quotebound.corpus import LoadedDocument
from quotebound.ingest import chunk_document, load_file
from quotebound.pipeline import AskOptions, ask
from quotebound.providers import PROVIDER_NAMES, make_provider
from quotebound.reasons import ID_SPAN_FAILURES
from quotebound.store import open_store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="local", choices=PROVIDER_NAMES)
    parser.add_argument("--model", help="the provider's model (a bundled local one by default)")
    parser.add_argument("--limit", type=int, default=50, help="the first N questions")
    parser.add_argument("--dataset", choices=("contoso", "clapnq"), default="contoso")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs the public data set in {DATA}")
    # (question, corpus) pairs, and what to ingest into each corpus
    if args.dataset == "clapnq":
        items = [i for i in load_clapnq(60, SEED) if i.answerable][: args.limit]
        questions = [(i.question, f"q{i.id}") for i in items]
        docs = [
            (f"q{i.id}", LoadedDocument(f"{i.id}.txt", i.passage, "text/plain", title=i.title))
            for i in items
        ]
    else:
        questions = [
            (json.loads(line)["question"], "contoso")
            for line in (DATA / "ground_truth.jsonl").open(encoding="utf-8")
        ][: args.limit]
        docs = [
            ("contoso", load_file(pdf, pdf.name)) for pdf in sorted((DATA / "pdfs").glob("*.pdf"))
        ]
    provider = make_provider(args.provider, args.model)
    checked = dropped = kept_claims = 0
    shown: list[tuple[str, str, str]] = []  # (each is printed as it is found)
    try:
        with (
            tempfile.TemporaryDirectory() as home,
            open_store(f"sqlite:///{Path(home) / 'contoso.db'}") as store,
        ):
            for corpus, doc in docs:
                small = args.dataset == "clapnq"  # as answer_quality.py chunks CLAPNQ passages
                chunks = chunk_document(doc, max_chars=600, min_chars=150) if small else None
                store.ingest(corpus, doc, chunks or chunk_document(doc))
            for question, corpus in questions:
                options = AskOptions(corpora=[corpus], max_tokens=700)
                answer = ask(question, store, provider, options)
                kept_claims += len(answer.claims)
                for verdict in answer.verdicts:
                    for claim in verdict.claims:
                        for c in claim.citations:
                            if c.reason in ID_SPAN_FAILURES:
                                continue
                            checked += 1
                            if c.reason == "unrelated_evidence":
                                dropped += 1
                                shown.append((claim.text, c.source or "?", c.quote or ""))
                                print(
                                    f"  - claim: {claim.text[:160]}\n    {c.source}: "
                                    f"{(c.quote or '')[:200]}",
                                    flush=True,
                                )
    finally:
        provider.close()
    print(
        f"{args.dataset}, {len(questions)} questions, provider {args.provider} ({provider.model})"
    )
    print(
        f"citations past the id and span checks: {checked}; dropped as unrelated_evidence: "
        f"{dropped} ({dropped / max(checked, 1):.1%}); claims served: {kept_claims}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
