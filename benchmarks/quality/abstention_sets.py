"""Abstention beyond CLAPNQ: ``ask``'s defaults end to end on four public sets, reported per
set, with the gate that turned each answer away.

The sets, read in place from ``../shared/data`` (each folder's README gives its source and
licence):

- ``clapnq``: CLAPNQ dev, one Wikipedia passage per question (``common.clapnq.load``); the
  report half is ``answer_quality.py``'s reported sample (the first 100 of each label in its
  seeded order), the fit half the rows after it (what the answer check was fitted on);
- ``squad2``: a SQuAD 2.0 dev sample, one paragraph per question, its unanswerable questions
  written to look answerable; gold: the annotators' answer strings;
- ``nomiracl``: NoMIRACL English, a query with 10 passages, all judged not relevant in half
  the sets (the right answer there is to abstain);
- ``contoso``: 50 questions over six HR PDFs, all answerable; gold: the pages that answer.

Each set but CLAPNQ is cut by a seeded shuffle into a **fit** half (the first half of the
order) and a **report** half (the rest): thresholds are to be chosen on fit halves, figures
reported on report halves (``--half``). Every question is asked as ``quotebound ask`` asks it by
default, every part made by ``quotebound.defaults`` (``answer_quality.run``): the support tier
``fast``, the answer check ``auto`` (``both`` beside the packaged 1.5B, ``fast`` beside
others), BM25's hits re-ranked by MiniLM, the extractive fallback; each question's passages are
ingested as its own corpus (Contoso's PDFs are one corpus).

Per set it prints correct abstention (on unanswerable questions) and false abstention (on
answerable ones) with 95% Wilson intervals, the served citations' validity, fragments and
decorations served, the gold answer in what was served (where the set has one), p50 and p95
seconds; then, per set, the **gate** that decided every abstention (``answer_quality.gate``:
retrieval, provider, the model's own abstention, the code checks, the support tier, the answer
check; "+ fallback" when the fallback was asked and did not serve), for the false and the
correct ones.

    .venv/bin/python -m benchmarks.quality.abstention_sets --provider extractive --per-split 20
    .venv/bin/python -m benchmarks.quality.abstention_sets --sets squad2 nomiracl --per-split 20

With ``--keep DIR`` each set's traced answers stay, to be verified again under other settings
(another answer check, other thresholds) with no model asked:

    .venv/bin/python -m benchmarks.quality.abstention_sets --half fit --keep /tmp/fit
    .venv/bin/python -m benchmarks.quality.answer_replay /tmp/fit/squad2.json /tmp/fit/squad2.db \
        --answer-check fast both --fallback ranked
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED_DATA, p95, pct
from benchmarks.common.clapnq import SEED, Item
from benchmarks.common.clapnq import load as load_clapnq
from benchmarks.quality.answer_quality import Tally, ingest, run
from quotebound.store import open_store
from quotebound.text import normalize

DATA = SHARED_DATA
SETS = ("clapnq", "squad2", "nomiracl", "contoso")
CLAPNQ_REPORTED = 100  # per label: answer_quality.py's reported sample


def halves(rows: list[Any], seed: int) -> tuple[list[Any], list[Any]]:
    """The seeded order of ``rows`` cut in two: (fit, report)."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    middle = len(order) // 2
    return order[:middle], order[middle:]


def balanced(items: list[Item], per_split: int) -> list[Item]:
    """At most ``per_split`` answerable and ``per_split`` unanswerable items, in order."""
    yes = [i for i in items if i.answerable][:per_split]
    no = [i for i in items if not i.answerable][:per_split]
    return yes + no


def squad2(half: str, per_split: int) -> list[Item]:
    path = DATA / "squad2_dev_sample" / "squad2_dev.jsonl"
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    fit, report = halves(rows, SEED)
    items = [
        Item(
            f"sq{row['id']}",
            row["question"],
            "Wikipedia",
            row["context"],
            not row["is_impossible"],
            list(row["answers"]),
        )
        for row in (fit if half == "fit" else report)
    ]
    return balanced(items, per_split)


def nomiracl(half: str, per_split: int) -> list[Item]:
    path = DATA / "nomiracl_en" / "nomiracl_en_dev.jsonl"
    rows = [json.loads(x) for x in path.read_text("utf-8").splitlines()]
    fit, report = halves(rows, SEED)
    items = []
    for row in fit if half == "fit" else report:
        passages = []
        for p in row["passages"]:
            title, _, text = p["title_and_text"].partition(": ")
            passages.append((title, text) if text else ("Wikipedia", title))
        (title, text), *more = passages
        ident = "nm" + row["query_id"].replace("#", "_")
        items.append(
            Item(ident, row["query"], title, text, not row["should_abstain"], [], tuple(more))
        )
    return balanced(items, per_split)


def clapnq(half: str, per_split: int) -> list[Item]:
    if half == "report":
        items = load_clapnq(min(per_split, CLAPNQ_REPORTED), SEED)
    else:
        items = load_clapnq(per_split, SEED, skip=CLAPNQ_REPORTED)
    return items


