"""Follow-ups in a chat: the second question of a conversation, asked as the Chat Completions
endpoint asks it (``server.followups.asked``: read with the question before it when it leans on it)
against the second question alone, and against the two always read together.

30 two-turn conversations written for this benchmark (``labels/followups.jsonl``): 15 on the
Contoso HR PDFs, whose second turn is one of the 50 ground-truth questions said as a follow-up
("What about hearing care?" after a question about the Northwind Standard plan's vision care;
gold: that question's pages), and 15 on CLAPNQ dev's passages pooled (600, as
``quality.retrieval`` pools them), whose second turn is a CLAPNQ question said as a follow-up
("who voices him?" after "who is simba in the lion king"; gold: its passage). They are written
as people write follow-ups, not to the rule: some open with "And" or "What about", some are
four words or fewer, and some are neither (the rule reads those alone).

Per set and way of asking: the share whose packed working set holds a gold page or passage
(what the model is sent), and the share whose answer cites one (a kept claim's card on a gold
page or passage), with the answers' abstentions. The answering model is ``--provider`` with
``quotebound ask``'s defaults (the extractive one by default: no model, a minute; ``local`` the
packaged 1.5B, tens of seconds a question on 2 cores).

    .venv/bin/python -m benchmarks.quality.followups
    .venv/bin/python -m benchmarks.quality.followups --provider local
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import clapnq, contoso
from quotebound.defaults import defaults
from quotebound.packing import DEFAULT_BUDGET_CHARS, pack
from quotebound.pipeline import Answer, ask, retrieve
from quotebound.providers import make_provider
from quotebound.server.followups import asked, leans
from quotebound.store import Store, open_store

CONVERSATIONS = Path(__file__).parent / "labels" / "followups.jsonl"
WAYS: dict[str, tuple[str, Callable[[str, str], str]]] = {
    "alone": ("second alone", lambda first, second: second),
    "endpoint": (
        "as the endpoint asks (followups.asked)",
        lambda first, second: asked([first, second]),
    ),
    "always": ("always with the first", lambda first, second: f"{first} {second}"),
}


def conversations() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CONVERSATIONS.read_text("utf-8").splitlines() if line]


def _clapnq(store: Store) -> dict[str, set[str]]:
    """The 600 passages into corpus ``clapnq``; each question id's gold document keys."""
    every, _ = clapnq.pooled()
    keys = clapnq.ingest_pooled(store, every)
    return {row["id"]: keys[row["passages"][0]["text"]] for row in every}


def _cited(answer: Answer) -> list[tuple[str, int | None]]:
    """(document key, page) of each quote of a card a kept claim cites."""
    cited = {n for claim in answer.claims for n in claim.cards}
    return [
        (card.document or "", q.page)
        for card in answer.cards
        if card.number in cited
        for q in card.quotes
    ] + [(card.document or "", None) for card in answer.cards if card.number in cited]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="extractive", help="extractive, local, ...")
    parser.add_argument(
        "--ways",
        nargs="+",
        choices=("alone", "endpoint", "always"),
        default=["alone", "endpoint", "always"],
        help="which ways of asking the second question to run (the 1.5B: alone endpoint)",
    )
    parser.add_argument("--rows", type=Path, help="write each answer here (JSON lines)")
    args = parser.parse_args(argv)
    if not (contoso.DATA.exists() and clapnq.DATA.exists()):
        print("the Contoso and CLAPNQ data are not under ../shared/data", file=sys.stderr)
        return 2
    made = defaults(make_provider(args.provider, None), rerank="off")
    budget = min(DEFAULT_BUDGET_CHARS, made.provider.context_chars or DEFAULT_BUDGET_CHARS)
    gold_pages = contoso.questions(50)
    tally: dict[tuple[str, str, str], dict[str, int]] = {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{tmp}/f.db") as store:
        contoso.ingest(store)
        passages = _clapnq(store)
        for conv in conversations():
            pages = gold_pages[conv["meant"]][1] if conv["set"] == "contoso" else set()
            keys = passages.get(str(conv["meant"]), set())
            corpus = contoso.CORPUS if conv["set"] == "contoso" else clapnq.CORPUS

            def on_gold(key: str, page: int | None, pages: Any = pages, keys: Any = keys) -> bool:
                if pages:  # a Contoso page
                    return page is not None and contoso.on_gold(key, [page], pages)
                return key.split("#", 1)[0] in keys  # a CLAPNQ passage

            options = made.options(corpora=[corpus], max_tokens=700)
            for way, question_of in (WAYS[w] for w in args.ways):
                question = question_of(conv["first"], conv["second"])
                hits, _, _ = retrieve(question, store, options)
                packed = pack(hits, budget_chars=budget).working_set
                sent = any(on_gold(s.key or "", s.page) for s in packed)
                answer = ask(question, store, made.provider, options)
                cited = any(on_gold(k, p) for k, p in _cited(answer))
                t = tally.setdefault(
                    (conv["set"], conv["kind"], way), {"n": 0, "sent": 0, "cited": 0}
                )
                t["abstained"] = t.get("abstained", 0) + (answer.status == "abstained")
                t["n"] += 1
                t["sent"] += sent
                t["cited"] += cited
                rows.append(
                    {
                        "set": conv["set"],
                        "kind": conv["kind"],
                        "way": way,
                        "asked": question,
                        "gold_sent": sent,
                        "gold_cited": cited,
                        "status": answer.status,
                        "claims": [c.text for c in answer.claims],
                    }
                )
        made.close()
    if args.rows:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    print(f"provider {args.provider}; {len(conversations())} two-turn conversations\n")
    questions = [row["input"] for row in clapnq.pooled()[1]]
    joined = sum(leans(q) for q in questions)
    print(
        f"the rule reads {joined} of CLAPNQ dev's {len(questions)} answerable questions, each a "
        "question of its own, as a follow-up (joined to whatever was asked before)\n"
    )
    print("| set | second turn | asked | n | gold sent | gold cited | abstained |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (name, kind, way), t in sorted(tally.items()):
        n = t["n"]
        print(
            f"| {name} | {kind} | {way} | {n} | {t['sent']} ({t['sent'] / n:.0%}) | "
            f"{t['cited']} ({t['cited'] / n:.0%}) | {t['abstained']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
