"""What the command modules share: the exit codes, the options several commands take, emitting
a result as JSON or for a reader, reading an input file, and mapping errors to exit codes.

Every name here is public: the command modules (``verify``, ``corpus``, ``ask``, ``admin``)
import from this module only, never a private name of one another.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, overload

import click

from ..answering.rerank import RERANK_DEPTH
from ..choices import (
    BACKENDS,
    DEFAULT_ANSWER_CHECK,
    DEFAULT_FALLBACK,
    DEFAULT_RERANK,
    FALLBACKS,
    RERANKS,
)
from ..defaults import DEFAULT_PROVIDER, Part
from ..entailment import make_backend
from ..entailment.base import Backend, EntailmentError
from ..errors import InputError, QuoteboundError, unreadable
from ..packing import DEFAULT_BUDGET_CHARS
from ..pipeline import NAMED_DEPTH
from ..providers import PROVIDER_NAMES, Provider
from ..text.display import terminal_safe

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def read_text(path: str, what: str) -> str:
    """The text of the file ``path`` (``-``: stdin); ``what`` names it in the error."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(what, path, exc) from None


def shorten(text: str, limit: int = 72) -> str:
    """``text`` on one line, cut to ``limit`` characters (ending ``...`` where cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def emit(as_json: bool, payload: dict[str, Any], human: str) -> None:
    """Print a command's result: ``payload`` as JSON, or ``human`` made safe for a terminal."""
    if as_json:
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        click.echo(terminal_safe(human))


# -- options several commands take --------------------------------------------------------

store_option = click.option(
    "--store",
    "store_url",
    envvar="QUOTEBOUND_STORE",
    metavar="URL",
    help="sqlite:///PATH or postgresql://... (default: SQLite in $QUOTEBOUND_HOME).",
)


# ``ask`` and ``search``: how many characters of chunks are packed.
budget_option = click.option(
    "--budget",
    type=click.IntRange(1),
    default=DEFAULT_BUDGET_CHARS,
    show_default=True,
    help="Packing budget in characters.",
)


# ``ask``, ``search`` and ``serve``: the order the store's hits are packed in.
rerank_option = click.option(
    "--rerank",
    type=click.Choice(RERANKS),
    default=DEFAULT_RERANK,
    show_default=True,
    help=f"Re-order BM25's first {RERANK_DEPTH} hits by fusing them with MiniLM's reading of "
    "the question before packing (dense), or keep BM25's order (off).",
)


# ``ask``, ``search`` and ``serve``: the chunks of the documents the question names first.
named_option = click.option(
    "--named-first",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help=f"Put first, among the first {NAMED_DEPTH} hits, the chunks of the documents the "
    "question names by the words that set their names apart ('... for Northwind Health "
    "Plus?'), or not (off).",
)


# ``ask`` and ``serve``: the documents' own sentences when an answer would be an abstention.
fallback_option = click.option(
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


def answer_check_option(choices: Sequence[str], help_text: str) -> Callable[[Any], Any]:
    """``--answer-check`` (``ask``, ``serve``): one of ``choices``, by default the library's
    ``DEFAULT_ANSWER_CHECK``, so a new default changes every command that takes it."""
    return click.option(
        "--answer-check",
        type=click.Choice(choices),
        default=DEFAULT_ANSWER_CHECK,
        show_default=True,
        help=help_text,
    )


def provider_options(command: Any) -> Any:
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


def entailment_options(default: str | None) -> Callable[[Any], Any]:
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


# -- what the options make ----------------------------------------------------------------

ENTAILMENT_FLAGS = ("--entailment", "--nli-model")


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
    flags: tuple[str, str] = ENTAILMENT_FLAGS,
) -> Backend | None:
    """The entailment backend a user chose (None: the tier is off). A model path is for the
    nli backend only (``flags``, the backend and model path options, name them in the error)."""
    nli_only(name, model_path, flags)
    if name is None or name == "off":
        return None
    return make_backend(name, model_path=model_path, provider=provider)


def nli_only(
    name: str | None, model_path: Path | None, flags: tuple[str, str] = ENTAILMENT_FLAGS
) -> None:
    """A usage error for a model path given to any backend but nli."""
    if model_path is not None and name != "nli":
        raise InputError(f"{flags[1]} needs {flags[0]} nli")


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


# -- errors to exit codes (here and only here) --------------------------------------------


def fail(message: str, code: str, as_json: bool) -> NoReturn:
    """Exit 2 with ``message``: on stderr, or as a JSON error object with ``--json``."""
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}}))
    else:
        click.echo(terminal_safe(f"quotebound: error: {message}"), err=True)
    sys.exit(EXIT_USAGE)


def run_group(group: click.Group, argv: Sequence[str] | None = None) -> NoReturn:
    """Run ``group`` on ``argv`` (None: the process's arguments) and exit with the code its
    command returned, turning every expected failure into a one-line message."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        result = group.main(args=args, prog_name="quotebound", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(EXIT_USAGE)
    except click.UsageError as exc:
        fail(" ".join(exc.format_message().split()), "usage", as_json)
    except QuoteboundError as exc:
        fail(str(exc), exc.code, as_json)
    except click.exceptions.Abort:
        click.echo("quotebound: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(result if isinstance(result, int) else EXIT_OK)
