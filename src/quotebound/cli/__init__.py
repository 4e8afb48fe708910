"""The command line: parse, call the library, map errors to exit codes (here and only here).

Exit codes (docs/cli.md):
    0  success: every claim kept, or the answer abstained; every file ingested
    1  the command ran and found problems: a claim dropped, ungrounded or unparseable output;
       a file skipped by ingest
    2  usage or input error (bad option, missing file, malformed SOURCES JSON, unknown trace),
       or a store that cannot be opened

This module makes the ``cli`` group and registers the commands; each command group lives in
its own module: ``verify`` (verify, check-support), ``corpus`` (ingest, search), ``ask`` (ask,
trace, open), ``admin`` (check, backup, serve, keys), ``mcp`` (mcp), and
``evaluation.command`` (eval, sample). ``options`` holds what they share: options, output,
exit codes and ``main``'s mapping of errors to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import click

from .. import __version__
from ..evaluation.command import eval_cmd, sample_cmd
from .admin import backup_cmd, check_cmd, keys_group, serve_cmd
from .ask import ask_cmd, open_cmd, trace_cmd
from .corpus import ingest_cmd, search_cmd
from .mcp import mcp_cmd
from .options import run_group, skip_unchosen
from .verify import check_support_cmd, verify_cmd

__all__ = ["cli", "main", "skip_unchosen"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="quotebound")
def cli() -> None:
    """quotebound: make answers from documents auditable."""


# In this order: ``cli.commands`` lists them so (``--help`` sorts them by name).
for command in (
    verify_cmd,
    ingest_cmd,
    search_cmd,
    trace_cmd,
    open_cmd,
    ask_cmd,
    check_support_cmd,
    eval_cmd,
    sample_cmd,
    check_cmd,
    backup_cmd,
    serve_cmd,
    mcp_cmd,
    keys_group,
):
    cli.add_command(command)
del command


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point: run the CLI and turn every expected failure into a one-line message."""
    run_group(cli, argv)