def contoso(half: str, per_split: int) -> tuple[list[Item], dict[str, set[tuple[str, int]]]]:
    from benchmarks.common import contoso as bench

    rows = bench.questions(10_000)
    fit, report = halves(list(enumerate(rows)), SEED)
    items, gold = [], {}
    for n, (question, pages) in (fit if half == "fit" else report)[:per_split]:
        ident = f"co{n}"
        items.append(Item(ident, question, "", "", True, [], (), bench.CORPUS))
        gold[ident] = pages
    return items, gold


def gold_served(name: str, item: Item, row: dict[str, Any], pages: set[tuple[str, int]]) -> bool:
    """Whether what was served holds the set's gold: SQuAD's answer string in a served claim
    or quote, CLAPNQ's annotated sentence overlapping a quote, Contoso's page cited."""
    if row["status"] == "abstained":
        return False
    if name == "contoso":
        return any((doc, page) in pages for doc, page in row["cited"])
    said = [normalize(t) for t in [*row["claims"], *row["quotes"]]]
    golds = [normalize(g) for g in item.gold]
    if name == "squad2":
        return any(g in s for g in golds for s in said)
    return any(g in s or s in g for g in golds for s in said)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--provider", default="local-1.5b")
    parser.add_argument("--half", choices=("fit", "report"), default="report")
    parser.add_argument("--per-split", type=int, default=20, help="questions of each label")
    parser.add_argument("--json", type=Path, help="also write every row here")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep each set's store (DIR/SET.db, every answer's trace) and its rows "
        "(DIR/SET.json, as answer_quality --json writes them): what answer_replay re-verifies "
        "under other settings without asking the model again",
    )
    parser.add_argument(
        "--rerank",
        choices=("dense", "off"),
        default="dense",
        help="ask's default (dense), or off: as runs before 2026-12-07 measured",
    )
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs the public data sets in {DATA}")
    table: list[str] = []
    gates: list[str] = []
    everything: dict[str, Any] = {}
    for name in args.sets:
        pages: dict[str, set[tuple[str, int]]] = {}
        if name == "contoso":
            items, pages = contoso(args.half, 2 * args.per_split)
        else:
            items = {"clapnq": clapnq, "squad2": squad2, "nomiracl": nomiracl}[name](
                args.half, args.per_split
            )
        with tempfile.TemporaryDirectory() as tmp:
            folder = args.keep or Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for stale in ("", "-wal", "-shm"):  # (a run kept before, finished or not)
                (folder / f"{name}.db{stale}").unlink(missing_ok=True)
            url = f"sqlite:///{folder}/{name}.db"
            if name == "contoso":
                from benchmarks.common import contoso as bench

                with open_store(url) as store:
                    bench.ingest(store)
            else:
                ingest(items, url)
            tally: Tally = run(args.provider, items, url, False, rerank=args.rerank)
        by_id = {i.id: i for i in items}
        rows = tally.rows
        everything[name] = rows
        if args.keep:
            kept = {args.provider: {"rows": rows}}
            (args.keep / f"{name}.json").write_text(json.dumps(kept, indent=1), encoding="utf-8")
        no = [r for r in rows if not r["answerable"]]
        yes = [r for r in rows if r["answerable"]]
        correct = sum(r["status"] == "abstained" for r in no)
        false = sum(r["status"] == "abstained" for r in yes)
        gold = sum(
            gold_served(name, by_id[r["id"]], r, pages.get(r["id"], set()))
            for r in yes
            if r["status"] != "abstained"
        )
        answered = len(yes) - false
        table.append(
            f"| {name} | {len(yes)} + {len(no)} | {pct(correct, len(no))} | "
            f"{pct(false, len(yes))} | {pct(tally.final_valid, tally.final_cits)} | "
            f"{tally.fragments}, {tally.decorative} | "
            f"{'-' if name == 'nomiracl' else f'{gold} of {answered}'} | "
            f"{statistics.median(tally.seconds):.1f} / {p95(tally.seconds):.1f} |"
        )
        for label, group in (("false", yes), ("correct", no)):
            counted = Counter(r["gate"] for r in group if r["gate"] is not None)
            said = ", ".join(f"{g} {k}" for g, k in counted.most_common()) or "-"
            gates.append(f"| {name} | {label} abstentions | {sum(counted.values())} | {said} |")
    print(
        f"ask's defaults on the {args.half} halves, provider {args.provider}, "
        f"up to {args.per_split} questions of each label per set (seed {SEED})\n"
    )
    print(
        "| set | answerable + unanswerable | correct abstention | false abstention | "
        "final validity (all citations) | fragments, decorations served | gold served | "
        "p50 / p95 s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(table))
    print("\n| set | abstentions | n | the gate that decided them |\n|---|---|---:|---|")
    print("\n".join(gates))
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
