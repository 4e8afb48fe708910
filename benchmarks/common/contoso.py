"""The Contoso HR/benefits PDFs (``../shared/data/contoso_hr_benefits``: six PDFs and 50
questions whose answers cite ``file.pdf#page=N``), as the benchmarks read them: the questions
with their gold pages, the PDFs ingested through the real path, and whether a hit or a source
lies on a gold page."""

from __future__ import annotations

import json
import re

from benchmarks.common import SHARED_DATA
from quotebound.ingest import chunk_document, load_file
from quotebound.store import Store

DATA = SHARED_DATA / "contoso_hr_benefits"
CORPUS = "contoso"
_GOLD = re.compile(r"\[([^\[\]#]+\.pdf)#page=(\d+)\]")


def questions(limit: int) -> list[tuple[str, set[tuple[str, int]]]]:
    """(question, gold pages as (document key, page)) for the first ``limit`` questions."""
    out = []
    for line in (DATA / "ground_truth.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        gold = {(f"{CORPUS}:{name}", int(page)) for name, page in _GOLD.findall(row["truth"])}
        out.append((row["question"], gold))
    return out[:limit]


def page_texts() -> dict[tuple[str, int], str]:
    """Each page's text as the set gives it (``pages.jsonl``), whitespace collapsed, by
    (document key, page) as ``questions`` names the gold pages."""
    out = {}
    for line in (DATA / "pages.jsonl").read_text("utf-8").splitlines():
        page = json.loads(line)
        out[(f"{CORPUS}:{page['doc']}", int(page["page"]))] = " ".join(page["text"].split())
    return out


def ingest(store: Store) -> None:
    """The six PDFs into ``store``'s corpus ``contoso``, through the real path."""
    for pdf in sorted((DATA / "pdfs").glob("*.pdf")):
        doc = load_file(pdf, pdf.name)
        store.ingest(CORPUS, doc, chunk_document(doc))


def on_gold(
    key: str | None, pages: tuple[int, ...] | list[int], gold: set[tuple[str, int]]
) -> bool:
    document = (key or "").split("#", 1)[0]
    return any((document, page) in gold for page in pages)
