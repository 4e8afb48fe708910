"""The hand-read sample of what ``ask`` serves (``benchmarks.quality.served_labels``, issue 53): its
labels are well-formed, and the script joins a run's served claims to them by question and
claim hash, counting only what was labelled and naming what was not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.quality import served_labels

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("name", "least"), [("served_fit.jsonl", 40), ("served_report.jsonl", 30)])
def test_every_label_is_well_formed(name: str, least: int) -> None:
    lines = (ROOT / "benchmarks" / "quality" / "labels" / name).read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    assert len(rows) >= least
    keys = set()
    for row in rows:
        assert row["set"] in {"squad2", "nomiracl"}
        assert row["supported"] in {"yes", "partly", "no"}
        assert row["answers"] in {"answers", "related", "unrelated"}
        assert isinstance(row["sentence"], bool) and isinstance(row["answerable"], bool)
        assert len(row["claim"]) == 16 and all(c in "0123456789abcdef" for c in row["claim"])
        # (no claim text is kept: the sets' sentences stay where they are)
        assert set(row) == {
            "set",
            "question",
            "answerable",
            "claim",
            "supported",
            "answers",
            "sentence",
            "why",
        }
        keys.add((row["question"], row["claim"]))
    assert len(keys) == len(rows)  # one label per served claim


def test_a_run_is_joined_to_its_labels(tmp_path: Path) -> None:
    q, key = served_labels.claim_key("sq1", "Employees get 16 weeks of leave.")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps(
            {
                "set": "squad2",
                "question": q,
                "answerable": True,
                "claim": key,
                "supported": "partly",
                "answers": "answers",
                "sentence": True,
                "why": "",
            }
        )
        + "\n"
    )
    run = tmp_path / "run.json"
    row = {
        "id": "sq1",
        "answerable": True,
        "claims": ["Employees get 16 weeks of leave.", "A claim nobody read."],
    }
    run.write_text(json.dumps({"squad2": [row]}))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.quality.served_labels",
            str(run),
            "--labels",
            str(labels),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert "served claims labelled: 1 (of 2 served)" in out.stdout
    assert "| fully supported by their quotes | 0.0% [0, 79] (0 of 1) |" in out.stdout
    assert "| answering what was asked (answerable questions) | 100.0%" in out.stdout
    assert "A claim nobody read." in out.stderr
