"""Text a caller or a source supplied never reaches an operator's terminal raw: the CLI's
human output writes control characters as visible escapes; its JSON output stays exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kits.clikit import run
from quotebound.store import TraceAttempt, TraceRecord, TraceSource, open_store
from quotebound.text.display import terminal_safe

TITLE_SET = "\x1b]0;owned\x07"  # an xterm title-setting sequence, ended by BEL
QUESTION = f"Leave?{TITLE_SET} \x1b[2J\rcleared \u202eevil\u202c\tok"
UNSAFE = ["\x1b", "\x07", "\r", "\u202e", "\u202c", "\x9b", "\x00"]


def test_terminal_safe_escapes_controls_and_keeps_text() -> None:
    assert terminal_safe("a\x1b[31mb\x07c\r\n\td\u202ee\x9bf") == (
        "a\\x1b[31mb\\x07c\\x0d\n\td\\u202ee\\x9bf"
    )
    plain = "Employees get 16 weeks — “paid”, café, 中文, عربي.\n\tNext line."
    assert terminal_safe(plain) == plain


def test_trace_and_search_print_no_raw_control_character(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = TraceSource("S1", f"Employees get 16 weeks.{TITLE_SET}", title=f"Leave{TITLE_SET}")
    trace = TraceRecord(QUESTION, (source,), (TraceAttempt(f"raw{TITLE_SET}"),), model="m\x07")
    with open_store() as store:
        store.write_trace(trace)
    for args in (["trace", trace.id], ["trace", trace.id, "--citation", "S1"]):
        code, out, err = run(args, capsys)
        assert code == 0, err
        assert not [c for c in UNSAFE if c in out + err], out
        assert "\\x1b]0;owned\\x07" in out
    code, out, _ = run(["trace", trace.id, "--json"], capsys)
    assert code == 0 and json.loads(out)["question"] == QUESTION  # JSON: exact
    # an error message that quotes caller text is escaped too
    code, out, err = run(["trace", f"nope{TITLE_SET}"], capsys)
    assert code == 2 and "\x1b" not in err and "\\x1b" in err
    doc = tmp_path / "leave.txt"
    doc.write_text(f"Parental leave is 16 weeks.{TITLE_SET} Ask HR.\n", encoding="utf-8")
    assert run(["ingest", str(doc), "--corpus", "c"], capsys)[0] == 0
    code, out, _ = run(["search", "parental leave"], capsys)
    assert code == 0 and "weeks" in out and "\x1b" not in out and "\x07" not in out
