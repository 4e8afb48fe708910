"""`quotebound verify` end to end: output, --json, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kits.clikit import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOURCES = str(EXAMPLES / "sources.json")


@pytest.mark.parametrize(
    ("answer", "code", "status"),
    [
        ("grounded.json", 0, "grounded"),
        ("partial.json", 1, "partial"),
        ("abstained.txt", 0, "abstained"),
    ],
)
def test_examples_exit_codes_and_json(
    answer: str, code: int, status: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(["verify", SOURCES, str(EXAMPLES / answer), "--json"], capsys)
    assert rc == code
    assert err == ""
    assert json.loads(out)["status"] == status


@pytest.mark.parametrize(
    ("vendor", "code", "kept"),
    [
        ("anthropic", 0, [True, True]),
        ("openai", 0, [True, True]),
        ("cohere", 1, [True, False]),
        ("gemini", 0, [True, True]),
    ],
)
def test_each_providers_own_citations_are_verified(
    vendor: str, code: int, kept: list[bool], capsys: pytest.CaptureFixture[str]
) -> None:
    answer = str(EXAMPLES / "native" / f"{vendor}.json")
    for fmt in ("auto", vendor):
        rc, out, err = run(["verify", SOURCES, answer, "--format", fmt, "--json"], capsys)
        verdict = json.loads(out)
        assert (rc, err, verdict["format"]) == (code, "", vendor)
        assert [c["kept"] for c in verdict["claims"]] == kept
        assert all(x["native"]["type"] for c in verdict["claims"] for x in c["citations"])
    rc, out, _ = run(["verify", SOURCES, answer], capsys)
    assert f"[format {vendor}]" in out


def test_the_report_says_when_a_providers_offsets_disagree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = json.loads((EXAMPLES / "native" / "anthropic.json").read_text(encoding="utf-8"))
    data["content"][2]["citations"][0] |= {"start_char_index": 0, "end_char_index": 40}
    answer = tmp_path / "moved.json"
    answer.write_text(json.dumps(data), encoding="utf-8")
    rc, out, _ = run(["verify", SOURCES, str(answer)], capsys)
    assert rc == 0  # the quote is verbatim where it stands: valid, and the report says so
    assert "the provider's offsets [0:40) disagree (found at [24:111))" in out


def test_human_report_names_each_failure(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["verify", SOURCES, str(EXAMPLES / "partial.json")], capsys)
    assert rc == 1
    assert out.startswith("status: partial (1 of 3 claims kept)")
    assert "quote_not_found (claim 2: quote not found in S2)" in out
    assert "unknown_source" in out
    assert "[DROPPED]" in out and "[kept]" in out


def test_stdin_answer(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["verify", SOURCES, "-", "--json"], capsys, stdin="INSUFFICIENT_CONTEXT\n")
    assert rc == 0
    assert json.loads(out)["status"] == "abstained"


def test_unparseable_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    answer = tmp_path / "a.json"
    answer.write_text('{"answerable": true, "claims": [{"text": "x", "cita', encoding="utf-8")
    rc, out, _ = run(["verify", SOURCES, str(answer), "--json"], capsys)
    assert rc == 1
    assert json.loads(out)["status"] == "unparseable"


def test_format_option_forces_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    # Prose read as JSON is unparseable; read as inline it is a claim with no marker.
    path = str(EXAMPLES / "grounded.json")
    rc, out, _ = run(["verify", SOURCES, path, "--format", "inline", "--json"], capsys)
    assert json.loads(out)["format"] == "inline"
    assert rc == 1


def test_policy_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(EXAMPLES / "grounded.json")
    rc, out, _ = run(["verify", SOURCES, path, "--min-quote-words", "30", "--json"], capsys)
    assert rc == 1
    reasons = {c["reason"] for cl in json.loads(out)["claims"] for c in cl["citations"]}
    assert reasons == {"quote_too_short"}

    answer = tmp_path / "a.txt"
    answer.write_text("I cannot answer that.", encoding="utf-8")
    rc, out, _ = run(
        ["verify", SOURCES, str(answer), "--sentinel", "I cannot answer that.", "--json"], capsys
    )
    assert (rc, json.loads(out)["status"]) == (0, "abstained")


def test_allow_user_evidence(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sources = tmp_path / "s.json"
    sources.write_text(
        json.dumps({"sources": [{"id": "U", "kind": "user", "text": "I get 20 weeks."}]}),
        encoding="utf-8",
    )
    answer = tmp_path / "a.txt"
    answer.write_text("You get 20 weeks [U].", encoding="utf-8")
    rc, _, _ = run(["verify", str(sources), str(answer)], capsys)
    assert rc == 1
    rc, _, _ = run(["verify", str(sources), str(answer), "--allow-user-evidence"], capsys)
    assert rc == 0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "SOURCES file not found"),
        ("{not json", "is not valid JSON"),
        ('{"a": 1}', "must hold a JSON list of sources"),
        ('[{"id": "S1"}]', "missing field 'text'"),
        ('[{"id": "S1", "text": "a"}, {"id": "S1", "text": "b"}]', "duplicate source id 'S1'"),
        ('[{"id": "S1", "text": "a", "kind": "wiki"}]', "kind must be one of"),
        ('[{"id": "S1", "text": "a", "updated": "last week"}]', "ISO date"),
        ('[{"id": "S1", "text": "a", "colour": "red"}]', "unknown field(s) colour"),
        ('[{"id": "S1", "text": "a", "page": 0}]', "page must be a positive integer"),
        ("[1]", "a source must be a JSON object"),
    ],
)
def test_bad_sources_exit_2_with_one_line(
    content: str | None, needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "sources.json"
    if content is not None:
        path.write_bytes(content.encode())
    rc, out, err = run(["verify", str(path), str(EXAMPLES / "grounded.json")], capsys)
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("quotebound: error: ")
    assert needle in err
    assert "Traceback" not in err

    rc, out, err = run(["verify", str(path), str(EXAMPLES / "grounded.json"), "--json"], capsys)
    assert rc == 2
    assert needle in json.loads(out)["error"]["message"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["verify", SOURCES], "Missing argument 'ANSWER'"),
        (["verify", SOURCES, "nope.txt"], "ANSWER file not found: nope.txt"),
        (["verify", SOURCES, "-", "--format", "yaml"], "Invalid value for '--format'"),
        (["verify", SOURCES, "-", "--min-quote-words", "9", "--max-quote-words", "3"], "below"),
        (["verify", SOURCES, str(EXAMPLES)], "is a directory"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(args, capsys, stdin="")
    assert rc == 2
    assert needle in err
    assert err.count("\n") == 1


def test_not_utf8_answer(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "a.txt"
    bad.write_bytes(b"\xff\xfe\x00bad")
    rc, _, err = run(["verify", SOURCES, str(bad)], capsys)
    assert rc == 2
    assert "is not UTF-8 text" in err


def test_installed_entry_point_runs() -> None:
    exe = Path(sys.executable).with_name("quotebound")
    proc = subprocess.run(
        [str(exe), "verify", SOURCES, str(EXAMPLES / "partial.json"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["counts"] == {
        "claims": 3,
        "kept": 1,
        "dropped": 2,
        "citations": 3,
        "valid_citations": 1,
    }
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert "quotebound" in version.stdout
