"""The command line: parse, call the library, map errors to exit codes (here and only here).

Exit codes (docs/cli.md):
    0  success: every claim kept, or the answer abstained
    1  the check ran and found problems: a claim dropped, ungrounded or unparseable output
    2  usage or input error (bad option, missing file, malformed SOURCES JSON)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from . import __version__
from .errors import InputError, QuoteboundError
from .parsing import FORMATS
from .sources import WorkingSet
from .verify import Policy, Verdict, verify

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _read_text(path: str, what: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{what} is a directory, not a file: {path}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} file {path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} file {path}: {exc.strerror}") from None


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
    if isinstance(data, dict) and "sources" in data:
        data = data["sources"]
    if not isinstance(data, list):
        raise InputError(f"SOURCES file {path} must hold a JSON list of sources")
    return WorkingSet.from_dicts(data)


def _report(verdict: Verdict) -> str:
    """A readable report of a verdict."""
    kept, total = len(verdict.kept_claims), len(verdict.claims)
    head = f"status: {verdict.status}"
    if verdict.status in ("grounded", "partial", "ungrounded"):
        head += f" ({kept} of {total} claims kept)"
    lines = [f"{head}  [format {verdict.format}]"]
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
        for c in claim.citations:
            where = f" at [{c.span[0]}:{c.span[1]})" if c.span else ""
            quote = f' "{_shorten(c.quote)}"' if c.quote else ""
            state = "ok" if c.valid else f"{c.reason} ({c.message})"
            lines.append(f"       - {c.source or c.ref}{where}{quote}: {state}")
    return "\n".join(lines)


def _shorten(text: str, limit: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _emit(as_json: bool, payload: dict[str, Any], human: str) -> None:
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        click.echo(human)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="quotebound")
def cli() -> None:
    """quotebound: make answers from documents auditable."""


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
@click.option("--min-quote-words", type=int, default=4, show_default=True)
@click.option("--max-quote-words", type=int, default=40, show_default=True)
@click.option("--allow-user-evidence", is_flag=True, help="Accept citations of kind=user sources.")
@click.option("--sentinel", "sentinels", multiple=True, help="An extra exact abstention string.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify_cmd(
    sources: str,
    answer: str,
    fmt: str,
    min_quote_words: int,
    max_quote_words: int,
    allow_user_evidence: bool,
    sentinels: tuple[str, ...],
    as_json: bool,
) -> int:
    """Check ANSWER (a file of raw model output, or - for stdin) against SOURCES (a JSON file).

    Exit 0 when every claim is kept or the answer abstained, 1 when anything was dropped,
    ungrounded or unparseable, 2 for usage or input errors.
    """
    policy = Policy(min_quote_words, max_quote_words, allow_user_evidence)
    for sentinel in sentinels:
        policy = policy.with_sentinel(sentinel)
    ws = load_working_set(sources)
    verdict = verify(ws, _read_text(answer, "ANSWER"), fmt, policy)
    _emit(as_json, verdict.to_dict(), _report(verdict))
    return EXIT_OK if verdict.status in ("grounded", "abstained") else EXIT_PROBLEMS


def _fail(message: str, code: str, as_json: bool) -> NoReturn:
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}}))
    else:
        click.echo(f"quotebound: error: {message}", err=True)
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
