"""What an ask reads: the store's hits for a question (BM25, re-ranked when asked, the
documents the question names first), or sources retrieved elsewhere cut into pieces as ingest
cuts a document."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import replace

from .asking import AskOptions, Clock
from .corpus import Hit, LoadedDocument
from .coverage import document_name, named_documents
from .ingest.chunker import chunk_document
from .sources import Source
from .store import Store

log = logging.getLogger("quotebound.retrieval")


# How deep in the store's hits ``AskOptions.named_first`` looks for the named documents' chunks.
NAMED_DEPTH = 50


def retrieve(
    question: str, store: Store, opts: AskOptions, clock: Clock | None = None
) -> tuple[list[Hit], int | None, tuple[str, ...]]:
    """The store's hits for ``question`` as ``ask`` packs them: BM25's first
    ``opts.limit``, or with ``opts.rerank`` its first ``rerank.depth`` (at least the limit)
    re-ranked, then, with ``opts.named_first``, the chunks of the documents the question names
    first (among the first ``NAMED_DEPTH``), then cut to the limit. Returns the hits, whether
    they were re-ranked (1; 0: the reranker failed and BM25's order stands; None: no
    reranker) and the documents the question named (their keys; empty: none, or not asked)."""
    clock = clock or Clock()
    at = time.perf_counter()
    rerank = opts.rerank
    wanted = max(
        opts.limit,
        rerank.depth if rerank is not None else 0,
        NAMED_DEPTH if opts.named_first else 0,
    )
    hits = store.search(question, corpora=opts.corpora, groups=opts.groups, limit=wanted)
    at = clock.lap("retrieve_ms", at)
    reranked = None
    if rerank is not None:
        result = rerank.rerank(question, hits)
        clock.lap("rerank_ms", at)
        if result.error is not None:  # the trace counts it; the reason goes to the log (stderr)
            log.warning("the reranker failed, BM25's order is used: %s", result.error)
        hits, reranked = list(result.hits), int(result.error is None)
    named: tuple[str, ...] = ()
    if opts.named_first:
        hits, named = named_documents_first(question, hits)
    return hits[: opts.limit], reranked, named


def named_documents_first(question: str, hits: Sequence[Hit]) -> tuple[list[Hit], tuple[str, ...]]:
    """``hits`` with the chunks of the documents ``question`` names first, each part in its
    order (``coverage.named_documents`` over the hits' documents), and those documents' keys
    (empty, and ``hits`` as they were, when it names none)."""
    titles = {h.key: h.title for h in hits[:NAMED_DEPTH]}  # a hit's key is its document's
    documents = list(titles)
    picked = named_documents(question, [document_name(d, titles[d]) for d in documents])
    if not picked:
        return list(hits), ()
    chosen = {documents[i] for i in picked}
    named = [i < NAMED_DEPTH and h.key in chosen for i, h in enumerate(hits)]
    first = [h for h, n in zip(hits, named, strict=True) if n]
    rest = [h for h, n in zip(hits, named, strict=True) if not n]
    return first + rest, tuple(d for d in documents if d in chosen)


_FILE_NAME = re.compile(r"[\w\-. ]+\.\w{1,5}")


def named_sources_first(question: str, sources: Sequence[Source]) -> list[Source]:
    """``sources`` (pieces of documents given in a request, each keyed ``DOCUMENT:offset``)
    with the pieces of the documents ``question`` names first, each part in its order: the
    store's ``named_documents_first`` for documents sent whole. A document is called by its
    title (a file name read as ``document_name`` reads a key: "Northwind_Standard_Benefits_
    Details.pdf" is "Northwind Standard Benefits Details"), else its key."""
    documents: dict[str, str] = {}
    for src in sources:
        document = (src.key or src.id).rsplit(":", 1)[0]
        if document not in documents:
            title = (src.title or "").strip()
            documents[document] = (
                document_name(title) if _FILE_NAME.fullmatch(title) else document_name(None, title)
            ) or document
    order = list(documents)
    picked = {order[i] for i in named_documents(question, list(documents.values()))}
    if not picked:
        return list(sources)
    named = [(s.key or s.id).rsplit(":", 1)[0] in picked for s in sources]
    first = [s for s, n in zip(sources, named, strict=True) if n]
    return first + [s for s, n in zip(sources, named, strict=True) if not n]


# A source offered from elsewhere longer than this is cut as ingest cuts a document.
PIECE_CHARS = 1200


def pieces(sources: Sequence[Source], question: str) -> list[Source]:
    """``sources`` with each longer than ``PIECE_CHARS`` cut into whole-sentence pieces (the
    chunker's), each keeping its source's key, title, URL, date and page, in its source's
    place, those sharing more of the question's words first (then in their order)."""
    out: list[Source] = []
    for src in sources:
        if len(src.text) <= PIECE_CHARS:
            out.append(src)
            continue
        doc = LoadedDocument(src.key or src.id, src.text, "text/plain")
        pieces = [replace(src, text=c.text) for c in chunk_document(doc, max_chars=PIECE_CHARS)]
        out += by_shared_words(question, pieces)
    return out


def by_shared_words(question: str, sources: Sequence[Source]) -> list[Source]:
    """``sources`` with those sharing more of the question's words (over two letters) first,
    then in their order: how pieces of a source given whole are ranked when not all fit."""
    asked = {w for w in re.findall(r"\w+", question.casefold()) if len(w) > 2}
    shared = [len(asked & set(re.findall(r"\w+", s.text.casefold()))) for s in sources]
    return [sources[i] for i in sorted(range(len(sources)), key=lambda i: -shared[i])]
