"""Each closed vocabulary is written once and derived everywhere it is offered: the formats in
the HTTP schemas and the docs' table, the vendors in the readers' table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from quotebound.native import READERS, VENDORS, Vendor
from quotebound.parsing import FORMATS, PROMPT_FORMATS, Format, FormatChoice, PromptFormat
from quotebound.server.schemas import AskIn, VerifyIn

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_format_types_and_tuples_agree() -> None:
    assert get_args(FormatChoice) == FORMATS and FORMATS[0] == "auto"
    assert set(get_args(Format)) == set(FORMATS) - {"auto"}
    assert PROMPT_FORMATS == get_args(PromptFormat) == ("json", "inline", "evidence")
    assert set(VENDORS) == set(get_args(Vendor)) <= set(FORMATS)
    assert tuple(r.vendor for r in READERS) == ("anthropic", "openai", "gemini", "cohere")


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
