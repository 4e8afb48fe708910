"""The repair path, offline: a scripted model whose first draft misquotes a number.

Run: .venv/bin/python examples/repair_demo.py STORE_URL   (a store holding examples/handbook)
The first draft claims 16 weeks for Germany with an altered quote; the verifier rejects it,
the one repair turn names the failure, and the second draft (quoting 14 weeks) is kept.
"""

from __future__ import annotations

import json
import sys

from quotebound.pipeline import AskOptions, ask
from quotebound.providers import ScriptedProvider
from quotebound.store import open_store

QUESTION = "How many weeks does the company top up parental allowance in Germany?"


def draft(sid: str, weeks: int) -> str:
    claim = f"In Germany the company tops up parental allowance for the first {weeks} weeks."
    quote = f"to full salary for the first {weeks} weeks"
    citation = {"source": sid, "quote": quote}
    return json.dumps(
        {"answerable": True, "missing": "", "claims": [{"text": claim, "citations": [citation]}]}
    )


def main(url: str) -> int:
    with open_store(url) as store:
        probe = ScriptedProvider(["{}", "{}"])
        ask(QUESTION, store, probe, AskOptions(corpora=["handbook"]))
        sid = next(s.id for s in probe.requests[0].working_set if "Elterngeld" in s.text)
        model = ScriptedProvider([draft(sid, 16), draft(sid, 14)], model="scripted-demo")
        answer = ask(QUESTION, store, model, AskOptions(corpora=["handbook"]))
        first = json.loads(draft(sid, 16))["claims"][0]
        print("first draft :", first["text"], "| quote:", first["citations"][0]["quote"])
        print("repair turn :", model.requests[1].messages[-1].content.splitlines()[1])
        for claim in answer.claims:
            print("kept        :", claim.text, "".join(f"[{n}]" for n in claim.cards))
        print("status      :", answer.status, "| repaired:", answer.repaired)
        print("trace       :", answer.trace_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
