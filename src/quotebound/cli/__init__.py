"""The command line: parse, call the library, map errors to exit codes (here and only here).

Exit codes (docs/cli.md):
    0  success: every claim kept, or the answer abstained; every file ingested
    1  the command ran and found problems: a claim dropped, ungrounded or unparseable output;
       a file skipped by ingest
    2  usage or input error (bad option, missing file, malformed SOURCES JSON, unknown trace),
       or a store that cannot be opened
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, overload

import click

from .. import __version__
from ..cards import safe_url
from ..coverage import describe
from ..defaults import DEFAULT_PROVIDER, Part, defaults, make_reranker
from ..entailment import BACKENDS, DEFAULT_TIER, close_together, make_backend
from ..entailment.answers import ANSWER_CHECKS, DEFAULT_ANSWER_CHECK, DEFAULT_FALLBACK, FALLBACKS
from ..entailment.base import Backend, EntailmentError
from ..entailment.rerank import DEFAULT_RERANK, RERANK_DEPTH, RERANKS
from ..entailment.tier import check_entailment
from ..errors import IngestError, InputError, NotFoundError, QuoteboundError, unreadable
from ..ingest import chunk_document, iter_files, load_file
from ..originals import document_page, original_of, pdf_highlights, quotes_of, render_page
from ..packing import DEFAULT_BUDGET_CHARS, chunk_key, pack
from ..parsing import FORMATS
from ..pipeline import NAMED_DEPTH, Answer, AskOptions, ask, retrieve
from ..providers import PROVIDER_NAMES, Provider, make_provider
from ..sources import WorkingSet
from ..store import Hit, Store, TraceRecord, open_store
from ..text.display import terminal_safe
from ..traceview import sent_source, source_view, trace_dict
from ..verify import Policy, Verdict, verify

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _read_text(path: str, what: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(what, path, exc) from None


def load_working_set(path: str) -> WorkingSet:
    """A WorkingSet from a JSON file: a list of Source objects, or {"sources": [...]}."""
    text = _read_text(path, "SOURCES")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"SOURCES file {path} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from None
    except (ValueError, RecursionError) as exc:  # 5000-digit numbers, nesting too deep
        raise InputError(f"SOURCES file {path} is not usable JSON: {exc}") from None
    if not isinstance(data.get("sources") if isinstance(data, dict) else data, list):
        raise InputError(f"SOURCES file {path} must hold a JSON list of sources")
    return WorkingSet.from_json(data)


def _report(verdict: Verdict) -> str:
    """A readable report of a verdict."""
    kept, total = len(verdict.kept_claims), len(verdict.claims)
    head = f"status: {verdict.status}"
    if verdict.status in ("grounded", "partial", "ungrounded"):
        head += f" ({kept} of {total} claims kept)"
    tiers = f", checks: {' + '.join(verdict.tiers)}" if len(verdict.tiers) > 1 else ""
    lines = [f"{head}  [format {verdict.format}{tiers}]"]
    if verdict.error:
        lines.append(f"  error: {verdict.error}")
    if verdict.status == "abstained":
        lines.append("  the answer abstained: the sources do not cover the question")
        if verdict.missing:
            lines.append(f"  missing: {verdict.missing}")
    for n, claim in enumerate(verdict.claims, 1):
        mark = "kept" if claim.kept else "DROPPED"
        lines.append(f"  {n}. [{mark}] {claim.text}")
        if claim.reason:
            lines.append(f"       {claim.reason}: {claim.message}")
        for note in claim.notes:
            lines.append(f"       note (writing, not grounding): {note}")
        for c in claim.citations:
            where = "".join(f" at [{a}:{b})" for a, b in c.parts[:1]) + "".join(
                f", [{a}:{b})" for a, b in c.parts[1:]
            )
            quote = f' "{_shorten(c.quote)}"' if c.quote else ""
            state = "ok" if c.valid else f"{c.reason} ({c.message})"
            if c.valid and c.entailment:  # what the entailment tier said, and how sure
                state += f" ({c.entailment['label']} {c.entailment['score']:.2f})"
            if c.anchored:
                state += " (placed by the code: the sentence that carries the claim)"
            if c.native is not None:
                state += _native_note(c.native, c.quote)
            lines.append(f"       - {c.source or c.ref}{where}{quote}: {state}")
    return "\n".join(lines)


def _native_note(native: dict[str, Any], quote: str | None) -> str:
    """What a provider's own citation said, where it matters to a reader: offsets or pages
    that disagree with what was verified, or no quote to check."""
    offsets, pages = native.get("offsets"), native.get("pages")
    if native.get("agrees") is False and offsets:
        found = native.get("found") or []
        at = f" (found at [{found[0]}:{found[1]}))" if len(found) == 2 else ""
        return f" (the provider's offsets [{offsets[0]}:{offsets[1]}) disagree{at})"
    if native.get("agrees") is False and pages:
        return f" (the provider's pages {pages[0]}-{pages[1] - 1} do not hold this source's page)"
    if quote is None:
        return f" ({native.get('type') or 'native'}, no quote: checked against the whole source)"
    return ""


def _shorten(text: str, limit: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _emit(as_json: bool, payload: dict[str, Any], human: str) -> None:
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        click.echo(terminal_safe(human))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="quotebound")
def cli() -> None:
    """quotebound: make answers from documents auditable."""


_ENTAILMENT_CHOICES = click.Choice(list(BACKENDS))


def _entailment_options(default: str | None) -> Callable[[Any], Any]:
    """``--entailment`` (``off`` or a backend; ``default``: None is off) and ``--nli-model``."""

    def add(command: Any) -> Any:
        command = click.option(
            "--nli-model",
            "--entailment-model",
            "entailment_model",
            type=click.Path(path_type=Path),
            metavar="PATH",
            help="The local model directory of --entailment nli "
            "(--entailment-model: its older name).",
        )(command)
        what = (
            f"The entailment tier after the code checks: {default} by default (the fast "
            "checker), judge or cascade for the local judge model, off to skip it."
            if default
            else "Also run the entailment tier with this backend (off by default)."
        )
        return click.option(
            "--entailment",
            type=click.Choice([*BACKENDS, "off"]),
            default=default or "off",
            show_default=True,
            help=what,
        )(command)

    return add


_ENTAILMENT_FLAGS = ("--entailment", "--nli-model")


@overload
def make_entailment(
    name: str,
    model_path: Path | None,
    provider: Provider | None = ...,
    flags: tuple[str, str] = ...,
) -> Backend: ...
@overload
def make_entailment(
    name: str | None,
    model_path: Path | None,
    provider: Provider | None = ...,
    flags: tuple[str, str] = ...,
) -> Backend | None: ...
def make_entailment(
    name: str | None,
    model_path: Path | None,
    provider: Provider | None = None,
    flags: tuple[str, str] = _ENTAILMENT_FLAGS,
) -> Backend | None:
    """The entailment backend a user chose (None: the tier is off). A model path is for the
    nli backend only (``flags``, the backend and model path options, name them in the error)."""
    _nli_only(name, model_path, flags)
    if name is None or name == "off":
        return None
    return make_backend(name, model_path=model_path, provider=provider)


def _nli_only(
    name: str | None, model_path: Path | None, flags: tuple[str, str] = _ENTAILMENT_FLAGS
) -> None:
    """A usage error for a model path given to any backend but nli."""
    if model_path is not None and name != "nli":
        raise InputError(f"{flags[1]} needs {flags[0]} nli")


@cli.command("verify")
@click.argument("sources", metavar="SOURCES")
@click.argument("answer", metavar="ANSWER")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="Output format of ANSWER.",
)
@click.option("--min-quote-words", type=int, help="Fewer words is quote_too_short (default 4).")
@click.option("--max-quote-words", type=int, help="More words is quote_too_long (default 40).")
@click.option("--allow-user-evidence", is_flag=True, help="Accept citations of kind=user sources.")
@click.option("--sentinel", "sentinels", multiple=True, help="An extra exact abstention string.")
@click.option(
    "--strict",
    is_flag=True,
    help="Drop a claim for a writing fault (claim_fragment); without it, a note on the claim.",
)
@_entailment_options(None)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify_cmd(
    sources: str,
    answer: str,
    fmt: str,
    min_quote_words: int | None,
    max_quote_words: int | None,
    allow_user_evidence: bool,
    sentinels: tuple[str, ...],
    strict: bool,
    entailment: str,
    entailment_model: Path | None,
    as_json: bool,
) -> int:
    """Check ANSWER (a file of raw model output, or - for stdin) against SOURCES (a JSON file).

    Exit 0 when every claim is kept or the answer abstained, 1 when anything was dropped,
    ungrounded or unparseable, 2 for usage or input errors.
    """
    policy = Policy.from_options(
        min_quote_words, max_quote_words, allow_user_evidence, sentinels, strict
    )
    ws = load_working_set(sources)
    verdict = verify(ws, _read_text(answer, "ANSWER"), fmt, policy)
    backend = make_entailment(entailment, entailment_model)
    if backend is not None:
        try:
            verdict = check_entailment(
                verdict, ws, backend, sentences=policy.sentences and policy.strict
            )
        finally:
            backend.close()
    _emit(as_json, verdict.to_dict(), _report(verdict))
    return EXIT_OK if verdict.status in ("grounded", "abstained") else EXIT_PROBLEMS


_store_option = click.option(
    "--store",
    "store_url",
    envvar="QUOTEBOUND_STORE",
    metavar="URL",
    help="sqlite:///PATH or postgresql://... (default: SQLite in $QUOTEBOUND_HOME).",
)


@cli.command("ingest")
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
@_store_option
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
    _emit(as_json, payload, "\n".join(lines))
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


_budget_option = click.option(
    "--budget",
    type=click.IntRange(1),
    default=DEFAULT_BUDGET_CHARS,
    show_default=True,
    help="Packing budget in characters.",
)


# ``ask``, ``search`` and ``serve``: the order the store's hits are packed in.
_rerank_option = click.option(
    "--rerank",
    type=click.Choice(RERANKS),
    default=DEFAULT_RERANK,
    show_default=True,
    help=f"Re-order BM25's first {RERANK_DEPTH} hits by fusing them with MiniLM's reading of "
    "the question before packing (dense), or keep BM25's order (off).",
)


# ``ask``, ``search`` and ``serve``: the chunks of the documents the question names first.
_named_option = click.option(
    "--named-first",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help=f"Put first, among the first {NAMED_DEPTH} hits, the chunks of the documents the "
    "question names by the words that set their names apart ('... for Northwind Health "
    "Plus?'), or not (off).",
)


@cli.command("search")
@click.argument("query")
@click.option("--corpus", "corpora", multiple=True, metavar="NAME", help="Search only NAME.")
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Read as GROUP.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@_budget_option
@_rerank_option
@_named_option
@_store_option
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
        lines.append(f"       {_shorten(hit.text, 96)}")
    _emit(as_json, payload, "\n".join(lines))
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


@cli.command("trace")
@click.argument("trace_id", metavar="ID")
@click.option(
    "--citation", "sid", metavar="SID", help="Show one sent source with its quotes marked."
)
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the trace as JSON.")
def trace_cmd(trace_id: str, sid: str | None, store_url: str | None, as_json: bool) -> int:
    """Print a stored trace, or (with --citation S2) one source exactly as it was sent."""
    with open_store(store_url) as store:
        trace = store.get_trace(trace_id)
    if sid is None:
        _emit(as_json, trace_dict(trace), _trace_report(trace))
        return EXIT_OK
    payload = source_view(trace, sid)
    source = sent_source(trace, sid)
    spans = payload["spans"]
    _emit(as_json, payload, _marked(source.text, spans, f"{sid} {source.key or ''}".strip()))
    return EXIT_OK


@cli.command("open")
@click.argument("trace_id", metavar="ID")
@click.option("--citation", "sid", required=True, metavar="SID", help="The sent source to open.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write it (default: quotebound-ID-SID.png or .html in this folder).",
)
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def open_cmd(
    trace_id: str, sid: str, out: Path | None, store_url: str | None, as_json: bool
) -> int:
    """Write a cited source's original with its verified quote highlighted: the PDF page as a
    PNG (every page the quote is on: -p2, -p3 after the name), anything else as an HTML page."""
    with open_store(store_url) as store:
        trace = store.get_trace(trace_id)
        source = sent_source(trace, sid)
        try:
            _, original = original_of(store, trace, sid)
        except NotFoundError:
            original = None  # no original kept: the text as sent, marked
    stem = out if out is not None else Path(f"quotebound-{trace.id}-{sid}")
    written: list[dict[str, Any]] = []
    if original is not None and original.media_type == "application/pdf":
        found = pdf_highlights(original.data, source.page, quotes_of(trace, source))
        if not found:
            raise NotFoundError(f"no verified quote of {sid} was found in its original PDF")
        for n, page in enumerate(found):
            path = (
                stem.with_suffix(".png")
                if n == 0
                else stem.with_name(f"{stem.with_suffix('').name}-p{page.page}.png")
            )
            path.write_bytes(render_page(original.data, page))
            boxes = [list(b) for b in page.boxes]
            written.append({"path": str(path), "page": page.page, "boxes": boxes})
    else:
        path = stem.with_suffix(".html")
        with open_store(store_url) as store:  # the whole document at the version sent, marked
            path.write_text(document_page(store, trace, sid), encoding="utf-8")
        written.append({"path": str(path), "page": None, "boxes": []})
    kind = original.media_type if original is not None else None
    payload = {"trace": trace.id, "source": sid, "original": kind, "files": written}
    lines = [f"wrote {w['path']}" + (f" (page {w['page']})" if w["page"] else "") for w in written]
    _emit(as_json, payload, "\n".join(lines))
    return EXIT_OK


def _marked(text: str, spans: list[list[int]], label: str) -> str:
    """The text with each verified span between >>> and <<<."""
    out, at = [], 0
    for start, end in spans:
        if start < at:
            continue
        out += [text[at:start], ">>>", text[start:end], "<<<"]
        at = end
    out.append(text[at:])
    return f"{label}\n" + "".join(out)


def _trace_report(trace: TraceRecord) -> str:
    lines = [
        f"trace {trace.id}  {trace.created_at}  model {trace.model or '-'}  "
        f"status {trace.status or '-'}",
        f"question: {trace.question}",
        f"sources sent ({len(trace.sources)}):",
    ]
    for src in trace.sources:
        page = f" p.{src.page}" if src.page else ""
        lines.append(f"  {src.id:<4} {src.key or '-'}{page}  {_shorten(src.text, 70)}")
    for n, attempt in enumerate(trace.attempts, 1):
        status = Verdict.from_dict(attempt.verdict).status if attempt.verdict else "-"
        said = f"provider error: {attempt.error}" if attempt.error else attempt.output
        lines.append(f"attempt {n}: {status}  {_shorten(said, 70)}")
    for check in trace.answer_checks:
        said = "answers" if check.get("label") == "supported" else "does not answer"
        why = check.get("error") or check.get("detail")
        lines.append(
            f"answer check of attempt {check.get('attempt', '-')}: {said} "
            f"({check.get('backend', '-')}, {check.get('score')})" + (f"  {why}" if why else "")
        )
    if trace.counts:
        lines.append("counts: " + ", ".join(f"{k} {v}" for k, v in trace.counts.items()))
    return "\n".join(lines)


def _provider_options(command: Any) -> Any:
    """--provider, --model, --model-path, --base-url, --api-key: who writes answers."""
    options = [
        click.option(
            "--provider",
            type=click.Choice(PROVIDER_NAMES),
            default=DEFAULT_PROVIDER,
            show_default=True,
            help="Who writes the answers.",
        ),
        click.option("--model", help="The model: an API model name, or a bundled local model."),
        click.option(
            "--model-path",
            type=click.Path(path_type=Path, dir_okay=False),
            help="A GGUF file for the local provider.",
        ),
        click.option(
            "--base-url", metavar="URL", help="The API base URL (OpenAI-compatible servers)."
        ),
        click.option(
            "--api-key", metavar="KEY", help="The model API key (default: from the environment)."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


# ``ask`` and ``serve``: the documents' own sentences when an answer would be an abstention.
_fallback_option = click.option(
    "--fallback",
    type=click.Choice(FALLBACKS),
    default=DEFAULT_FALLBACK,
    show_default=True,
    help="When the answer would be an abstention, serve the documents' own sentences that the "
    "fast answer check scores as answering (beside the judge's: those covering the question), "
    "if they pass verification and the check (extractive); those covering the question's words "
    "best (covering: more answers, more of them wrong); or none (off). Never with "
    "--answer-check off.",
)


@cli.command("ask")
@click.argument("question")
@click.option("--corpus", "corpora", multiple=True, metavar="NAME", help="Search only NAME.")
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Read as GROUP.")
@_provider_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "inline", "evidence"]),
    default="json",
    show_default=True,
    help="The output contract.",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 200),
    default=20,
    show_default=True,
    help="Chunks to retrieve before packing.",
)
@_budget_option
@_entailment_options(DEFAULT_TIER)
@_fallback_option
@_rerank_option
@_named_option
@click.option(
    "--answer-check",
    type=click.Choice(ANSWER_CHECKS),
    default=DEFAULT_ANSWER_CHECK,
    show_default=True,
    help="Check that the verified quotes answer the question (an answer they do not is an "
    "abstention): fast (MiniLM and fitted features), judge (the 1.5B judge model; 'on' is the "
    "same), both (the mean of the two: fewer wrong decisions, a judge call an answer), auto "
    "(both when the answering model is the packaged 1.5B, else fast), off.",
)
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
def ask_cmd(
    question: str,
    corpora: tuple[str, ...],
    groups: tuple[str, ...],
    provider: str,
    model: str | None,
    model_path: Path | None,
    base_url: str | None,
    api_key: str | None,
    fmt: str,
    limit: int,
    budget: int,
    entailment: str,
    entailment_model: Path | None,
    fallback: str,
    rerank: str,
    named_first: str,
    answer_check: str,
    store_url: str | None,
    as_json: bool,
) -> int:
    """Answer QUESTION from the store's documents: every claim cited, quoted and verified,
    repaired once or dropped, or a helpful abstention; the whole exchange is traced."""
    _nli_only(entailment, entailment_model)
    chosen = make_provider(
        provider, model, base_url=base_url, api_key=api_key, model_path=model_path
    )
    made = defaults(
        chosen,
        entailment=entailment,
        nli_model=entailment_model,
        answer_check=answer_check,
        rerank=rerank,
        fallback=fallback,
        may_skip=skip_unchosen,
    )
    with made:
        options = made.options(
            corpora=list(corpora) or None,
            groups=groups,
            format=fmt,
            limit=limit,
            budget_chars=budget,
            named_first=named_first == "on",
        )
        with open_store(store_url) as store:
            answer = ask(question, store, made.provider, options)
    _emit(as_json, answer.to_dict(), _answer_report(answer))
    return EXIT_PROBLEMS if answer.status == "provider_error" else EXIT_OK


def skip_unchosen(part: Part, name: str, exc: EntailmentError) -> bool:
    """``may_skip`` of ``quotebound.defaults`` on the command line: a part the user did not
    choose (its option left at its default) is skipped on a light install (no
    ``quotebound[entail]``), with a warning; one the user named is not."""
    source = click.get_current_context().get_parameter_source(part)
    if source is not click.core.ParameterSource.DEFAULT:
        return False
    what = {"entailment": "entailment tier", "rerank": "reranker"}.get(part, "answer check")
    flag = part.replace("_", "-")
    click.echo(f"warning: the {name} {what} is off: {exc} (or pass --{flag} off)", err=True)
    return True


def _answer_report(answer: Answer) -> str:
    lines: list[str] = []
    if answer.claims:
        if answer.counts.get("fallback_attempt"):
            lines.append("The model's answer was not served; the documents' own sentences:")
        for claim in answer.claims:
            marks = "".join(f"[{n}]" for n in claim.cards)
            lines.append(f"{' '.join(claim.text.split())} {marks}".rstrip())
        if answer.unaddressed:
            lines.append(f"Not answered by a verified claim: {describe(answer.unaddressed)}.")
        for c in answer.conflicts:
            dated = f", updated {c.updated}" if c.updated else ""
            lines.append(
                f"Check which applies: {c.source} ({c.label}{dated}), not cited, gives other "
                f'figures than claim {c.claim}: "{_shorten(c.sentence, 120)}"'
            )
        lines.append("")
        for card in answer.cards:
            dated = f", updated {card.updated}" if card.updated else ""
            lines.append(f"[{card.number}] {card.label} ({card.document}{dated})")
            for q in card.quotes:
                page = f" p.{q.page}" if q.page else ""
                link = f"  {q.link}" if q.link else ""
                lines.append(f'    {q.source}{page} "{_shorten(q.text, 80)}"{link}')
    elif answer.abstention is not None:
        a = answer.abstention
        lines += [
            "Not answered from the documents.",
            f"  asked:     {a.question}",
            f"  searched:  {', '.join(a.searched) if a.searched else '(nothing matched)'}",
            f"  missing:   {a.missing}",
            f"  next step: {a.next_step}",
        ]
    lines.append("")
    lines.append(
        f"status {answer.status} | repaired {'yes' if answer.repaired else 'no'} | "
        f"model {answer.model} | trace {answer.trace_id}"
    )
    return "\n".join(lines)


@cli.command("check-support")
@click.argument("claim")
@click.option("--quote", required=True, help="The quote (or passage) offered as evidence.")
@click.option(
    "--backend",
    "backend_name",
    type=_ENTAILMENT_CHOICES,
    default=DEFAULT_TIER,
    show_default=True,
    help="The entailment backend (judge and cascade run on --provider's model).",
)
@click.option(
    "--nli-model",
    "nli_model",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="The local model directory of --backend nli.",
)
@_provider_options
@click.option("--json", "as_json", is_flag=True, help="Print the judgement as JSON.")
def check_support_cmd(
    claim: str,
    quote: str,
    backend_name: str,
    nli_model: Path | None,
    provider: str,
    model: str | None,
    model_path: Path | None,
    base_url: str | None,
    api_key: str | None,
    as_json: bool,
) -> int:
    """Does QUOTE support CLAIM? One pair through one entailment backend (the judge runs on
    --provider: the embedded local model by default). Exit 0 when it is supported, 1 when it is
    contradicted, unrelated or could not be checked."""
    if not claim.strip() or not quote.strip():
        raise InputError("CLAIM and --quote must both have text")
    judge = None
    if backend_name in ("judge", "cascade") and (provider != "local" or model or model_path):
        judge = make_provider(
            provider, model, base_url=base_url, api_key=api_key, model_path=model_path
        )
    backend = None
    try:
        backend = make_entailment(backend_name, nli_model, judge, ("--backend", "--nli-model"))
        judgement = backend.judge(claim, quote)
    finally:
        close_together(backend, judge)
    why = f"\n{judgement.detail}" if judgement.detail else ""
    err = f"\nerror: {judgement.error}" if judgement.error else ""
    human = f"{judgement.label} (score {judgement.score:.2f}, {judgement.version}){why}{err}"
    _emit(as_json, judgement.to_dict(), human)
    return EXIT_OK if judgement.supported else EXIT_PROBLEMS


def _register_eval() -> None:
    from ..evaluation.command import eval_cmd, sample_cmd

    cli.add_command(eval_cmd, "eval")
    cli.add_command(sample_cmd, "sample")


_register_eval()
from . import admin  # noqa: E402, F401  (its commands register on import: store and service)


def _fail(message: str, code: str, as_json: bool) -> NoReturn:
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}}))
    else:
        click.echo(terminal_safe(f"quotebound: error: {message}"), err=True)
    sys.exit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point: run the CLI and turn every expected failure into a one-line message."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        result = cli.main(args=args, prog_name="quotebound", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(EXIT_USAGE)
    except click.UsageError as exc:
        _fail(" ".join(exc.format_message().split()), "usage", as_json)
    except QuoteboundError as exc:
        _fail(str(exc), exc.code, as_json)
    except click.exceptions.Abort:
        click.echo("quotebound: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(result if isinstance(result, int) else EXIT_OK)
