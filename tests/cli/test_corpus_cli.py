"""`quotebound ingest`, `search` and `trace` end to end, on the embedded store
($QUOTEBOUND_HOME points at a fresh directory in every test)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kits.clikit import run
from quotebound.packing import pack
from quotebound.store import TraceAttempt, TraceRecord, TraceSource, open_store
from quotebound.verify import verify


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "leave.md").write_text(
        "# Parental leave\n\nEmployees are entitled to 16 weeks of paid parental leave unless "
        "local law provides more.\n\n## Germany\n\nIn Germany, the company tops up statutory "
        "parental allowance to full salary for the first 14 weeks.\n",
        encoding="utf-8",
    )
    (root / "expenses.txt").write_text(
        "Reimbursements settle within 30 days of approval. Per diem claims follow the same "
        "schedule.\n",
        encoding="utf-8",
    )
    (root / "faq.html").write_text(
        "<html><head><title>FAQ</title><script>var x = 'ignore me';</script></head><body>"
        "<h1>Contractor FAQ</h1><p>Contractors are not eligible for company-paid parental "
        "leave.</p></body></html>",
        encoding="utf-8",
    )
    (root / ".hidden.txt").write_text("never ingested", encoding="utf-8")
    (root / "notes.docx").write_bytes(b"unsupported, skipped silently")
    return root


def test_ingest_folder_then_reingest(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["ingest", str(docs), "--corpus", "handbook", "--json"], capsys)
    assert rc == 0
    result = json.loads(out)
    assert {d["key"] for d in result["documents"]} == {
        "handbook:expenses.txt",
        "handbook:faq.html",
        "handbook:policies/leave.md",
    }
    assert {d["status"] for d in result["documents"]} == {"added"}
    assert (
        result["store"].startswith("sqlite:///")
        and os.environ["QUOTEBOUND_HOME"] in result["store"]
    )

    rc, out, _ = run(["ingest", str(docs), "--corpus", "handbook", "--json"], capsys)
    assert {d["status"] for d in json.loads(out)["documents"]} == {"unchanged"}

    (docs / "expenses.txt").write_text(
        "Reimbursements now settle within 20 days.\n", encoding="utf-8"
    )
    rc, out, _ = run(["ingest", str(docs / "expenses.txt"), "--corpus", "handbook"], capsys)
    assert rc == 0
    assert "new_version  handbook:expenses.txt v2" in out


def test_unreadable_file_is_reported_and_skipped(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    rc, out, _ = run(["ingest", str(docs), "--corpus", "handbook", "--json"], capsys)
    assert rc == 1
    result = json.loads(out)
    assert [s["path"] for s in result["skipped"]] == [str(docs / "broken.pdf")]
    assert "broken.pdf" in result["skipped"][0]["error"]
    assert len(result["documents"]) == 3


def test_search_ranks_packs_and_respects_acl(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["ingest", str(docs / "policies"), "--corpus", "handbook"], capsys)
    run(["ingest", str(docs / "faq.html"), "--corpus", "vendor", "--acl", "legal"], capsys)
    rc, out, _ = run(["search", "weeks of parental leave in Germany", "--json"], capsys)
    assert rc == 0
    result = json.loads(out)
    assert result["hits"][0]["key"] == "handbook:leave.md"  # names are relative to the folder
    assert all(h["key"] != "vendor:faq.html" for h in result["hits"])
    assert [s["id"] for s in result["working_set"]] == [
        h["packed_as"] for h in result["hits"] if h["packed_as"]
    ]
    first = result["working_set"][0]
    assert first["key"].startswith("handbook:leave.md#c")

    rc, out, _ = run(["search", "contractors parental leave", "--acl", "legal", "--json"], capsys)
    assert "vendor:faq.html" in {h["key"] for h in json.loads(out)["hits"]}
    rc, out, _ = run(
        ["search", "contractors", "--acl", "legal", "--corpus", "handbook", "--json"], capsys
    )
    assert json.loads(out)["hits"] == []

    rc, out, _ = run(["search", "parental leave"], capsys)
    assert "handbook:leave.md#c" in out and "-> S1" in out

    # a question that names a document (by its title, "FAQ") gets its chunks first
    named = [
        "search",
        "Are employees entitled to 16 weeks of paid leave unless local law provides more, per "
        "the FAQ?",
        "--acl",
        "legal",
    ]
    rc, out, _ = run([*named, "--json"], capsys)
    result = json.loads(out)
    assert result["named_documents"] == ["vendor:faq.html"]
    assert (
        result["hits"][0]["key"] == "vendor:faq.html" and "named documents first" in result["order"]
    )
    rc, out, _ = run([*named, "--named-first", "off", "--json"], capsys)
    result = json.loads(out)
    assert result["named_documents"] == [] and result["hits"][0]["key"] == "handbook:leave.md"
    rc, out, _ = run(named, capsys)
    assert "named: vendor:faq.html" in out


def test_trace_prints_and_reopens_a_citation(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["ingest", str(docs / "policies"), "--corpus", "handbook"], capsys)
    with open_store() as store:
        packed = pack(store.search("parental leave Germany"))
        sid = next(s.id for s in packed.working_set if "14 weeks" in s.text)
        raw = json.dumps(
            {
                "answerable": True,
                "claims": [
                    {
                        "text": "In Germany the company tops up pay for the first 14 weeks.",
                        "citations": [
                            {"source": sid, "quote": "to full salary for the first 14 weeks"}
                        ],
                    }
                ],
            }
        )
        verdict = verify(packed.working_set, raw)
        assert verdict.status == "grounded"
        trace = TraceRecord(
            question="Germany?",
            sources=TraceSource.of_pack(packed),
            prompt="p",
            model="scripted",
            attempts=(TraceAttempt(raw, verdict.to_dict()),),
            status=verdict.status,
        )
        store.write_trace(trace)
    # the corpus moves on; the trace does not
    (docs / "policies" / "leave.md").write_text(
        "# Parental leave\n\nNow 20 weeks.\n", encoding="utf-8"
    )
    run(["ingest", str(docs / "policies"), "--corpus", "handbook"], capsys)

    rc, out, _ = run(["trace", trace.id], capsys)
    assert rc == 0 and trace.id in out and sid in out and "attempt 1: grounded" in out
    rc, out, _ = run(["trace", trace.id, "--citation", sid], capsys)
    assert ">>>to full salary for the first 14 weeks<<<" in out
    rc, out, _ = run(["trace", trace.id, "--citation", sid, "--json"], capsys)
    payload = json.loads(out)
    start, end = payload["spans"][0]
    assert payload["source"]["text"][start:end] == "to full salary for the first 14 weeks"

    rc, _, err = run(["trace", trace.id, "--citation", "S9"], capsys)
    assert rc == 2 and "S9 was not sent in trace" in err and err.count("\n") == 1
    rc, _, err = run(["trace", "nope"], capsys)
    assert rc == 2 and "no trace 'nope'" in err


def test_ingest_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(["ingest", str(tmp_path / "missing"), "--corpus", "x"], capsys)
    assert rc == 2 and "no such file or folder" in err
    (tmp_path / "only.docx").write_bytes(b"x")
    rc, _, err = run(["ingest", str(tmp_path / "only.docx"), "--corpus", "x"], capsys)
    assert rc == 2 and "no .txt, .md, .html or .pdf files" in err
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    rc, _, err = run(["ingest", str(tmp_path / "a.txt"), "--corpus", "bad:name"], capsys)
    assert rc == 2 and "corpus name" in err
    rc, _, err = run(["search", "x", "--store", "mysql://no"], capsys)
    assert rc == 2 and "unknown store URL" in err


def test_store_option_and_env(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    run(["ingest", str(docs / "expenses.txt"), "--corpus", "c", "--store", url], capsys)
    _, out, _ = run(["search", "reimbursements", "--json"], capsys)
    assert json.loads(out)["hits"] == []  # the default store is elsewhere
    monkeypatch.setenv("QUOTEBOUND_STORE", url)
    _, out, _ = run(["search", "reimbursements", "--json"], capsys)
    assert json.loads(out)["hits"][0]["key"] == "c:expenses.txt"


def test_supersedes_is_recorded(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ingest", str(docs / "expenses.txt"), "--corpus", "c", "--supersedes", "c:old.txt"]
    rc, _, _ = run(args, capsys)
    assert rc == 0
    with open_store() as store:
        [info] = store.documents("c")
    assert info.supersedes == "c:old.txt"
    rc, _, err = run(["ingest", str(docs), "--corpus", "c", "--supersedes", "c:x"], capsys)
    assert rc == 2 and "a single file" in err


def test_rerun_without_acl_keeps_groups_and_url(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(docs / "expenses.txt")
    run(["ingest", path, "--corpus", "c", "--acl", "finance"], capsys)
    rc, out, _ = run(["ingest", path, "--corpus", "c", "--json"], capsys)
    assert json.loads(out)["documents"][0]["status"] == "unchanged"
    _, out, _ = run(["search", "reimbursements", "--json"], capsys)
    assert json.loads(out)["hits"] == []  # still restricted
    rc, out, _ = run(
        ["ingest", path, "--corpus", "c", "--url-prefix", "https://x.example/d/", "--json"], capsys
    )
    assert json.loads(out)["documents"][0]["status"] == "updated"
    _, out, _ = run(["search", "reimbursements", "--acl", "finance", "--json"], capsys)
    assert json.loads(out)["hits"][0]["url"] == "https://x.example/d/expenses.txt"
    rc, out, _ = run(["ingest", path, "--corpus", "c", "--public", "--json"], capsys)
    assert json.loads(out)["documents"][0]["status"] == "updated"
    _, out, _ = run(["search", "reimbursements", "--json"], capsys)
    assert json.loads(out)["hits"] != []
    rc, _, err = run(["ingest", path, "--corpus", "c", "--public", "--acl", "x"], capsys)
    assert rc == 2 and "contradict" in err


def test_same_name_twice_in_one_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "policy.md").write_text(f"# {folder}\n\nText {folder}.\n")
    args = ["ingest", str(tmp_path / "a" / "policy.md"), str(tmp_path / "b" / "policy.md")]
    rc, _, err = run([*args, "--corpus", "x"], capsys)
    assert rc == 2 and "'policy.md'" in err
    rc, _, err = run(["ingest", str(tmp_path), "--corpus", "x#y"], capsys)
    assert rc == 2 and "'#'" in err
