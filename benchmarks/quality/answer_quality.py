"""Answer quality of the whole pipeline on CLAPNQ: validity, repairs, both abstention rates.

For a fixed, seeded sample of CLAPNQ dev questions (answerable and unanswerable, each with
its one Wikipedia passage), every passage is ingested as its own corpus in a fresh SQLite
store, and ``quotebound.pipeline.ask`` answers the question from that corpus with each
provider: the real path (retrieve, pack, contract, model, verify, one repair, abstain), the
same code ``quotebound ask`` runs. Reported per provider:

- first-pass citation validity: valid citations / citations in the first verdict;
- final validity: the same over the last verdict;
- repair rate: answers that needed the repair turn;
- abstention on unanswerable (higher is better) and false abstention on answerable (lower);
- gold overlap: answered answerable questions whose kept quotes overlap a sentence the CLAPNQ
  annotators selected (a rough correctness signal, not a metric of the issue);
- seconds per answer (mean and p50), and provider errors;
- what a served answer must never hold, counted in the served answers: fragment or
  placeholder claims (``fragments.answer_fragments``), decorative citations (a kept citation
  sharing no content word with its claim), and model notes shown in an abstention that state a fact
  (``coverage.states_no_fact``); and answers naming a part of the question left unaddressed.

The support tier runs as ``quotebound ask`` runs it (``--entailment fast``, the default;
``off`` to measure without it).

Run from the repository root (CLAPNQ is read in place from ../shared/data/clapnq):

    .venv/bin/python -m benchmarks.quality.answer_quality --per-split 60
    .venv/bin/python -m benchmarks.quality.answer_quality --providers local-1.5b --entailment off
    .venv/bin/python -m benchmarks.quality.answer_quality --providers local-1.5b --per-split 100

The answer check (``ask --answer-check``, on for the local provider) runs too unless
``--answer-check off``; the report says what it turned into abstentions and the two rates
without it. Its threshold was fitted (``benchmarks/training/answer_check.py``) on CLAPNQ dev
rows outside the first 100 per split that this script asks, so samples up to ``--per-split 100``
are held out.
    .venv/bin/python -m benchmarks.quality.answer_quality --providers extractive --per-split 300

``--store FILE`` keeps the store (passages and every answer's trace, with what the model
wrote): ``benchmarks/quality/answer_replay.py`` verifies those answers again under other settings.

``--answer-check auto --fallback extractive --rerank dense`` runs what ``quotebound ask`` runs by
default (the answer check acting, ``both`` beside the packaged 1.5B and ``fast`` beside the
others, the sources' own sentences when an answer would abstain, BM25's hits re-ranked by
MiniLM), every part made by ``quotebound.defaults`` as ``ask`` makes it.

``--order claim-first`` measures the contract's other order (the issue's "quote-first where
it measures better"): each claim's text before its citations in the JSON schema the decoder
follows and in the prompt's example shape, where ``ask`` puts the quotes first (the default,
``quote-first``); the example's claim placeholder says "a complete sentence stating one fact"
where the shipped one adds "from the quote" (no quote precedes it). Only this process is
changed (``claim_first``); ``ask`` has no such option.

``--reanchor off`` measures the model's own citations only (``AskOptions(reanchor=False)``); the
``anchored`` column counts served citations the code placed. ``--skip 100 --json FILE`` asks
questions no reported sample holds, with the answer check in shadow:
``python -m benchmarks.training.answer_check fit-served FILE`` fits the check's threshold on
what it is sent in ``ask`` (the served answers' verified quotes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import p95, served_claims
from benchmarks.common.clapnq import DATA, SEED, Item, load
from quotebound import contract
from quotebound.choices import (
    DEFAULT_ANSWER_CHECK,
    DEFAULT_FALLBACK,
    DEFAULT_RERANK,
    DEFAULT_TIER,
    RERANKS,
)
from quotebound.corpus import LoadedDocument
from quotebound.coverage import states_no_fact
from quotebound.defaults import defaults
from quotebound.entailment.judge import JUDGE_MODEL, JudgeBackend
from quotebound.fragments import answer_fragments
from quotebound.ingest import chunk_document
from quotebound.pipeline import Answer, ask
from quotebound.providers import ExtractiveProvider, Provider
from quotebound.store import open_store
from quotebound.text import normalize
from quotebound.text.words import content_words
from quotebound.verdict import DEFAULT_POLICY

PROVIDERS = ("extractive", "local-0.5b", "local-1.5b")


_ENTAILMENT = frozenset({"not_entailed", "contradicted", "entailment_error"})


def gate(answer: Answer) -> str | None:
    """Which gate turned ``answer`` away (None when it was answered): ``retrieval`` (nothing
    was found to send), ``provider`` (the model failed or its answer could not be read),
    ``model`` (it abstained itself), ``answer check`` (verified claims that it found do not
    answer), ``support tier`` (every dropped claim passed the code checks and failed only the
    entailment tier), ``code checks`` (the rest). ``+ fallback`` is added when the fallback
    was asked and did not serve."""
    if answer.status != "abstained":
        return None
    missing = answer.abstention.missing if answer.abstention else ""
    last = answer.verdicts[-1] if answer.verdicts else None
    if answer.answer_check is not None and not answer.answer_check.supported:
        found = "answer check"
    elif not answer.verdicts and "no document" in missing:
        found = "retrieval"
    elif last is None or last.status == "unparseable" or answer.error:
        found = "provider"
    elif all(v.status == "abstained" for v in answer.verdicts):
        found = "model"
    else:
        dropped = [c for v in answer.verdicts for c in v.claims if not c.kept]
        support_only = bool(dropped) and all(
            c.citations and all(x.reason in _ENTAILMENT for x in c.citations if not x.valid)
            for c in dropped
        )
        found = "support tier" if support_only else "code checks"
    asked = answer.counts.get("fallback_asked", 0) and not answer.counts.get("fallback_attempt")
    return f"{found} + fallback" if asked else found


@dataclass
class Tally:
    answers: int = 0
    seconds: list[float] = field(default_factory=list)
    first_cits: int = 0
    first_valid: int = 0
    final_cits: int = 0
    final_valid: int = 0
    repaired: int = 0
    errors: int = 0
    abstained_unanswerable: int = 0
    unanswerable: int = 0
    abstained_answerable: int = 0
    answerable: int = 0
    answered_answerable: int = 0
    gold_overlap: int = 0
    fragments: int = 0
    decorative: int = 0
    unverified_notes: int = 0
    unaddressed: int = 0
    anchored: int = 0  # served citations the code placed (reanchor.reanchor)
    check_refused_answerable: int = 0  # answers the answer check turned into abstentions
    check_refused_unanswerable: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per question, for reading


def make(name: str) -> Provider:
    if name == "extractive":
        return ExtractiveProvider()
    from quotebound.providers.local import LocalProvider

    size = name.removeprefix("local-")
    return LocalProvider(f"qwen2.5-coder-{size}-instruct-q4_k_m")


def score(tally: Tally, item: Item, answer: Answer, seconds: float) -> None:
    tally.answers += 1
    served = served_claims(answer)
    tally.fragments += sum(why is not None for why in answer_fragments([c.text for c in served]))
    for claim in served:
        words = content_words(normalize(claim.text))
        for cite in claim.citations:
            tally.anchored += cite.valid and cite.anchored
            if cite.valid and words:
                tally.decorative += words.isdisjoint(content_words(normalize(cite.quote or "")))
    if answer.abstention is not None and answer.verdicts:
        note = answer.verdicts[-1].missing
        shown = note is not None and note.strip() in answer.abstention.missing
        tally.unverified_notes += shown and not states_no_fact(note or "", item.question)
    tally.unaddressed += bool(answer.unaddressed)
    refused = answer.answer_check is not None and not answer.answer_check.supported
    if item.answerable:
        tally.check_refused_answerable += refused
    else:
        tally.check_refused_unanswerable += refused
    tally.rows.append(
        {
            "id": item.id,
            "answerable": item.answerable,
            "question": item.question,
            "status": answer.status,
            "claims": [c.text for c in answer.claims],
            "quotes": [  # the served claims' verified quotes: what an answer check is sent
                c.quote for k in served_claims(answer) for c in k.citations if c.valid and c.quote
            ],
            "trace_id": answer.trace_id,
            "unaddressed": list(answer.unaddressed),
            "missing": answer.abstention.missing if answer.abstention else None,
            "answer_check": answer.answer_check.to_dict() if answer.answer_check else None,
            "dropped": [  # what each attempt dropped, and why: to read the false abstentions
                [c.text, c.reason, [x.reason for x in c.citations]]
                for v in answer.verdicts
                for c in v.claims
                if not c.kept
            ],
            "anchored": sum(x.anchored for c in served_claims(answer) for x in c.citations),
            "gate": gate(answer),
            "cited": sorted(  # the documents and pages the served claims' cards point to
                {(card.document, q.page or 0) for card in answer.cards for q in card.quotes}
            ),
            "seconds": round(seconds, 2),
        }
    )
    tally.seconds.append(seconds)
    if answer.verdicts:
        first, last = (
            answer.verdicts[0].to_dict()["counts"],
            answer.verdicts[-1].to_dict()["counts"],
        )
        tally.first_cits += first["citations"]
        tally.first_valid += first["valid_citations"]
        tally.final_cits += last["citations"]
        tally.final_valid += last["valid_citations"]
    tally.repaired += answer.repaired
    tally.errors += answer.status == "provider_error"
    abstained = answer.status == "abstained"
    if item.answerable:
        tally.answerable += 1
        tally.abstained_answerable += abstained
        if answer.claims:
            tally.answered_answerable += 1
            quotes = [normalize(q.text) for card in answer.cards for q in card.quotes]
            golds = [normalize(g) for g in item.gold]
            tally.gold_overlap += any(q in g or g in q for q in quotes for g in golds)
    else:
        tally.unanswerable += 1
        tally.abstained_unanswerable += abstained


def shadow_checks(checker: JudgeBackend, question: str, answer: Answer) -> dict[str, Any]:
    """What the answer check says of a served answer, without acting on it: P(yes) with the
    verified quotes as the evidence (what ``AskOptions.answer_check`` sends) and with the
    kept claims' own text."""
    quotes = [c.quote for k in served_claims(answer) for c in k.citations if c.valid and c.quote]
    out: dict[str, Any] = {}
    for name, evidence in (
        ("quotes", " ".join(dict.fromkeys(quotes))),
        ("claims", " ".join(c.text for c in answer.claims)),
    ):
        j = checker.answers(question, evidence)
        out[name] = j.p_supported
    return out


