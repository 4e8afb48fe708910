"""The commands that fill a store's corpora and look into them: ``ingest`` (files to chunks)
and ``search`` (what retrieval returns for a query, and how ``ask`` would pack it)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import click

from ..cards import safe_url
from ..defaults import make_reranker
from ..errors import IngestError, InputError
from ..ingest import chunk_document, iter_files, load_file
from ..packing import chunk_key, pack
from ..pipeline import AskOptions, retrieve
from ..store import Hit, Store, open_store
from .options import (
    EXIT_OK,
    EXIT_PROBLEMS,
    budget_option,
    emit,
    named_option,
    rerank_option,
    shorten,
    skip_unchosen,
    store_option,
)


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--corpus", required=True, help="The corpus the documents go in (key prefix).")
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Only GROUP may read them.")
@click.option("--public", is_flag=True, help="Make the documents public (clears their groups).")
@click.option("--url-prefix", help="Document URL = this prefix + the document name.")
@click.option("--supersedes", metavar="KEY", help="The document key this one replaces.")
@click.option("--max-chars", type=int, default=1200, show_default=True, help="Chunk size.")
@click.option(
    "--no-originals",
    is_flag=True,
    help="Keep no copy of the files (citations then open the text as sent, not the original).",
)
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def ingest_cmd(
    paths: tuple[Path, ...],
    corpus: str,
    groups: tuple[str, ...],
    public: bool,
    url_prefix: str | None,
    supersedes: str | None,
    max_chars: int,
    no_originals: bool,
    store_url: str | None,
    as_json: bool,
) -> int:
    """Add .txt, .md, .html and .pdf files (and folders of them) to a corpus.

    Unchanged files are a no-op; a changed file becomes a new version (the old one is kept).
    A file that cannot be read is reported and skipped; the rest go in.
    """
    files = _files_to_ingest(paths)
    if supersedes is not None and len(files) != 1:
        raise InputError("--supersedes names what one document replaces: give a single file")
    if public and groups:
        raise InputError("--public and --acl contradict each other: give one")
    if url_prefix is not None and safe_url(url_prefix + "x") is None:
        raise InputError(f"--url-prefix must be an http:// or https:// URL, got {url_prefix!r}")
    acl = [] if public else (list(groups) if groups else None)
    options = _IngestOptions(corpus, acl, url_prefix, supersedes, max_chars, not no_originals)
    done: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    with open_store(store_url) as store:
        show = not as_json and sys.stderr.isatty() and len(files) > 1
        with click.progressbar(
            files, label="ingesting", file=sys.stderr, show_pos=True, hidden=not show
        ) as bar:
            for path, name in bar:
                try:
                    done.append(_ingest_one(store, options, path, name))
                except IngestError as exc:
                    skipped.append({"path": str(path), "error": str(exc)})
        payload = {"corpus": corpus, "store": store.url, "documents": done, "skipped": skipped}
    lines = [f"{d['status']:<12} {d['key']} v{d['version']} ({d['chunks']} chunks)" for d in done]
    lines += [f"{'skipped':<12} {s['path']}: {s['error']}" for s in skipped]
    lines.append(f"{len(done)} ingested, {len(skipped)} skipped, into {store.url}")
    emit(as_json, payload, "\n".join(lines))
    return EXIT_PROBLEMS if skipped else EXIT_OK


def _files_to_ingest(paths: tuple[Path, ...]) -> list[tuple[Path, str]]:
    """The supported files under ``paths`` with their names, each name once."""
    for path in paths:
        if not path.exists():
            raise InputError(f"no such file or folder: {path}")
    files = list(iter_files(list(paths)))
    if not files:
        raise InputError("no .txt, .md, .html or .pdf files found in the given paths")
    names = [name for _, name in files]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise InputError(
            f"two files would both be named {twice[0]!r} in the corpus: "
            "ingest their folder instead, so their paths tell them apart"
        )
    return files


@dataclasses.dataclass(frozen=True)
class _IngestOptions:
    corpus: str
    acl: list[str] | None  # None: keep what the document has
    url_prefix: str | None
    supersedes: str | None
    max_chars: int
    keep_originals: bool = True


def _ingest_one(store: Store, options: _IngestOptions, path: Path, name: str) -> dict[str, Any]:
    doc = load_file(path, name)
    if doc.updated is None:  # no date in the file itself: its modification time
        mtime = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.UTC)
        doc = dataclasses.replace(doc, updated=mtime.date().isoformat())
    size = options.max_chars
    chunks = chunk_document(doc, max_chars=size, min_chars=min(200, size // 2))
    url = f"{options.url_prefix}{urllib.parse.quote(name)}" if options.url_prefix else None
    result = store.ingest(
        options.corpus,
        doc,
        chunks,
        acl=options.acl,
        url=url,
        supersedes=options.supersedes,
        keep_original=options.keep_originals,
    )
    return {
        "path": str(path),
        "key": result.key,
        "version": result.version,
        "status": result.status,
        "chunks": result.chunks,
    }


@click.command("search")
@click.argument("query")
@click.option("--corpus", "corpora", multiple=True, metavar="NAME", help="Search only NAME.")
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Read as GROUP.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@budget_option
@rerank_option
@named_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def search_cmd(
    query: str,
    corpora: tuple[str, ...],
    groups: tuple[str, ...],
    limit: int,
    budget: int,
    rerank: str,
    named_first: str,
    store_url: str | None,
    as_json: bool,
) -> int:
    """Show what retrieval returns for QUERY, ranked as ask ranks it, and how it would be
    packed (S1..Sn)."""
    with open_store(store_url) as store:  # a bad store URL fails before MiniLM loads
        reranker = make_reranker(rerank, may_skip=skip_unchosen)
        options = AskOptions(
            corpora=list(corpora) or None,
            groups=groups,
            limit=limit,
            rerank=reranker,
            named_first=named_first == "on",
        )
        try:
            hits, reranked, named = retrieve(query, store, options)
        finally:
            if reranker is not None:
                reranker.close()
    packed = pack(hits, budget_chars=budget)
    ids = {chunk_key(h): s.id for s, h in zip(packed.working_set, packed.hits, strict=True)}
    order = {None: "bm25", 1: "bm25+dense", 0: "bm25 (the reranker failed)"}[reranked]
    if named:
        order += ", named documents first"
    payload = {
        "query": query,
        "order": order,
        "named_documents": list(named),
        "hits": [_hit_dict(h, ids.get(chunk_key(h))) for h in hits],
        "working_set": packed.working_set.to_list(),
        "dropped": [
            {"chunk": chunk_key(d.hit), "reason": d.reason, "duplicate_of": d.duplicate_of}
            for d in packed.dropped
        ],
    }
    lines = [f"{len(hits)} hits for {query!r}, ordered by {order}"]
    if named:
        lines.append("named: " + ", ".join(named))
    for n, hit in enumerate(hits, 1):
        page = f" p.{hit.page}" if hit.page else ""
        packed_as = ids.get(chunk_key(hit), "not packed")
        lines.append(f"{n:>3}. {chunk_key(hit)}{page}  bm25 {hit.score:.3f}  -> {packed_as}")
        lines.append(f"       {shorten(hit.text, 96)}")
    emit(as_json, payload, "\n".join(lines))
    return EXIT_OK


def _hit_dict(hit: Hit, packed_as: str | None) -> dict[str, Any]:
    return {
        "chunk": chunk_key(hit),
        "key": hit.key,
        "version": hit.version,
        "score": hit.score,
        "title": hit.title,
        "url": hit.url,
        "updated": hit.updated,
        "pages": list(hit.pages),
        "section": hit.section,
        "start": hit.start,
        "end": hit.end,
        "text": hit.text,
        "packed_as": packed_as,
    }
