"""The Messages API end to end on real PDFs: the Contoso HR questions sent to ``POST /v1/messages``
with the six PDFs as base64 ``document`` blocks, citations enabled, as a user of the Anthropic
SDK sends them.

A served app on a loopback port (``serve``'s defaults for ``--provider``: the embedded local
model by default; the fast tier, the answer check, the extractive fallback), the official
``anthropic`` SDK as the client. Per question: whether the answer has a cited text block or is
quotebound's abstention; every citation checked against the PDF as ``quotebound ingest`` reads
it (``cited_text`` within the text of the pages ``page_location`` names, whitespace aside:
must be all of them); whether a citation lies on one of the question's gold pages; seconds per
answer.

    .venv/bin/python -m benchmarks.quality.messages_contoso              # 20 questions, local
    .venv/bin/python -m benchmarks.quality.messages_contoso --provider extractive --limit 50
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.contoso import DATA, questions
from kits.serverkit import live_server
from quotebound.defaults import defaults
from quotebound.ingest import load_file
from quotebound.providers import make_provider
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> int:
    import anthropic

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="local")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--rows", type=Path, help="write each answer here (JSON lines)")
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"the Contoso data is not at {DATA}", file=sys.stderr)
        return 2
    pdfs = sorted((DATA / "pdfs").glob("*.pdf"))
    pages = {}  # (file name, page number) -> the page's text as ingest reads it
    for pdf in pdfs:
        loaded = load_file(pdf, pdf.name)
        for page in loaded.pages:
            pages[(pdf.name, page.number)] = _squeezed(loaded.text[page.start : page.end])
    documents = [
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": base64.b64encode(pdf.read_bytes()).decode(),
            },
            "title": pdf.name,
            "citations": {"enabled": True},
        }
        for pdf in pdfs
    ]
    made = defaults(make_provider(args.provider, None))  # the parts serve runs by default
    provider = made.provider
    tally = {"answered": 0, "abstained": 0, "citations": 0, "held": 0, "gold": 0}
    seconds: list[float] = []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/m.db"
        with open_store(url) as store:
            secret = store.create_key(name="bench")[1]
        tier, check, rerank = made.entailment, made.answer_check, made.rerank
        config = ServerConfig(
            store_url=url,
            provider=lambda: provider,
            max_body_bytes=16 << 20,
            entailment=(lambda: tier) if tier is not None else None,
            answer_check=(lambda _tier: check) if check is not None else None,
            fallback=check is not None,
            rerank=(lambda *_holders: rerank) if rerank is not None else None,
        )
        with live_server(create_app(config)) as base:
            client = anthropic.Anthropic(api_key=secret, base_url=base, max_retries=0, timeout=900)
            model = f"quotebound-{provider.name}"
            for question, gold in questions(args.limit):
                at = time.perf_counter()
                asked: Any = [
                    {"role": "user", "content": [*documents, {"type": "text", "text": question}]}
                ]
                message: Any = client.messages.create(model=model, max_tokens=1024, messages=asked)
                seconds.append(time.perf_counter() - at)
                cited = [c for b in message.content for c in (b.citations or [])]
                held = on_gold = 0
                for c in cited:
                    name = pdfs[c.document_index].name
                    span = range(c.start_page_number, c.end_page_number)
                    text = " ".join(pages.get((name, n), "") for n in span)
                    held += _squeezed(c.cited_text) in text
                    on_gold += any((f"contoso:{name}", n) in gold for n in span)
                kind = "answered" if cited else "abstained"  # (every claim served cites)
                tally[kind] += 1
                tally["citations"] += len(cited)
                tally["held"] += held
                tally["gold"] += on_gold > 0
                rows.append(
                    {
                        "question": question,
                        "kind": kind,
                        "text": [b.text for b in message.content],
                        "citations": len(cited),
                        "held": held,
                        "gold": on_gold,
                    }
                )
                print(json.dumps(rows[-1])[:300], file=sys.stderr, flush=True)
    # (the app closed the provider and the parts when it stopped)
    if args.rows:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    n = len(rows)
    print(f"\nprovider {args.provider}; {n} Contoso questions, the six PDFs as documents\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| answers with a cited block | {tally['answered']} of {n} |")
    print(f"| abstentions | {tally['abstained']} of {n} |")
    print(f"| citations | {tally['citations']} |")
    print(f"| cited_text within its pages | {tally['held']} of {tally['citations']} |")
    print(f"| answers citing a gold page | {tally['gold']} of {n} |")
    ordered = sorted(seconds)
    p95 = ordered[max(0, round(0.95 * n) - 1)] if n else 0.0
    print(f"| seconds per answer, p50 / p95 | {statistics.median(ordered):.1f} / {p95:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