def claim_first() -> None:
    """The contract's claim-first order, in this process only: each claim's ``text`` before
    its ``citations`` in the schema (llama.cpp's grammar keeps the schema's property order) and
    in the prompt's example shape."""
    original = contract.answer_schema

    def schema(ws: Any, policy: Any = DEFAULT_POLICY) -> dict[str, Any]:
        out = original(ws, policy)
        claim = out["properties"]["claims"]["items"]
        claim["properties"] = {k: claim["properties"][k] for k in ("text", "citations")}
        claim["required"] = ["text", "citations"]
        return out

    contract.answer_schema = schema
    rules = contract._RULES["json"]  # the contract itself is measured
    rules["output"] = (
        "Return JSON only, in this shape (for each claim, first the sentence you write, then "
        "the quotes that support it):\n"
        '{"answerable": true, "claims": [{"text": "<a complete sentence stating one fact>", '
        '"citations": [{"source": "S1", "quote": "<a sentence copied from S1>"}]}], '
        '"missing": ""}'
    )


def run(
    name: str,
    items: list[Item],
    store_url: str,
    progress: bool,
    tier: str = DEFAULT_TIER,
    check: str = DEFAULT_ANSWER_CHECK,
    reanchor: bool = True,
    fallback: str = DEFAULT_FALLBACK,
    rerank: str = DEFAULT_RERANK,
) -> Tally:
    """Each item asked of its own corpus by ``name``, beside the parts ``quotebound ask`` runs,
    made by ``quotebound.defaults`` (``tier``, ``check``, ``fallback``, ``rerank``: the options
    of ``ask``, their defaults its defaults); ``check`` ``shadow``: none acting, the judge's
    computed beside each served answer and reported."""
    provider = make(name)
    shadow = check == "shadow"
    made = defaults(
        provider,
        entailment=tier,
        answer_check="off" if shadow else check,
        rerank=rerank,
        fallback=fallback,
    )
    judge = None  # the shadow judge: on the answering model when it is the judge's own
    if shadow and name != "extractive":
        judge = JudgeBackend(provider if provider.model == JUDGE_MODEL else make("local-1.5b"))
    tally = Tally()
    try:
        with open_store(store_url) as store:
            yes = [i for i in items if i.answerable]
            no = [i for i in items if not i.answerable]
            both = [i for pair in zip(yes, no, strict=False) for i in pair]
            both += yes[len(no) :] + no[len(yes) :]  # the two kinds alternate: a run cut short
            for n, item in enumerate(both, 1):  # is still balanced
                started = time.perf_counter()
                options = made.options(
                    corpora=[item.corpus_name], max_tokens=700, reanchor=reanchor
                )
                answer = ask(item.question, store, made.provider, options)
                score(tally, item, answer, time.perf_counter() - started)
                if judge is not None and answer.claims:
                    tally.rows[-1]["shadow"] = shadow_checks(judge, item.question, answer)
                if progress:
                    print(f"\r{name}: {n}/{len(items)}", end="", file=sys.stderr, flush=True)
                else:  # one JSON line per question: a long run can be read while it goes
                    print(json.dumps({"provider": name, **tally.rows[-1]}), file=sys.stderr)
    finally:
        made.close()
        if judge is not None and judge.provider is not provider:
            judge.close()
        if progress:
            print(file=sys.stderr)
    return tally


