"""The commands that run and look after a service: ``serve``, ``keys``, ``check``, ``backup``.

Registered on the ``cli`` group by ``quotebound.cli``; they use the shared options, output and
exit codes of ``quotebound.cli.options``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import click

from ..answering.check import chosen_check, judges_itself
from ..budget import Budget
from ..choices import ANSWER_CHECKS, BACKENDS, DEFAULT_TIER
from ..defaults import Part, make_tier, optional
from ..entailment import ensure_installed
from ..entailment.base import Backend
from ..entailment.judge import JUDGE_MODEL
from ..errors import InputError, NotFoundError
from ..providers import PROVIDER_NAMES, Provider
from ..store import ApiKey, open_store
from .options import (
    EXIT_OK,
    EXIT_PROBLEMS,
    answer_check_option,
    emit,
    fallback_option,
    named_option,
    provider_options,
    rerank_option,
    skip_unchosen,
    store_option,
)

# ``serve --answer-check``: the checks of ``ask`` but the judge alone (``on``: its older
# name), which the service does not run (``both`` judges on the served model).
SERVED_ANSWER_CHECKS = tuple(c for c in ANSWER_CHECKS if c not in ("judge", "on"))


@click.command("check")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check_cmd(store_url: str | None, as_json: bool) -> int:
    """Check a store's integrity: every stored text hashes to its key, every reference
    resolves, every chunk is its document's text, every trace reopens, and (SQLite) the file
    and the full-text index are sound. Exit 0 sound, 1 problems found."""
    with open_store(store_url) as store:
        report = store.check()
        url = store.url
    payload = {"store": url, **report.to_dict()}
    emit(as_json, payload, _check_report(url, report.counts, report.problems))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _check_report(url: str, counts: dict[str, int], problems: list[str]) -> str:
    read = ", ".join(f"{n} {what.replace('_', ' ')}" for what, n in counts.items())
    head = f"{url}: {'sound' if not problems else f'{len(problems)} problem(s)'} ({read})"
    return "\n".join([head, *(f"  - {p}" for p in problems)])


@click.command("backup")
@click.argument("dest", type=click.Path(path_type=Path, dir_okay=False))
@store_option
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
    emit(as_json, result.to_dict(), "\n".join(lines))
    return EXIT_OK if report is None or report.ok else EXIT_PROBLEMS


_BUDGET = Budget()  # the defaults of the serve options


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@provider_options
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
@answer_check_option(
    SERVED_ANSWER_CHECKS,
    "Check that each answer's verified quotes answer the question (as for ask); an "
    "answer they do not is an abstention. auto: both beside the packaged 1.5B, else fast; "
    "both judges on the served model (the 1.5B, or an API model with log-probabilities).",
)
@fallback_option
@rerank_option
@named_option
@click.option(
    "--public-url",
    metavar="URL",
    help="The service's address as users reach it (https://qb.example.com): links in chat "
    "replies are written with it (default: the address each request came to).",
)
@click.option(
    "--link-days",
    type=click.FloatRange(min=0.01),
    default=30.0,
    show_default=True,
    help="How long a signed link to a cited source opens without a key.",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    metavar="NAME=PROVIDER[:MODEL][@URL]",
    help="One more model POST /v1/messages answers with when a request names NAME (repeat): "
    "claude=anthropic:claude-sonnet-4-5, vllm=openai:qwen2.5-7b@http://127.0.0.1:8001/v1; "
    "its API key from the environment.",
)
@store_option
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
    answer_check: str,
    fallback: str,
    rerank: str,
    named_first: str,
    public_url: str | None,
    link_days: float,
    backends: tuple[str, ...],
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
    made = options.make_provider()
    try:
        runs, tier = _serve_tier(entailment, workers)
    except BaseException:
        made.close()
        raise
    check = chosen_check(answer_check, made)  # auto: both beside the packaged 1.5B, else fast
    if check == "both" and not _judges_for_serve(made):
        made.close()
        raise InputError(
            "--answer-check both judges on the served model: it needs the packaged "
            f"{JUDGE_MODEL} or an API model that returns log-probabilities, not "
            f"{made.name} ({made.model}); use --answer-check fast"
        )
    if check != "off" and not _installed("answer_check", check, "fast"):
        check = "off"
    if rerank != "off" and not _installed("rerank", rerank, "fast"):
        rerank = "off"
    options = dataclasses.replace(
        options,
        entailment=runs,
        answer_check=check,
        fallback=fallback,
        rerank=rerank,
        named_first=named_first == "on",
        public_url=public_url,
        link_days=link_days,
    )
    if public_url is not None and not public_url.startswith(("http://", "https://")):
        made.close()
        raise InputError(f"--public-url must start with http:// or https://, got {public_url!r}")
    try:
        options = dataclasses.replace(options, backends=_backends(backends, made))
        for name, *_ in options.backends:  # made now: a local model that is not there is exit 2
            options.make_backend(str(name)).close()
    except BaseException:
        made.close()
        raise
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
        serve(options, host, port, workers)
    return EXIT_OK


_BACKEND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,63}")


def _backends(given: tuple[str, ...], made: Provider) -> list[list[str | None]]:
    """``--backend NAME=PROVIDER[:MODEL][@URL]`` read: [name, provider, model, base URL]. A
    name must be new (not the served model's names, not given twice), the provider one of
    quotebound's, an API provider given its model, and a URL only for an API provider. A
    model may hold ``:`` and ``@`` ("qwen2.5:7b", "claude-x@20250929"): the URL is what
    follows the last ``@http``."""
    taken = {f"quotebound-{made.name}", made.model}
    out: list[list[str | None]] = []
    for text in given:
        name, eq, rest = text.partition("=")
        at = max(rest.rfind("@http://"), rest.rfind("@https://"))
        rest, url = (rest[:at], rest[at + 1 :]) if at >= 0 else (rest, "")
        provider, _, model = rest.partition(":")
        if not eq or not _BACKEND_NAME.fullmatch(name) or not provider:
            raise InputError(f"--backend {text!r}: write NAME=PROVIDER[:MODEL][@URL]")
        if provider not in PROVIDER_NAMES:
            raise InputError(
                f"--backend {text!r}: unknown provider {provider!r}; one of "
                + ", ".join(PROVIDER_NAMES)
            )
        if name in taken:
            raise InputError(f"--backend {text!r}: the name {name!r} is already served")
        api = provider in ("openai", "anthropic")
        if api and not model:
            raise InputError(f"--backend {text!r}: name the model: {name}={provider}:MODEL")
        if url and not api:
            raise InputError(f"--backend {text!r}: a URL is for the openai or anthropic provider")
        if "@" in rest.partition(":")[2] and not url and "://" in text:
            raise InputError(f"--backend {text!r}: the URL must start with http:// or https://")
        taken.add(name)
        out.append([name, provider, model or None, url or None])
    return out


def _judges_for_serve(made: Provider) -> bool:
    """Whether the judge can run on the served model (no second model is loaded for it)."""
    own = judges_itself(made) or (made.name != "local" and made.capabilities.generates)
    return own and made.capabilities.logprobs


def _serve_tier(name: str, workers: int) -> tuple[str, Backend | None]:
    """The tier the service runs, and its backend when one process serves: made now, so a
    missing extra is a clear exit 2 here, not a 503 later. With several workers each makes
    its own on its first ask, and the supervisor only checks that what they load is
    installed (it loads no model it would not use)."""
    if name == "off":
        return "off", None
    if workers == 1:
        tier = make_tier(name, may_skip=skip_unchosen)  # (its judge: the packaged judge model)
        return (name if tier is not None else "off"), tier
    return (name if _installed("entailment", name, name) else "off"), None


def _installed(part: Part, name: str, backend: str) -> bool:
    """Whether what ``backend`` loads is installed (loading nothing); False where it is not,
    on a light install, and the user did not choose ``part`` (a warning says so)."""
    return bool(optional(part, name, lambda: ensure_installed(backend), skip_unchosen))


@click.group("keys")
def keys_group() -> None:
    """API keys of the HTTP service: each bound to ACL groups, owning its traces."""


@keys_group.command("create")
@click.option(
    "--acl",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="The key reads GROUP's documents (repeat; none: public only).",
)
@click.option("--name", help="A label for the key (who or what uses it).")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the key as JSON.")
def keys_create_cmd(
    groups: tuple[str, ...], name: str | None, store_url: str | None, as_json: bool
) -> int:
    """Create an API key. The secret is printed once and stored only as its sha256."""
    with open_store(store_url) as store:
        key, secret = store.create_key(groups, name)
    payload = {**_key_dict(key), "secret": secret}
    human = (
        f"{secret}\n\nkey {key.id}{f' ({name})' if name else ''} reads: "
        f"{', '.join(key.groups) or 'public documents only'}\n"
        "Keep the secret: it is shown only now. Send it as Authorization: Bearer SECRET."
    )
    emit(as_json, payload, human)
    return EXIT_OK


@keys_group.command("list")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the keys as JSON.")
def keys_list_cmd(store_url: str | None, as_json: bool) -> int:
    """List API keys (never their secrets)."""
    with open_store(store_url) as store:
        keys = store.list_keys()
    lines = [
        f"{k.id}  {'revoked ' + k.revoked_at if k.revoked_at else 'live':<32} "
        f"{', '.join(k.groups) or '(public only)':<24} {k.name or ''}".rstrip()
        for k in keys
    ]
    emit(as_json, {"keys": [_key_dict(k) for k in keys]}, "\n".join(lines) or "no keys")
    return EXIT_OK


@keys_group.command("revoke")
@click.argument("key_id", metavar="ID")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def keys_revoke_cmd(key_id: str, store_url: str | None, as_json: bool) -> int:
    """Revoke the key ID: it stops working at once; its traces stay."""
    with open_store(store_url) as store:
        if not store.revoke_key(key_id):
            raise NotFoundError(f"no live key {key_id!r} (see: quotebound keys list)")
    emit(as_json, {"id": key_id, "revoked": True}, f"revoked {key_id}")
    return EXIT_OK


def _key_dict(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "groups": list(key.groups),
        "created_at": key.created_at,
        "revoked_at": key.revoked_at,
    }
