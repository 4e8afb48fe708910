"""The commands that run and look after a service: ``serve``, ``keys``, ``check``, ``backup``.

Registered on the ``cli`` group when ``quotebound.cli`` is imported; they use its helpers
(``_emit``, the store and provider options) and exit codes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..budget import Budget
from ..entailment import BACKENDS, DEFAULT_TIER, make_backend
from ..entailment.base import Backend
from ..errors import InputError
from ..store import open_store
from . import EXIT_OK, EXIT_PROBLEMS, _emit, _provider_options, _store_option, cli, made_tier


@cli.command("check")
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check_cmd(store_url: str | None, as_json: bool) -> int:
    """Check a store's integrity: every stored text hashes to its key, every reference
    resolves, every chunk is its document's text, every trace reopens, and (SQLite) the file
    and the full-text index are sound. Exit 0 sound, 1 problems found."""
    with open_store(store_url) as store:
        report = store.check()
        url = store.url
    payload = {"store": url, **report.to_dict()}
    _emit(as_json, payload, _check_report(url, report.counts, report.problems))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _check_report(url: str, counts: dict[str, int], problems: list[str]) -> str:
    read = ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in counts.items())
    head = f"{url}: {'sound' if not problems else f'{len(problems)} problem(s)'} ({read})"
    return "\n".join([head, *(f"  - {p}" for p in problems)])


@cli.command("backup")
@click.argument("dest", type=click.Path(path_type=Path, dir_okay=False))
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def backup_cmd(dest: Path, store_url: str | None, as_json: bool) -> int:
    """Back the store up to DEST while it stays in use (SQLite's online backup; pg_dump's
    custom format for PostgreSQL), then verify the copy. Exit 0 verified, 1 the copy failed
    its check, 2 the backup could not be made (DEST exists, no pg_dump...)."""
    if dest.exists():
        raise InputError(f"{dest} exists: a backup never overwrites; choose a new file")
    with open_store(store_url) as store:
        result = store.backup(dest)
    report = result.report
    lines = [f"backed up {result.source} to {dest} ({result.size:,} bytes, {result.kind})"]
    if report is not None:
        lines.append(_check_report(str(dest), report.counts, report.problems))
    else:
        lines.append(f"the archive lists {result.entries} entries; to restore: docs/corpus.md")
    _emit(as_json, result.to_dict(), "\n".join(lines))
    return EXIT_OK if report is None or report.ok else EXIT_PROBLEMS


_BUDGET = Budget()  # the defaults of the serve options


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@_provider_options
@click.option(
    "--max-body",
    type=click.IntRange(1024),
    default=1 << 20,
    show_default=True,
    help="The largest request body accepted, in bytes.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes over the one store: a slow request holds one, not the service.",
)
@click.option(
    "--max-claims",
    type=click.IntRange(1),
    default=_BUDGET.max_claims,
    show_default=True,
    help="Claims one /v1/verify may check.",
)
@click.option(
    "--max-citations",
    type=click.IntRange(1),
    default=_BUDGET.max_citations,
    show_default=True,
    help="Citations one /v1/verify may check.",
)
@click.option(
    "--max-claim-chars",
    type=click.IntRange(1),
    default=_BUDGET.max_claim_chars,
    show_default=True,
    help="Characters of one claim.",
)
@click.option(
    "--verify-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=_BUDGET.seconds,
    show_default=True,
    help="Wall time one verification may take.",
)
@click.option(
    "--entailment",
    type=click.Choice([b for b in BACKENDS if b != "nli"] + ["off"]),
    default=DEFAULT_TIER,
    show_default=True,
    help="The entailment tier every answer runs (as for ask); off to skip it.",
)
@_store_option
def serve_cmd(
    host: str,
    port: int,
    provider: str,
    model: str | None,
    model_path: Path | None,
    base_url: str | None,
    api_key: str | None,
    max_body: int,
    workers: int,
    max_claims: int,
    max_citations: int,
    max_claim_chars: int,
    verify_seconds: float,
    entailment: str,
    store_url: str | None,
) -> int:
    """Run the HTTP service and the web page (Ctrl-C stops it). Callers need an API key
    from `quotebound keys create`. The provider is made (the local model loaded) first."""
    import uvicorn

    from ..server.workers import ServeOptions, serve

    with open_store(store_url) as store:  # fail here, with a clear message, not per request
        live = [k for k in store.list_keys() if k.revoked_at is None]
    if not live:
        click.echo("note: no API keys yet; create one with: quotebound keys create", err=True)
    budget = Budget(max_claims, max_citations, max_claim_chars, verify_seconds)
    options = ServeOptions(
        store_url,
        max_body,
        provider,
        model,
        str(model_path) if model_path else None,
        base_url,
        api_key,
        dataclasses.asdict(budget),
        entailment,
    )
    # Made now, so a missing model file or API key is a clear exit 2 here, not a 503 later.
    tier = _serve_tier(entailment)
    if tier is None:
        options = dataclasses.replace(options, entailment="off")
    made = options.make_provider()
    click.echo(
        f"quotebound serving on http://{host}:{port}/ with {workers} worker(s) (Ctrl-C stops)",
        err=True,
    )
    if workers == 1:
        from ..server import create_app

        app = create_app(options.config(made, tier))
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        made.close()  # (each worker makes its own: the supervisor answers nothing)
        if tier is not None:
            tier.close()
        serve(options, host, port, workers)
    return EXIT_OK


def _serve_tier(name: str) -> Backend | None:
    """The entailment backend ``serve`` was asked for, made now (a missing extra is a clear
    exit 2 here, not a 503 later)."""
    return None if name == "off" else made_tier(name, lambda: make_backend(name))
