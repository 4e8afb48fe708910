"""Regressions from a code review: each test names the failure it pins down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kits.corpuskit import make_doc
from quotebound import NormalizedText, Source, WorkingSet, normalize, verify
from quotebound.cards import document_of
from quotebound.cli import main
from quotebound.errors import IngestError
from quotebound.ingest import load_file
from quotebound.pipeline import AskOptions, ask
from quotebound.providers import ExtractiveProvider, ScriptedProvider
from quotebound.store import open_store
from quotebound.store.postgres import _redact


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _store(tmp_path: Path, *paras: str) -> str:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        store.ingest("hr", *make_doc("leave.txt", *paras, title="Leave"))
        for n in range(4):
            filler = f"Unrelated filler paragraph number {n} about office plants."
            store.ingest("hr", *make_doc(f"f{n}.txt", filler))
    return url


LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."


def test_lone_surrogates_never_crash_verify_or_ask(tmp_path: Path) -> None:
    ws = WorkingSet([Source("S1", LEAVE)])
    raw = (
        '{"answerable": true, "claims": [{"text": "Leave is 16 weeks \\ud800", "citations": '
        '[{"source": "S1", "quote": "entitled to 16 weeks of paid"}]}]}'
    )
    assert verify(ws, raw).status == "grounded"
    assert verify(ws, "Employees get 16 weeks \ud800 [1].").status == "grounded"
    with open_store(_store(tmp_path, LEAVE)) as store:
        answer = ask("parental leave weeks \udcff", store, ExtractiveProvider())
        assert store.get_trace(answer.trace_id or "").question == "parental leave weeks \ufffd"


def test_fixed_format_providers_are_verified_in_their_own_format(tmp_path: Path) -> None:
    with open_store(_store(tmp_path, LEAVE)) as store:
        answer = ask(
            "weeks of parental leave", store, ExtractiveProvider(), AskOptions(format="inline")
        )
    assert answer.status == "grounded" and not answer.repaired


def test_a_hash_in_a_document_name_stays_part_of_it() -> None:
    assert document_of(Source("S1", "x", key="hb:notes#1.txt#c3")) == "hb:notes#1.txt"
    assert document_of(Source("S2", "x", key="hb:notes#2.txt#c0")) == "hb:notes#2.txt"


def test_postgres_urls_are_printed_without_passwords() -> None:
    assert _redact("postgresql://qb:S3cret@db/qb") == "postgresql://qb:***@db/qb"
    assert "hunter2" not in _redact("postgresql://u@h/db?password=hunter2")
    assert _redact("postgresql://u:p@ss@host/db") == "postgresql://u:***@host/db"


def test_dotted_capital_i_does_not_stop_fullwidth_folding() -> None:
    source = "İzmir office: the ＰＲＯ plan covers 16 weeks of leave."
    quote = "the ＰＲＯ plan covers 16 weeks"
    span = NormalizedText(source).locate(normalize(quote))
    assert span is not None and normalize(source[span[0] : span[1]]) == normalize(quote)


def test_malformed_html_is_an_ingest_error_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<p>Leave is 16 weeks.</p><![foo]>", encoding="utf-8")
    with pytest.raises(IngestError, match=r"bad\.html: malformed html"):
        load_file(bad, "bad.html")


def test_unusable_sources_json_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = tmp_path / "a.txt"
    answer.write_text("x", encoding="utf-8")
    for content in ('[{"id": "S1", "text": "a", "page": ' + "9" * 5000 + "}]", "[" * 100000):
        sources = tmp_path / "s.json"
        sources.write_text(content, encoding="utf-8")
        rc, _, err = run(["verify", str(sources), str(answer)], capsys)
        assert rc == 2 and "not usable JSON" in err and "Traceback" not in err


def test_trace_marks_the_quotes_of_the_answer_that_was_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = "Managers approve leave requests within 5 working days of the request."
    url = _store(tmp_path, LEAVE, second)
    with open_store(url) as store:
        probe = ScriptedProvider(["{}", "{}"])
        ask("parental leave weeks managers approve", store, probe)
        ids = {s.text: s.id for s in probe.requests[0].working_set}

        def claim(text: str, sid: str, quote: str) -> dict[str, object]:
            return {"text": text, "citations": [{"source": sid, "quote": quote}]}

        first = {
            "answerable": True,
            "claims": [
                claim("Employees get 16 weeks.", ids[LEAVE], "entitled to 16 weeks of paid"),
                claim("Managers approve in 5 days.", ids[second], "within 5 working days of"),
                claim("Germany pays 20 weeks.", ids[LEAVE], "for the first 20 weeks"),
            ],
        }
        worse = {
            "answerable": True,
            "claims": [
                claim("Managers approve leave.", ids[second], "Managers approve leave requests"),
                claim("Germany pays 20 weeks.", ids[LEAVE], "for the first 20 weeks"),
            ],
        }
        provider = ScriptedProvider([json.dumps(first), json.dumps(worse)])
        answer = ask("parental leave weeks managers approve", store, provider)
    # served: the repaired verdict's kept claim, with the two the first attempt kept put back
    assert answer.status == "partial"
    assert [c.text for c in answer.claims] == [
        "Employees get 16 weeks.",
        "Managers approve in 5 days.",
        "Managers approve leave.",
    ]
    rc, out, _ = run(
        ["trace", answer.trace_id or "", "--citation", ids[second], "--store", url], capsys
    )
    # the trace marks the quotes of exactly the claims served, from both attempts
    assert rc == 0 and ">>>within 5 working days of<<<" in out
    assert ">>>Managers approve leave requests<<<" in out


def test_quote_word_count_is_one_rule_for_verifier_schema_and_extractive(tmp_path: Path) -> None:
    from quotebound.contract import answer_schema
    from quotebound.text import quote_words

    assert quote_words("Leave – 16 weeks here.") == 4 and quote_words("Leave – 16 weeks") == 3
    text = "Leave – 16 weeks. Parental leave lasts sixteen weeks in total."
    ws = WorkingSet([Source("S1", text)])
    quotes = answer_schema(ws)["properties"]["claims"]["items"]["properties"]["citations"]["items"][
        "anyOf"
    ][0]["properties"]["quote"]["enum"]
    # "Leave – 16 weeks." counts 3 words for the verifier, so the schema must not offer it
    assert quotes == ["Parental leave lasts sixteen weeks in total."]
    with open_store(_store(tmp_path, text)) as store:
        answer = ask("leave weeks", store, ExtractiveProvider())
    assert answer.status in ("grounded", "abstained")  # never a quote the verifier refuses
