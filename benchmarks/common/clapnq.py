"""CLAPNQ dev (``../shared/data/clapnq``), as the benchmarks read it: a seeded sample of
questions, each with its one Wikipedia passage (``load``: ``answer_quality``'s sample, whose
first 100 of each label no threshold is fitted on), or all 600 passages pooled (``pooled``:
``retrieval``'s)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from benchmarks.common import SHARED_DATA

DATA = SHARED_DATA / "clapnq"
SEED = 20261129
CORPUS = "clapnq"  # the pooled passages' corpus


@dataclass
class Item:
    id: str
    question: str
    title: str
    passage: str
    answerable: bool
    gold: list[str]
    more: tuple[tuple[str, str], ...] = ()  # further passages (title, text) in its corpus
    corpus: str = ""  # the corpus it is asked of; "" is its own, q<id>, holding its passages

    @property
    def corpus_name(self) -> str:
        return self.corpus or f"q{self.id}"


def load(per_split: int, seed: int, skip: int = 0) -> list[Item]:
    """``per_split`` questions of each label, after the first ``skip`` of the seeded order."""
    items: list[Item] = []
    for name, answerable in (("answerable", True), ("unanswerable", False)):
        rows = [
            json.loads(line)
            for line in (DATA / f"clapnq_dev_{name}.jsonl").read_text("utf-8").splitlines()
        ]
        random.Random(seed).shuffle(rows)  # a smaller sample is the start of a larger one
        for row in rows[skip : skip + per_split]:
            passage = row["passages"][0]
            gold = [s for out in row["output"] for s in out.get("selected_sentences", [])]
            items.append(
                Item(row["id"], row["input"], passage["title"], passage["text"], answerable, gold)
            )
    return items


def pooled() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All 600 rows, and the answerable ones in ``load``'s seeded order."""
    every: list[dict[str, Any]] = []
    answerable: list[dict[str, Any]] = []
    for name in ("answerable", "unanswerable"):
        rows = [
            json.loads(line)
            for line in (DATA / f"clapnq_dev_{name}.jsonl").read_text("utf-8").splitlines()
        ]
        every.extend(rows)
        if name == "answerable":
            random.Random(SEED).shuffle(rows)
            answerable = rows
    return every, answerable


def ingest_pooled(store: Any, every: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The passages of ``every`` (``pooled``'s rows) into ``store``'s corpus ``clapnq``, each a
    document cut as ``quality.retrieval`` cuts them; each passage text's document keys (a
    passage shared by several rows is one text with several keys: any of them is gold)."""
    from quotebound.corpus import LoadedDocument
    from quotebound.ingest import chunk_document

    by_text: dict[str, set[str]] = {}
    for row in every:
        passage = row["passages"][0]
        doc = LoadedDocument(
            f"{row['id']}.txt", passage["text"], "text/plain", title=passage["title"]
        )
        store.ingest(CORPUS, doc, chunk_document(doc, max_chars=600, min_chars=150))
        by_text.setdefault(passage["text"], set()).add(f"{CORPUS}:{row['id']}.txt")
    return by_text
