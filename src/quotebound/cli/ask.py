"""The commands of answering and of reading an answer back: ``ask`` (a question answered from
the store, every claim verified), ``trace`` (a stored exchange, or one source as it was sent)
and ``open`` (a cited source's original with its quote highlighted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..choices import ANSWER_CHECKS, DEFAULT_TIER
from ..coverage import describe
from ..defaults import defaults
from ..errors import NotFoundError
from ..originals import document_page, original_of, pdf_highlights, quotes_of, render_page
from ..parsing import PROMPT_FORMATS
from ..pipeline import Answer, ask
from ..providers import make_provider
from ..store import TraceRecord, open_store
from ..traceview import sent_source, source_view, trace_dict
from ..verdict import Verdict
from .options import (
    EXIT_OK,
    EXIT_PROBLEMS,
    answer_check_option,
    budget_option,
    emit,
    entailment_options,
    fallback_option,
    named_option,
    nli_only,
    provider_options,
    rerank_option,
    shorten,
    skip_unchosen,
    store_option,
)


@click.command("ask")
@click.argument("question")
@click.option("--corpus", "corpora", multiple=True, metavar="NAME", help="Search only NAME.")
@click.option("--acl", "groups", multiple=True, metavar="GROUP", help="Read as GROUP.")
@provider_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(PROMPT_FORMATS),
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
@budget_option
@entailment_options(DEFAULT_TIER)
@fallback_option
@rerank_option
@named_option
@answer_check_option(
    ANSWER_CHECKS,
    "Check that the verified quotes answer the question (an answer they do not is an "
    "abstention): fast (MiniLM and fitted features), judge (the 1.5B judge model; 'on' is the "
    "same), both (the mean of the two: fewer wrong decisions, a judge call an answer), auto "
    "(both when the answering model is the packaged 1.5B, else fast), off.",
)
@store_option
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
    nli_only(entailment, entailment_model)
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
    emit(as_json, answer.to_dict(), answer_report(answer))
    return EXIT_PROBLEMS if answer.status == "provider_error" else EXIT_OK


def answer_report(answer: Answer) -> str:
    """A readable answer: its claims with their card numbers, or the abstention, then the
    cards, then one status line."""
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
                f'figures than claim {c.claim}: "{shorten(c.sentence, 120)}"'
            )
        lines.append("")
        for card in answer.cards:
            dated = f", updated {card.updated}" if card.updated else ""
            lines.append(f"[{card.number}] {card.label} ({card.document}{dated})")
            for q in card.quotes:
                page = f" p.{q.page}" if q.page else ""
                link = f"  {q.link}" if q.link else ""
                lines.append(f'    {q.source}{page} "{shorten(q.text, 80)}"{link}')
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


@click.command("trace")
@click.argument("trace_id", metavar="ID")
@click.option(
    "--citation", "sid", metavar="SID", help="Show one sent source with its quotes marked."
)
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the trace as JSON.")
def trace_cmd(trace_id: str, sid: str | None, store_url: str | None, as_json: bool) -> int:
    """Print a stored trace, or (with --citation S2) one source exactly as it was sent."""
    with open_store(store_url) as store:
        trace = store.get_trace(trace_id)
    if sid is None:
        emit(as_json, trace_dict(trace), trace_report(trace))
        return EXIT_OK
    payload = source_view(trace, sid)
    source = sent_source(trace, sid)
    spans = payload["spans"]
    emit(as_json, payload, _marked(source.text, spans, f"{sid} {source.key or ''}".strip()))
    return EXIT_OK


@click.command("open")
@click.argument("trace_id", metavar="ID")
@click.option("--citation", "sid", required=True, metavar="SID", help="The sent source to open.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write it (default: quotebound-ID-SID.png or .html in this folder).",
)
@store_option
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
    emit(as_json, payload, "\n".join(lines))
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


def trace_report(trace: TraceRecord) -> str:
    """A readable trace: the question, the sources sent, each attempt and answer check."""
    lines = [
        f"trace {trace.id}  {trace.created_at}  model {trace.model or '-'}  "
        f"status {trace.status or '-'}",
        f"question: {trace.question}",
        f"sources sent ({len(trace.sources)}):",
    ]
    for src in trace.sources:
        page = f" p.{src.page}" if src.page else ""
        lines.append(f"  {src.id:<4} {src.key or '-'}{page}  {shorten(src.text, 70)}")
    for n, attempt in enumerate(trace.attempts, 1):
        status = Verdict.from_dict(attempt.verdict).status if attempt.verdict else "-"
        said = f"provider error: {attempt.error}" if attempt.error else attempt.output
        lines.append(f"attempt {n}: {status}  {shorten(said, 70)}")
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
