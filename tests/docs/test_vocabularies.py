"""Each closed vocabulary is written once and derived everywhere it is offered: the formats in
the HTTP schemas and the docs' table, the vendors in the readers' table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import click

from quotebound.native import READERS, VENDORS, Vendor
from quotebound.parsing import FORMATS, PROMPT_FORMATS, Format, FormatChoice, PromptFormat
from quotebound.server.schemas import AskIn, VerifyIn

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_format_types_and_tuples_agree() -> None:
    assert get_args(FormatChoice) == FORMATS and FORMATS[0] == "auto"
    assert set(get_args(Format)) == set(FORMATS) - {"auto"}
    assert PROMPT_FORMATS == get_args(PromptFormat) == ("json", "inline", "evidence")
    assert set(VENDORS) == set(get_args(Vendor)) <= set(FORMATS)
    assert sorted(r.vendor for r in READERS) == sorted(VENDORS)  # (their order: test_native)


def test_the_http_schemas_offer_what_the_library_reads() -> None:
    verify_format = VerifyIn.model_json_schema()["properties"]["format"]
    assert tuple(verify_format["enum"]) == FORMATS and verify_format["default"] == "auto"
    ask_format = AskIn.model_json_schema()["properties"]["format"]
    assert tuple(ask_format["enum"]) == PROMPT_FORMATS


def test_the_docs_format_table_has_a_row_for_each_format() -> None:
    text = (DOCS / "verify.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`[a-z]+`(?:, `[a-z]+`)*)", text, re.MULTILINE)
    documented = {name for row in rows for name in re.findall(r"`([a-z]+)`", row)}
    assert set(FORMATS) - {"auto"} <= documented, set(FORMATS) - documented
    assert "`auto` picks" in text


def _documented_rows() -> dict[str, dict[str, str]]:
    """docs/cli.md's option tables: command -> option -> the rest of its row."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    rows: dict[str, dict[str, str]] = {}
    command = ""
    for line in text.splitlines():
        heading = re.match(r"^## `quotebound ([a-z-]+)`", line)
        if heading:
            command = heading.group(1)
            continue
        row = re.match(r"^\| ((?:`--[a-z-]+`(?:, )?(?: \(`--[a-z-]+`\))?)+) \|(.*)$", line)
        if row and command:
            for option in re.findall(r"`(--[a-z-]+)`", row.group(1)):
                rows.setdefault(command, {})[option] = row.group(2)
    return rows


def _choice_options() -> list[tuple[str, str, click.Option]]:
    from quotebound.cli import cli

    out = []
    for name, command in cli.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, click.Choice):
                long = max(param.opts, key=len)
                out.append((name, long, param))
    return out


def test_the_cli_docs_give_each_closed_options_default_and_choices() -> None:
    """A default or a choice changed in the code (``quotebound.choices``, ``parsing``) and not
    in docs/cli.md fails here: each option with a closed set of values documents its default
    first in its row and names each of its values."""
    rows = _documented_rows()
    checked = 0
    for command, option, param in _choice_options():
        row = rows.get(command, {}).get(option)
        assert row is not None, f"quotebound {command} {option} has no row in docs/cli.md"
        default_cell = row.split("|")[0].strip()
        if "as for `ask`" in row:  # documented once, in ask's table
            row += rows["ask"][option]
            if default_cell.startswith("as for"):
                default_cell = rows["ask"][option].split("|")[0].strip()
        two_columns = row.count("|") == 1  # option | what it does (its default said in it)
        if isinstance(param.default, str) and not param.multiple:  # (else: none, or UNSET)
            if two_columns:
                assert f"`{param.default}`" in row, (command, option, param.default)
            else:
                assert default_cell.startswith(f"`{param.default}`"), (command, option, row)
        for choice in param.type.choices:
            assert f"`{choice}`" in row, (command, option, choice)
        checked += 1
    assert checked >= 10  # (ask's, serve's, search's, verify's and eval's closed options)
