"""What ``ask`` serves, read by hand: the shares of served claims fully supported by their
quotes, answering what was asked, and a sentence a reader can take alone (issue 53).

A run of ``python -m benchmarks.quality.abstention_sets --json FILE`` (or the progress lines it
prints on stderr, one JSON row per question) lists each question's served claims. The labels in
``benchmarks/quality/labels/served_fit.jsonl`` were given by reading each served claim against its
quote and its question, one line per claim:

- ``supported``: ``yes`` (the quote says all of it), ``partly`` (a qualifier dropped, a
  relation recast, a word the quote lacks) or ``no``;
- ``answers``: ``answers`` (what was asked: the amount, the date, the name, the list),
  ``related`` (on the topic, not the answer; any claim served for a question the passages do
  not answer is at most this) or ``unrelated``;
- ``sentence``: whether a reader can take it alone (not "She was ...", "The breed ...", "LBD
  may refer to:");
- ``why``: the reader's note.

A claim is keyed by its question and a hash of its normalised text (the sets' passages are
not copied into the project). The script prints the shares over the labelled claims of the
run with 95% Wilson intervals (beside them, the same over the claims this build's writing
rules would still serve: what they refuse goes to the repair turn, whose outcome only a new
run shows), and lists the served claims that have no label yet (a new
build serves new claims: read them and add their lines, ``--template`` prints them ready to
fill in). The labels were made on the **fit** halves; a held-out read is the report halves'.

    .venv/bin/python -m benchmarks.quality.abstention_sets --sets squad2 nomiracl --half fit \\
        --per-split 20 --json /tmp/fit.json
    .venv/bin/python -m benchmarks.quality.served_labels /tmp/fit.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import pct
from quotebound.fragments import answer_fragments
from quotebound.text import normalize

LABELS = Path(__file__).resolve().parent / "labels" / "served_fit.jsonl"


def claim_key(question: str, claim: str) -> tuple[str, str]:
    """A served claim's key: its question and the first 16 hex of its normalised text's hash."""
    return question, hashlib.sha256(normalize(claim).encode()).hexdigest()[:16]


def run_rows(path: Path) -> list[dict[str, Any]]:
    """The question rows of a run: the ``--json`` document (set -> rows) or its progress
    lines (one JSON row per line; other lines skipped)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    if isinstance(data, dict):
        return [row for rows in data.values() for row in rows]
    return list(data)


MEASURES = (
    "fully supported by their quotes",
    "not supported at all",
    "a sentence a reader can take alone",
    "answering what was asked (answerable questions)",
    "served for an unanswerable question",
)


def _shares(read: list[dict[str, Any]]) -> list[str]:
    """``MEASURES`` over the labelled claims ``read``, each with its interval."""
    n = len(read)
    answered = [r for r in read if r["answerable"]]
    return [
        _share(sum(r["supported"] == "yes" for r in read), n),
        _share(sum(r["supported"] == "no" for r in read), n),
        _share(sum(r["sentence"] for r in read), n),
        _share(sum(r["answers"] == "answers" for r in answered), len(answered)),
        _share(sum(not r["answerable"] for r in read), n),
    ]


def _share(k: int, n: int) -> str:
    return f"{pct(k, n)} ({k} of {n})" if n else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="an abstention_sets.py run (--json, or stderr)")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--template", action="store_true", help="print unlabelled claims as lines")
    parser.add_argument(
        "--sets",
        nargs="+",
        default=["sq", "nm"],
        help="question id prefixes read (default: SQuAD2's sq, NoMIRACL's nm; Contoso's co "
        "questions are judged by their gold pages, not read)",
    )
    args = parser.parse_args()
    labels = {}
    for line in args.labels.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            labels[(row["question"], row["claim"])] = row
    read: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []  # those this build's writing rules would still serve
    unread: list[tuple[dict[str, Any], str]] = []
    for row in run_rows(args.run):
        if not str(row["id"]).startswith(tuple(args.sets)):
            continue
        claims = row.get("claims", [])
        for claim, refused in zip(claims, answer_fragments(claims), strict=True):
            key = claim_key(row["id"], claim)
            if key in labels:
                read.append(labels[key])
                if refused is None:
                    kept.append(labels[key])
            else:
                unread.append((row, claim))
    print(f"served claims labelled: {len(read)} (of {len(read) + len(unread)} served)\n")
    print("| measure | share | without what this build's writing rules refuse |")
    print("|---|---|---|")
    for what, shares in zip(MEASURES, zip(_shares(read), _shares(kept), strict=True), strict=True):
        print(f"| {what} | {shares[0]} | {shares[1]} |")
    if unread:
        print(f"\n{len(unread)} served claims have no label:", file=sys.stderr)
        for row, claim in unread:
            question, claim_hash = claim_key(row["id"], claim)
            if args.template:
                line = {
                    "set": "squad2" if question.startswith("sq") else "nomiracl",
                    "question": question,
                    "answerable": row["answerable"],
                    "claim": claim_hash,
                    "supported": "?",
                    "answers": "?",
                    "sentence": None,
                    "why": "",
                }
                print(json.dumps(line), "#", claim[:100], file=sys.stderr)
            else:
                print(f"- {question}: {claim[:120]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
