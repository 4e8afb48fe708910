"""The entailment tier on verdicts, in the pipeline and the trace, and its CLI: what runs, what
is recorded, and that every failure fails closed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kits.clikit import run
from kits.serverkit import doc
from quotebound import Source, WorkingSet, verify
from quotebound.entailment import Backend, Judgement, make_backend
from quotebound.entailment.judge import JudgeBackend
from quotebound.entailment.tier import JOINT_DETAIL, check_entailment
from quotebound.pipeline import AskOptions, ask
from quotebound.providers.scripted import ScriptedProvider
from quotebound.store import open_store

LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = "In Germany, the company tops up parental allowance to full salary for 14 weeks."
CONTRACTORS = "Contractors are not eligible for company-paid parental leave."
WS = WorkingSet(
    [Source(id="S1", text=LEAVE), Source(id="S2", text=GERMANY), Source(id="S3", text=CONTRACTORS)]
)


def answer(*claims: tuple[str, list[tuple[str, str]]]) -> str:
    return json.dumps(
        {
            "answerable": True,
            "claims": [
                {"text": t, "citations": [{"source": s, "quote": q} for s, q in cits]}
                for t, cits in claims
            ],
        }
    )


class Table(Backend):
    """Labels looked up by (claim, evidence); records every pair it was asked."""

    name = "table"
    version = "table-1"

    def __init__(self, table: dict[tuple[str, str], str], fail: bool = False) -> None:
        self.table, self.fail, self.asked = table, fail, []

    def judge(self, claim: str, quote: str) -> Judgement:
        self.asked.append((claim, quote))
        label = self.table.get((claim, quote), "unrelated")
        return Judgement(label, 0.9, self.name, self.version)  # type: ignore[arg-type]

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        if self.fail:
            raise RuntimeError("model crashed")
        return super().judge_many(pairs)


def test_only_citations_that_passed_the_code_checks_are_judged() -> None:
    raw = answer(
        (
            "Employees get 16 weeks of paid parental leave.",
            [
                ("S1", "entitled to 16 weeks of paid parental leave"),
                ("S2", "not in the source at all, no"),
            ],
        )
    )
    backend = Table(
        {
            (
                "Employees get 16 weeks of paid parental leave.",
                "entitled to 16 weeks of paid parental leave",
            ): "supported"
        }
    )
    out = check_entailment(verify(WS, raw), WS, backend)
    assert backend.asked == [
        (
            "Employees get 16 weeks of paid parental leave.",
            "entitled to 16 weeks of paid parental leave",
        )
    ]
    good, bad = out.claims[0].citations
    assert good.valid and good.entailment is not None and good.entailment["backend"] == "table"
    assert not bad.valid and bad.reason == "quote_not_found" and bad.entailment is None
    assert out.status == "grounded" and out.tiers == ("code", "entailment:table")


@pytest.mark.parametrize(
    ("label", "reason"), [("contradicted", "contradicted"), ("unrelated", "not_entailed")]
)
def test_a_quote_that_does_not_support_its_claim_is_dropped(label: str, reason: str) -> None:
    claim, quote = "Parental leave is available to contractors.", CONTRACTORS.rstrip(".")
    out = check_entailment(
        verify(WS, answer((claim, [("S3", quote)]))), WS, Table({(claim, quote): label})
    )
    cit = out.claims[0].citations[0]
    assert (cit.valid, cit.reason, cit.entailment["label"]) == (False, reason, label)  # type: ignore[index]
    assert out.status == "ungrounded" and out.claims[0].reason == "no_valid_citation"
    assert "claim 1: the quote from S3" in out.failures[0]


def test_a_backend_failure_fails_closed() -> None:
    raw = answer(
        (
            "Employees get 16 weeks of paid parental leave.",
            [("S1", "entitled to 16 weeks of paid parental leave")],
        )
    )
    out = check_entailment(verify(WS, raw), WS, Table({}, fail=True))
    cit = out.claims[0].citations[0]
    assert not cit.valid and cit.reason == "entailment_error"
    assert cit.entailment is not None and "model crashed" in cit.entailment["error"]
    assert out.status == "ungrounded"


def test_a_claim_merging_two_sources_is_judged_on_its_quotes_together() -> None:
    # (the claim shares "leave" with q3, so that q3 passes the code checks and reaches the tier)
    claim = "Employees get 16 weeks of leave, topped up to full salary for 14 weeks in Germany."
    q1 = "entitled to 16 weeks of paid parental leave"
    q2 = "tops up parental allowance to full salary for 14 weeks"
    joined = f"{q1} {q2}"
    backend = Table({(claim, joined): "supported"})
    out = check_entailment(verify(WS, answer((claim, [("S1", q1), ("S2", q2)]))), WS, backend)
    assert (claim, joined) in backend.asked
    assert out.status == "grounded"
    assert all(
        c.valid and c.entailment["detail"] == JOINT_DETAIL  # type: ignore[index]
        for c in out.claims[0].citations
    )


class Batches(Table):
    """Records the size of every batch it was asked."""

    def __init__(self, table: dict[tuple[str, str], str]) -> None:
        super().__init__(table)
        self.batches: list[int] = []

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        self.batches.append(len(pairs))
        return super().judge_many(pairs)


def test_quotes_judged_together_are_judged_in_one_second_batch() -> None:
    leave = "Employees get 16 weeks, topped up to full salary for 14 weeks in Germany."
    q1 = "entitled to 16 weeks of paid parental leave"
    q2 = "tops up parental allowance to full salary for 14 weeks"
    contractors = "Contractors get no company leave, unlike employees with 16 weeks."
    q3 = "Contractors are not eligible for company-paid parental leave"
    backend = Batches({(leave, f"{q1} {q2}"): "supported"})
    raw = answer((leave, [("S1", q1), ("S2", q2)]), (contractors, [("S3", q3), ("S1", q1)]))
    out = check_entailment(verify(WS, raw), WS, backend)
    assert backend.batches == [4, 2]  # the four quotes alone, then the two claims' quotes joined
    assert [c.kept for c in out.claims] == [True, False] and out.status == "partial"
    assert [c.reason for c in out.claims[1].citations] == ["not_entailed", "not_entailed"]


def test_abstentions_and_unreadable_outputs_pass_through_with_the_tier_named() -> None:
    for raw in ("INSUFFICIENT_CONTEXT", '{"claims": [ {"text'):
        before = verify(WS, raw)
        out = check_entailment(before, WS, Table({}))
        assert out.status == before.status and out.tiers[-1] == "entailment:table"


def test_the_heuristic_backend_for_real_on_the_seed_cases() -> None:
    heuristic = make_backend("heuristic")
    raw = answer(
        (
            "Employees get 16 weeks of paid parental leave.",
            [("S1", "entitled to 16 weeks of paid parental leave")],
        ),
        (
            "Company-paid parental leave is available to contractors.",
            [("S3", "Contractors are not eligible for company-paid parental leave")],
        ),
    )
    out = check_entailment(verify(WS, raw), WS, heuristic)
    assert [c.kept for c in out.claims] == [True, False]
    assert out.claims[1].citations[0].reason == "contradicted"
    assert out.to_dict()["tiers"] == ["code", "entailment:heuristic"]


def test_a_judge_that_answers_outside_the_labels_fails_closed() -> None:
    judge = JudgeBackend(ScriptedProvider(["probably yes"] * 3))
    raw = answer(
        (
            "Employees get 16 weeks of paid parental leave.",
            [("S1", "entitled to 16 weeks of paid parental leave")],
        )
    )
    cit = check_entailment(verify(WS, raw), WS, judge).claims[0].citations[0]
    assert not cit.valid and cit.reason == "entailment_error"


# -- in the pipeline: recorded in the trace, repaired like any failure -------------------


def test_ask_runs_the_tier_repairs_its_failures_and_traces_the_judgements(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        store.ingest("hr", *doc("c.txt", CONTRACTORS, LEAVE))
        question = "Are contractors eligible for parental leave?"
        bad = answer(
            (
                "Company-paid parental leave is available to contractors.",
                [("S1", "Contractors are not eligible for company-paid parental leave")],
            )
        )
        good = answer(
            (
                "Contractors are not eligible for company-paid parental leave.",
                [("S1", "Contractors are not eligible for company-paid parental leave")],
            )
        )
        provider = ScriptedProvider([bad, good])
        result = ask(question, store, provider, AskOptions(entailment=make_backend("heuristic")))
        assert result.status == "grounded" and result.repaired
        repair_turn = provider.requests[1].messages[-1].content
        assert "contradicts the claim" in repair_turn
        trace = store.get_trace(result.trace_id or "")
        first, second = (a.verdict for a in trace.attempts)
        assert first is not None and second is not None
        assert first["tiers"] == ["code", "entailment:heuristic"]
        assert first["claims"][0]["citations"][0]["reason"] == "contradicted"
        assert second["claims"][0]["citations"][0]["entailment"]["label"] == "supported"
        assert "entailment_ms" in result.timings


# -- the CLI -----------------------------------------------------------------------------


def _files(tmp_path: Path, raw: str) -> tuple[str, str]:
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps([{"id": s.id, "text": s.text} for s in WS]), encoding="utf-8")
    out = tmp_path / "answer.json"
    out.write_text(raw, encoding="utf-8")
    return str(sources), str(out)


def test_verify_cli_with_and_without_the_tier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = answer(
        (
            "Company-paid parental leave is available to contractors.",
            [("S3", "Contractors are not eligible for company-paid parental leave")],
        )
    )
    sources, out = _files(tmp_path, raw)
    code, stdout, _ = run(["verify", sources, out, "--json"], capsys)
    assert code == 0 and json.loads(stdout)["tiers"] == ["code"]
    code, stdout, _ = run(["verify", sources, out, "--entailment", "heuristic", "--json"], capsys)
    verdict: dict[str, Any] = json.loads(stdout)
    assert code == 1 and verdict["status"] == "ungrounded"
    assert verdict["claims"][0]["citations"][0]["reason"] == "contradicted"
    code, _, err = run(["verify", sources, out, "--entailment-model", str(tmp_path)], capsys)
    assert code == 2 and "--entailment nli" in err
    # a model path with another backend is refused too, not silently ignored
    # (--nli-model is the name in every command; --entailment-model, its older name, still works)
    for backend, flag in [
        (b, f) for b in ("heuristic", "judge") for f in ("--nli-model", "--entailment-model")
    ]:
        code, stdout, err = run(
            ["verify", sources, out, "--entailment", backend, flag, str(tmp_path)], capsys
        )
        assert code == 2 and stdout == ""
        assert err == "quotebound: error: --nli-model needs --entailment nli\n"
    code, _, err = run(
        [
            "ask",
            "leave",
            "--provider",
            "extractive",
            "--entailment",
            "heuristic",
            "--entailment-model",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 2 and "--nli-model needs --entailment nli" in err


def test_check_support_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "check-support",
            "Employees get 16 weeks of paid parental leave.",
            "--quote",
            LEAVE,
            "--json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(out)["label"] == "supported"
    code, out, _ = run(
        ["check-support", "Contractors are eligible for parental leave.", "--quote", CONTRACTORS],
        capsys,
    )
    assert code == 1 and out.startswith("contradicted")
    code, _, err = run(["check-support", " ", "--quote", LEAVE], capsys)
    assert code == 2 and "must both have text" in err
    code, out, _ = run(
        ["check-support", "a b", "--quote", "c d", "--backend", "nli", "--json"], capsys
    )
    assert code == 2 and json.loads(out)["error"]["code"] == "entailment_setup"


def test_a_contradicting_quote_is_left_out_of_the_joint_judgement() -> None:
    # (the claim shares "leave" with q3, so that q3 passes the code checks and reaches the tier)
    claim = "Employees get 16 weeks of leave, topped up to full salary for 14 weeks in Germany."
    q1 = "entitled to 16 weeks of paid parental leave"
    q2 = "tops up parental allowance to full salary for 14 weeks"
    q3 = "Contractors are not eligible for company-paid parental leave"
    backend = Table({(claim, q3): "contradicted", (claim, f"{q1} {q2}"): "supported"})
    raw = answer((claim, [("S1", q1), ("S2", q2), ("S3", q3)]))
    out = check_entailment(verify(WS, raw), WS, backend)
    assert (claim, f"{q1} {q2}") in backend.asked
    assert not any(q3 in quote and q1 in quote for _, quote in backend.asked)
    assert [c.reason for c in out.claims[0].citations] == [None, None, "contradicted"]


class Short(Table):
    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        return super().judge_many(pairs)[:-1]  # one judgement missing


def test_a_backend_returning_too_few_judgements_fails_closed() -> None:
    raw = answer(
        (
            "Employees get 16 weeks of paid parental leave.",
            [("S1", "entitled to 16 weeks of paid parental leave")],
        )
    )
    backend = Short(
        {
            (
                "Employees get 16 weeks of paid parental leave.",
                "entitled to 16 weeks of paid parental leave",
            ): "supported"
        }
    )
    cit = check_entailment(verify(WS, raw), WS, backend).claims[0].citations[0]
    assert not cit.valid and cit.reason == "entailment_error"


def test_check_support_judges_on_the_provider_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        [
            "check-support",
            "a b",
            "--quote",
            "c d",
            "--backend",
            "judge",
            "--provider",
            "extractive",
        ],
        capsys,
    )
    assert code == 2 and "needs a model" in err
    code, _, err = run(
        ["check-support", "a b", "--quote", "c d", "--backend", "judge", "--provider", "openai"],
        capsys,
    )
    assert code == 2 and "--model" in err
    code, _, err = run(["check-support", "a b", "--quote", "c d", "--nli-model", "/x"], capsys)
    assert code == 2 and "--nli-model needs --backend nli" in err


def test_the_tier_run_again_judges_only_what_is_new() -> None:
    raw = answer(("Employees get 16 weeks of paid parental leave.", [("S1", LEAVE)]))
    backend = Table({("Employees get 16 weeks of paid parental leave.", LEAVE): "supported"})
    once = check_entailment(verify(WS, raw), WS, backend)
    backend.asked.clear()
    twice = check_entailment(once, WS, backend)
    assert backend.asked == [] and twice == once
    assert twice.tiers == ("code", "entailment:table")  # listed once


CLAIM = "In Germany, the company tops up parental allowance to full salary for 14 weeks."


def _second_chance(label: str) -> tuple[Any, Table]:
    """A claim whose verbatim quote the tier finds does not say it, then the code's sentence."""
    from quotebound.reanchor import reanchor
    from quotebound.reasons import AFTER_ENTAILMENT

    ws = WorkingSet(
        [
            Source("S1", LEAVE + " " + "Leave in Germany is paid for 14 weeks."),
            Source("S2", GERMANY),
        ]
    )
    quote = "Leave in Germany is paid for 14 weeks."
    raw = answer((CLAIM, [("S1", quote)]))
    backend = Table({(CLAIM, quote): "unrelated", (CLAIM, GERMANY): label})
    first = check_entailment(verify(ws, raw), ws, backend)
    assert first.claims[0].citations[0].reason == "not_entailed"
    placed = reanchor(first, ws, reasons=AFTER_ENTAILMENT)
    backend.asked.clear()
    return check_entailment(placed, ws, backend), backend


