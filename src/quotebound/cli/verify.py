"""The commands that check text given on the command line, with no store: ``verify`` (raw
model output against a SOURCES file) and ``check-support`` (one claim and quote through one
entailment backend)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..choices import BACKENDS, DEFAULT_TIER
from ..entailment import close_together
from ..entailment.tier import check_entailment
from ..errors import InputError
from ..parsing import FORMATS
from ..providers import make_provider
from ..sources import WorkingSet
from ..verdict import Policy, Verdict
from ..verify import verify
from .options import (
    EXIT_OK,
    EXIT_PROBLEMS,
    emit,
    entailment_options,
    make_entailment,
    provider_options,
    read_text,
    shorten,
)


def load_working_set(path: str) -> WorkingSet:
    """A WorkingSet from a JSON file: a list of Source objects, or {"sources": [...]}."""
    text = read_text(path, "SOURCES")
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


@click.command("verify")
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
@entailment_options(None)
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
    verdict = verify(ws, read_text(answer, "ANSWER"), fmt, policy)
    backend = make_entailment(entailment, entailment_model)
    if backend is not None:
        try:
            verdict = check_entailment(
                verdict, ws, backend, sentences=policy.sentences and policy.strict
            )
        finally:
            backend.close()
    emit(as_json, verdict.to_dict(), verdict_report(verdict))
    return EXIT_OK if verdict.status in ("grounded", "abstained") else EXIT_PROBLEMS


def verdict_report(verdict: Verdict) -> str:
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
            quote = f' "{shorten(c.quote)}"' if c.quote else ""
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


@click.command("check-support")
@click.argument("claim")
@click.option("--quote", required=True, help="The quote (or passage) offered as evidence.")
@click.option(
    "--backend",
    "backend_name",
    type=click.Choice(list(BACKENDS)),
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
@provider_options
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
    emit(as_json, judgement.to_dict(), human)
    return EXIT_OK if judgement.supported else EXIT_PROBLEMS
