"""The fast answer check: the shipped weights are what ``REFIT`` (answer_check train-fast) fits
on CLAPNQ rows outside the answer-quality sample, evidence that answers passes and on-topic
evidence that does not is refused, and whatever it cannot read fails closed. Real
all-MiniLM-L6-v2 throughout."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quotebound.answering.check import (
    ANSWER_FEATURES,
    REFIT,
    AnswerChecker,
    answer_lexical,
    asked_kind,
    has_kind,
    shipped_answer_weights,
)
from quotebound.entailment.base import EntailmentError
from quotebound.entailment.learned import FastChecker, Weights
from quotebound.providers.base import ProviderError

ROOT = Path(__file__).resolve().parents[2]
CLAPNQ = ROOT.parent / "shared" / "data" / "clapnq" / "clapnq_dev_answerable.jsonl"


@pytest.fixture(scope="module")
def checker() -> Iterator[AnswerChecker]:
    made = AnswerChecker()
    yield made
    made.close()


def test_shipped_weights_are_for_these_features_and_fitted_outside_the_sample() -> None:
    weights = shipped_answer_weights()
    assert weights.features == ANSWER_FEATURES
    assert len(weights.coef) == len(weights.mean) == len(weights.scale) == len(ANSWER_FEATURES)
    assert "outside answer_quality.py's samples" in weights.meta["fitted_on"]
    assert 0.0 < weights.threshold < 1.0
    assert weights.meta["held_out_rows"] >= 100


def _answer_check_script() -> Any:
    from benchmarks.training import answer_check

    return answer_check


@pytest.mark.skipif(not CLAPNQ.exists(), reason="CLAPNQ is not in ../shared/data")
def test_shipped_weights_are_what_the_training_script_produces(checker: AnswerChecker) -> None:
    refit = _answer_check_script().fit_fast(checker)
    shipped = shipped_answer_weights()
    for mine, theirs in (
        (refit.coef, shipped.coef),
        (refit.mean, shipped.mean),
        (refit.scale, shipped.scale),
    ):
        assert mine == pytest.approx(theirs, abs=2e-3)
    assert refit.intercept == pytest.approx(shipped.intercept, abs=2e-3)
    # the threshold the script fits on sentences; the shipped one may be refitted on served
    # answers (fit-served --check fast), which this test cannot reproduce without the model
    assert refit.threshold == pytest.approx(shipped.meta["sentence_threshold"], abs=2e-2)
    assert refit.meta["fitted_on"] == shipped.meta["fitted_on"]
    assert refit.meta["held_out_rows"] == shipped.meta["held_out_rows"]
    assert refit.meta["held_out_balanced_accuracy"] == pytest.approx(
        shipped.meta["held_out_balanced_accuracy"], abs=2e-2
    )


QUESTION = "When did the Berlin Wall fall?"
ANSWERS = "The Berlin Wall fell on the night of 9 November 1989, when the border crossings opened."
ON_TOPIC = "Berlin is home to many museums, and its zoo is the oldest one in Germany."


def test_evidence_that_answers_passes_and_on_topic_evidence_that_does_not_is_refused(
    checker: AnswerChecker,
) -> None:
    yes = checker.answers(QUESTION, ANSWERS)
    no = checker.answers(QUESTION, ON_TOPIC)
    assert yes.supported and yes.backend == "fast-answers" and yes.error is None
    assert not no.supported and no.label == "unrelated" and no.error is None
    assert yes.version.startswith("answers-1.") and "all-MiniLM-L6-v2" in yes.version
    assert yes.detail is not None and yes.detail.startswith("p ")
    p_yes, p_no = checker.probabilities([(QUESTION, ANSWERS), (QUESTION, ON_TOPIC)])
    assert p_yes is not None and p_no is not None and p_yes > p_no


def test_the_kind_of_answer_asked_for_is_read_from_the_question() -> None:
    assert asked_kind("When did the Berlin Wall fall?") == "time"
    assert asked_kind("what year was the first iphone released") == "time"
    assert asked_kind("how many episodes are in season 2") == "number"
    assert asked_kind("who plays the killer in scary movie") == "name"
    assert asked_kind("where is the great barrier reef") == "name"
    assert asked_kind("why did carter boycott the olympics") is None
    assert has_kind("time", QUESTION, ANSWERS) and not has_kind("time", QUESTION, ON_TOPIC)
    assert has_kind("number", "how many weeks", "It lasts 16 weeks.")
    assert not has_kind("number", "how many weeks", "It lasts several weeks.")
    # a name the question already holds is not an answer to "who"
    assert not has_kind("name", "who founded Apple", "Apple was founded in a garage.")
    assert has_kind("name", "who founded Apple", "Apple was founded by Steve Jobs.")
    values, _ = answer_lexical(QUESTION, ON_TOPIC)
    assert values["type_missing"] == 1.0 and values["typed_question"] == 1.0
    values, nearest = answer_lexical(QUESTION, f"{ON_TOPIC} {ANSWERS}")
    assert values["type_missing"] == 0.0 and len(nearest) == 2


def test_the_weights_decide(checker: AnswerChecker) -> None:
    x = checker.features(QUESTION, ANSWERS)
    assert x is not None
    base = shipped_answer_weights()
    never = Weights(base.features, base.mean, base.scale, base.coef, base.intercept, 1.0, {})
    strict = AnswerChecker(never, encoder=checker._encoder)
    assert checker.answers(QUESTION, ANSWERS).supported
    assert not strict.answers(QUESTION, ANSWERS).supported


def test_weights_for_other_features_are_refused() -> None:
    data = shipped_answer_weights().to_dict()
    data["features"] = data["features"][:-1]
    with pytest.raises(EntailmentError, match=r"benchmarks\.training\.answer_check train-fast"):
        Weights.from_dict(data, ANSWER_FEATURES, REFIT)


def test_what_it_cannot_read_whole_fails_closed(checker: AnswerChecker) -> None:
    for question, evidence in (("", ANSWERS), (QUESTION, "  "), ("why " * 400, ANSWERS)):
        judged = checker.answers(question, evidence)
        assert not judged.supported and judged.error is not None and judged.score == 0.0


def test_an_encoder_failure_fails_closed(checker: AnswerChecker) -> None:
    class Broken:
        max_seq_length = 256
        tokenizer = None

        def encode(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("out of memory")

    judged = AnswerChecker(checker.weights, encoder=Broken()).answers(QUESTION, ANSWERS)
    assert not judged.supported and "out of memory" in (judged.error or "")


def test_beside_the_fast_tier_it_shares_its_encoder(checker: AnswerChecker) -> None:
    fast = FastChecker(encoder=checker._encoder)
    shared = AnswerChecker.beside(fast)
    assert shared._encoder is fast.encoder and shared._lock is fast.encoder_lock
    assert shared.answers(QUESTION, ANSWERS).supported


def test_its_extractor_copies_the_sentence_it_scores_as_answering(checker: AnswerChecker) -> None:
    from quotebound import Source, WorkingSet, verify
    from quotebound.contract import build_request

    ws = WorkingSet(
        [
            Source(id="S1", text="Berlin's museums, zoo and parks draw many visitors."),
            Source(id="S2", text=f"{ON_TOPIC} {ANSWERS}"),
        ]
    )
    extractor = checker.extractor()
    assert (
        extractor.model == "extractive-ranked"
        and extractor.min_score == checker.weights.meta["extract_threshold"]
    )
    out = extractor.complete(build_request(QUESTION, ws, "json", extractor.capabilities)).text
    claims = json.loads(out)["claims"]
    assert [c["text"] for c in claims] == [ANSWERS]
    assert verify(ws, out, "json").status == "grounded"
    scores = checker.scores(QUESTION, [ANSWERS, ON_TOPIC])
    assert scores[0] is not None and scores[1] is not None and scores[0] > checker.extract_threshold
    assert scores[1] < checker.weights.threshold
    # no sentence answers: an abstention; an encoder that fails: the attempt fails
    off = build_request(
        "How much does a ticket to the zoo cost?", ws, "json", extractor.capabilities
    )
    assert json.loads(extractor.complete(off).text)["claims"] == []

    class Broken:
        max_seq_length = 256
        tokenizer = None

        def encode(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("out of memory")

    broken = AnswerChecker(checker.weights, encoder=Broken())
    with pytest.raises(EntailmentError, match="out of memory"):
        broken.scores(QUESTION, [ANSWERS])
    req = build_request(QUESTION, ws, "json", extractor.capabilities)
    with pytest.raises(ProviderError, match=r"the ranker failed: .*out of memory"):
        broken.extractor().complete(req)
    # a question too long for the encoder: every sentence unread, the attempt fails
    long = build_request(
        "When did the Berlin Wall fall " * 100 + "?", ws, "json", extractor.capabilities
    )
    with pytest.raises(ProviderError, match="could read no sentence"):
        extractor.complete(long)


def test_the_extract_threshold_is_never_below_the_answer_threshold(checker: AnswerChecker) -> None:
    shipped = shipped_answer_weights()
    assert shipped.meta["extract_threshold"] >= shipped.threshold
    assert "outside answer_quality.py's" in shipped.meta["extract_threshold_fitted_on"]
    low = dataclasses.replace(shipped, meta={**shipped.meta, "extract_threshold": 0.1})
    assert AnswerChecker(low, encoder=checker._encoder).extract_threshold == shipped.threshold
    bare = dataclasses.replace(shipped, meta={})
    assert AnswerChecker(bare, encoder=checker._encoder).extract_threshold == shipped.threshold


def _scored_judge(*yes: float | ProviderError) -> Any:
    """The real judge's code on a scripted provider whose first token says yes with ``p``."""
    import math

    from quotebound.entailment.judge import JudgeBackend
    from quotebound.providers.base import Completion
    from quotebound.providers.scripted import ScriptedProvider

    outputs: list[Completion | ProviderError] = [
        p
        if isinstance(p, ProviderError)
        else Completion("Yes", "m", top_logprobs=(("Yes", math.log(p)), ("No", math.log(1 - p))))
        for p in yes
    ]
    return JudgeBackend(ScriptedProvider(outputs, model="m", logprobs=True))