def test_a_quote_the_tier_rejects_gets_the_sentence_that_says_the_claim() -> None:
    verdict, backend = _second_chance("supported")
    assert backend.asked == [(CLAIM, GERMANY)]  # only the placed sentence is judged
    placed, own = verdict.claims[0].citations
    assert verdict.status == "grounded" and placed.anchored and placed.source == "S2"
    assert placed.entailment is not None and placed.entailment["label"] == "supported"
    assert own.reason == "not_entailed"  # the model's, as judged


def test_the_placed_sentence_is_judged_like_any_other() -> None:
    verdict, _ = _second_chance("unrelated")
    assert verdict.status == "ungrounded"
    assert [c.reason for c in verdict.claims[0].citations] == ["not_entailed", "not_entailed"]
    failures = verdict.failures  # the repair names the model's own quote, not the code's
    assert failures == ["claim 1: the quote from S1 does not say what the claim says"]


def test_ask_gives_a_claim_the_tier_rejected_a_second_chance(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        store.ingest("hr", *doc("leave.txt", LEAVE, GERMANY))
        question = "How long does Germany top up parental allowance?"
        probe = ScriptedProvider(["{}", "{}"])
        ask(question, store, probe)
        sid = {s.text: s.id for s in probe.requests[0].working_set}
        raw = answer((CLAIM, [(sid[LEAVE], LEAVE)]))
        backend = Table({(CLAIM, GERMANY): "supported"})
        provider = ScriptedProvider([raw])
        result = ask(question, store, provider, AskOptions(entailment=backend))
        assert result.status == "grounded" and len(provider.requests) == 1
        cite = result.verdicts[0].claims[0].citations[0]
        assert cite.anchored and cite.source == sid[GERMANY]
        assert result.verdicts[0].tiers == ("code", "entailment:table", "anchor")


def test_a_claim_leaning_on_one_the_tier_drops_is_dropped_with_it() -> None:
    first = "Employees get 16 weeks of paid parental leave."
    leaning = "This rises to full salary for 14 weeks in Germany."
    raw = answer(
        (first, [("S1", "entitled to 16 weeks of paid parental leave")]),
        (leaning, [("S2", GERMANY.rstrip("."))]),
    )
    verified = verify(WS, raw)
    assert [c.kept for c in verified.claims] == [True, True]  # the first says what "this" is
    table = {(leaning, GERMANY.rstrip(".")): "supported"}  # the first claim is not supported
    out = check_entailment(verified, WS, Table(table))
    assert [(c.kept, c.reason) for c in out.claims] == [
        (False, "no_valid_citation"),
        (False, "claim_fragment"),
    ]
    assert "claim 2 ('This rises to full salary" in (out.claims[1].message or "")
    kept = check_entailment(verified, WS, Table(table), sentences=False)  # the policy's rule off
    assert [c.kept for c in kept.claims] == [False, True]


def test_ask_drops_a_claim_leaning_on_one_the_tier_dropped_unless_the_policy_says_not(
    tmp_path: Path,
) -> None:
    from quotebound.verdict import Policy

    first = "Employees get 16 weeks of paid parental leave."
    leaning = "This rises to full salary for 14 weeks in Germany."
    quote = GERMANY.rstrip(".")
    raw = answer(
        (first, [("S1", "entitled to 16 weeks of paid parental leave")]),
        (leaning, [("S1", quote)]),
    )
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        store.ingest("hr", *doc("l.txt", f"{LEAVE} {GERMANY}"))
        question = "How many weeks of paid parental leave do employees get in Germany?"
        for sentences, served in ((True, []), (False, [leaning])):
            options = AskOptions(
                entailment=Table({(leaning, quote): "supported"}),
                policy=Policy(sentences=sentences),
                source_sentences=False,  # (the first claim's source sentence is not served)
            )
            result = ask(question, store, ScriptedProvider([raw, raw]), options)
            assert [c.text for c in result.claims] == served, sentences


class ByClaim(Backend):
    """Labels looked up by the claim alone."""

    name = "by-claim"
    version = "by-claim-1"

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels

    def judge(self, claim: str, quote: str) -> Judgement:
        return Judgement(self.labels.get(claim, "unrelated"), 0.9, self.name, self.version)  # type: ignore[arg-type]


def test_the_tier_drops_a_claim_leaning_on_the_sentence_of_its_source_it_dropped() -> None:
    """A leaning claim copied from the middle of a source is read with the kept claim citing
    that source; when the tier drops that one, what it leans on is no longer in the answer."""
    from quotebound.verdict import Policy
    from tests.text.test_sentences import lewy_body_sources

    ws = lewy_body_sources()
    texts = [
        ("The LBDA promotes awareness of the disease in the United States.", "S1"),
        ("The Lewy Body Society works in the United Kingdom.", "S2"),
        ("These organizations help families with LBD become advocates.", "S2"),
    ]
    raw = answer(*((text, [(sid, text.rstrip("."))]) for text, sid in texts))
    verified = verify(ws, raw, policy=Policy(strict=True))
    assert [c.kept for c in verified.claims] == [True, True, True]
    backend = ByClaim({texts[0][0]: "supported", texts[2][0]: "supported"})
    out = check_entailment(verified, ws, backend)
    assert [(c.kept, c.reason) for c in out.claims] == [
        (True, None),
        (False, "no_valid_citation"),
        (False, "claim_fragment"),
    ]
    assert "in its source, which the answer does not give" in (out.claims[2].message or "")