def ingest(items: list[Item], store_url: str) -> None:
    """Each item's passages into its own corpus (an item asked of a shared corpus has none)."""
    with open_store(store_url) as store:
        for item in items:
            passages = [(item.title, item.passage), *item.more] if item.passage else []
            for k, (title, text) in enumerate(passages):
                name = f"{item.id}.txt" if not k else f"{item.id}-{k}.txt"
                doc = LoadedDocument(name, text, "text/plain", title=title)
                store.ingest(
                    item.corpus_name, doc, chunk_document(doc, max_chars=600, min_chars=150)
                )


def pct(num: int, den: int) -> str:
    return f"{100 * num / den:5.1f}%" if den else "   - "


def report(results: dict[str, Tally], items: list[Item], tier: str) -> None:
    answerable = sum(i.answerable for i in items)
    print(
        f"quotebound answer quality on CLAPNQ dev: {answerable} answerable + "
        f"{len(items) - answerable} unanswerable questions (seed {SEED}), support tier "
        f"{tier}"
    )
    rows: list[tuple[str, ...]] = [
        (
            "provider",
            "1st-pass valid",
            "final valid",
            "repair rate",
            "abstain|unans",
            "false abstain",
            "gold overlap",
            "s/answer",
            "p50 s",
            "p95 s",
            "errors",
            "fragments",
            "decorative",
            "unverified notes",
            "unaddressed",
            "anchored",
        )
    ]
    for name, t in results.items():
        rows.append(
            (
                name,
                pct(t.first_valid, t.first_cits),
                pct(t.final_valid, t.final_cits),
                pct(t.repaired, t.answers),
                pct(t.abstained_unanswerable, t.unanswerable),
                pct(t.abstained_answerable, t.answerable),
                pct(t.gold_overlap, t.answered_answerable),
                f"{statistics.mean(t.seconds):.2f}",
                f"{statistics.median(t.seconds):.2f}",
                f"{p95(t.seconds):.2f}",
                str(t.errors),
                str(t.fragments),
                str(t.decorative),
                str(t.unverified_notes),
                str(t.unaddressed),
                str(t.anchored),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(
            "  ".join(
                cell.rjust(w) if i else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for name, t in results.items():
        if t.check_refused_answerable or t.check_refused_unanswerable:
            print(
                f"{name}: the answer check turned {t.check_refused_unanswerable} answers to "
                f"unanswerable questions and {t.check_refused_answerable} to answerable ones "
                "into abstentions; without it: abstains when unanswerable "
                f"{pct(t.abstained_unanswerable - t.check_refused_unanswerable, t.unanswerable)}"
                ", false abstention "
                f"{pct(t.abstained_answerable - t.check_refused_answerable, t.answerable)}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--per-split", type=int, default=60)
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="start after this many questions of each label (--skip 100: questions no "
        "reported sample holds, to fit on: benchmarks/training/answer_check.py fit-served)",
    )
    parser.add_argument("--providers", nargs="+", default=list(PROVIDERS), choices=PROVIDERS)
    parser.add_argument("--entailment", default="fast", help="the support tier (off: none)")
    parser.add_argument(
        "--answer-check",
        choices=("on", "off", "shadow", "fast", "both", "auto"),
        default="shadow",
        help="on: ask runs the judge's (an answer it refuses is an abstention); shadow: the "
        "judge's is computed beside each served answer and reported, never acting; fast: ask "
        "runs the fast one; both: the fast one and the judge averaged (as ask runs it: the "
        "judge on the answering model when that is the packaged 1.5B, else on the packaged "
        "1.5B); auto (quotebound ask's default): both beside the packaged 1.5B, else fast; "
        "off: none",
    )
    parser.add_argument(
        "--fallback",
        choices=("off", "extractive"),
        default="off",
        help="extractive (quotebound ask's default): an answer that would be an abstention gets "
        "the sources' own sentences when they pass every check (AskOptions.fallback)",
    )
    parser.add_argument(
        "--rerank",
        choices=RERANKS,
        default="off",
        help="dense (quotebound ask's default): BM25's hits re-ranked by MiniLM before packing; "
        "off (as the reported runs): BM25's order",
    )
    parser.add_argument(
        "--reanchor",
        choices=("on", "off"),
        default="on",
        help="on (as ask does): a claim cited to the wrong sentence is re-cited in code",
    )
    parser.add_argument(
        "--order",
        choices=("quote-first", "claim-first"),
        default="quote-first",
        help="quote-first (as ask): each claim's quotes, then its text; claim-first: the text, "
        "then its quotes (in the schema and the prompt's example; measured, not shipped)",
    )
    parser.add_argument("--json", type=Path, help="also write the tallies as JSON here")
    parser.add_argument(
        "--store",
        type=Path,
        help="keep the SQLite store here (the passages and every answer's trace, with what the "
        "model wrote: benchmarks/quality/answer_replay.py verifies it again under other settings)",
    )
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"CLAPNQ not found at {DATA}", file=sys.stderr)
        return 2
    items = load(args.per_split, SEED, args.skip)
    if args.order == "claim-first":
        claim_first()
        print("contract order: claim-first (--order)", file=sys.stderr)
    results: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{args.store or Path(tmp) / 'clapnq.db'}"
        if args.store is not None and args.store.exists():
            sys.exit(f"{args.store} exists: give a new file")
        ingest(items, url)
        for name in args.providers:
            results[name] = run(
                name,
                items,
                url,
                sys.stderr.isatty(),
                args.entailment,
                args.answer_check,
                args.reanchor == "on",
                args.fallback,
                args.rerank,
            )
    report(results, items, args.entailment)
    if args.json:
        payload: dict[str, Any] = {k: vars(v) for k, v in results.items()}  # rows included
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