def test_both_decides_by_the_mean_of_the_fast_probability_and_the_judges(
    checker: AnswerChecker,
) -> None:
    from quotebound.answering.check import BOTH_THRESHOLD, BothAnswerCheck

    question = "How many weeks of parental leave do employees get?"
    evidence = "Employees are entitled to 16 weeks of paid parental leave."
    [fast] = checker.probabilities([(question, evidence)])
    assert fast is not None
    both = BothAnswerCheck(checker, _scored_judge(0.9, 0.2), threshold=(fast + 0.55) / 2)
    yes, no = both.answers(question, evidence), both.answers(question, evidence)
    assert yes.supported and yes.score == pytest.approx((fast + 0.9) / 2, abs=1e-6)
    assert not no.supported and no.score == pytest.approx(1 - (fast + 0.2) / 2, abs=1e-6)
    assert f"fast p {fast:.3f}" in yes.detail and "judge P(yes) 0.900" in yes.detail
    assert yes.backend == "fast+judge" and BothAnswerCheck(checker, _scored_judge()).threshold == (
        BOTH_THRESHOLD
    )


def test_both_fails_closed_when_either_fails_and_its_fallback_ranks_by_the_fast_check(
    checker: AnswerChecker,
) -> None:
    from quotebound.answering.check import BothAnswerCheck
    from quotebound.answering.fallback import fallback_for

    both = BothAnswerCheck(checker, _scored_judge(ProviderError("timeout", "no answer in 60 s")))
    failed = both.answers("How many weeks of leave?", "Employees get 16 weeks of leave.")
    assert not failed.supported and failed.error and "the judge: provider error" in failed.error
    unread = both.answers("   ", "Employees get 16 weeks of leave.")  # the judge is not asked
    assert not unread.supported and unread.error and "empty question" in unread.error
    extract = fallback_for("extractive", both)
    assert extract is not None and extract.model == "extractive-ranked"
    assert extract.min_score == checker.extract_threshold


def test_separation_measures_rank_answerable_above_unanswerable() -> None:
    script = _answer_check_script()
    assert script.auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert script.auc([0.1], [0.9]) == 0.0
    assert script.auc([0.5, 0.9], [0.5, 0.1]) == pytest.approx(0.875)  # a tie counts half
    lo, hi = script.auc_interval([0.9, 0.7, 0.6, 0.3], [0.8, 0.4, 0.2, 0.1])
    assert 0.0 <= lo <= script.auc([0.9, 0.7, 0.6, 0.3], [0.8, 0.4, 0.2, 0.1]) <= hi <= 1.0
    # abstaining on 85% of 20 unanswerable questions (17) takes the cut at the 17th lowest
    unanswerable = [k / 100 for k in range(20)]  # 0.00 .. 0.19: the cut is 0.16
    assert script.false_at([0.16, 0.17, 0.5, 0.9], unanswerable) == 0.25
    assert script.false_at([0.1, 0.15, 0.5, 0.9], unanswerable) == 0.5
