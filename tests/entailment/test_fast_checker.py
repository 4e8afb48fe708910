"""The fast checker (the default entailment tier) and the cascade: the shipped weights are what
``benchmarks.training.train_fast_checker`` fits on AttributionBench dev, they are loaded and
used, and every pair the checker cannot read whole fails closed. Real all-MiniLM-L6-v2
throughout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from quotebound.entailment import make_backend
from quotebound.entailment.base import EntailmentError
from quotebound.entailment.cascade import CascadeBackend, shipped_band
from quotebound.entailment.judge import JudgeBackend
from quotebound.entailment.learned import FEATURES, FastChecker, Weights, shipped_weights
from quotebound.providers.base import ProviderError
from quotebound.providers.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "attributionbench" / "dev_all_subset_balanced.jsonl"
LEAVE = "In Germany, employees are entitled to 16 weeks of paid parental leave."


@pytest.fixture(scope="module")
def fast() -> Iterator[FastChecker]:
    checker = FastChecker()
    yield checker
    checker.close()


def test_shipped_weights_are_for_these_features_and_fitted_on_dev() -> None:
    weights = shipped_weights()
    assert weights.features == FEATURES
    assert len(weights.coef) == len(weights.mean) == len(weights.scale) == len(FEATURES)
    assert "dev" in weights.meta["fitted_on"] and "test" not in weights.meta["fitted_on"]
    assert 0.0 < weights.threshold < 1.0


@pytest.mark.skipif(not DEV.exists(), reason="AttributionBench dev is not in ../shared/data")
def test_shipped_weights_are_what_the_training_script_produces(fast: FastChecker) -> None:
    from benchmarks.training import train_fast_checker

    refit = train_fast_checker.fit(FastChecker(weights=fast.weights, encoder=fast._encoder))
    shipped = shipped_weights()
    assert refit.features == shipped.features
    # Newton's method reaches the one optimum; the tolerance covers float noise in the encoder
    for mine, theirs in (
        (refit.coef, shipped.coef),
        (refit.mean, shipped.mean),
        (refit.scale, shipped.scale),
    ):
        assert mine == pytest.approx(theirs, abs=2e-3)
    assert refit.intercept == pytest.approx(shipped.intercept, abs=2e-3)
    assert refit.threshold == pytest.approx(shipped.threshold, abs=2e-2)
    assert refit.meta["fitted_on"] == shipped.meta["fitted_on"]


def test_a_close_paraphrase_is_supported_and_an_off_topic_quote_is_not(fast: FastChecker) -> None:
    good = fast.judge("Employees in Germany get 16 weeks of paid parental leave.", LEAVE)
    assert good.supported and good.backend == "fast" and good.error is None
    off = fast.judge("The hotel cap is 180 EUR per night.", LEAVE)
    assert off.label == "unrelated" and not off.supported
    assert "threshold" in (off.detail or "")


def test_a_negated_quote_is_contradicted_whatever_the_model_says(fast: FastChecker) -> None:
    judgement = fast.judge(
        "Contractors are eligible for company-paid parental leave.",
        "Contractors are not eligible for company-paid parental leave.",
    )
    assert judgement.label == "contradicted" and "negation" in (judgement.detail or "")


def test_a_changed_number_lowers_the_probability(fast: FastChecker) -> None:
    same, changed = fast.features_many(
        [
            ("Employees in Germany get 16 weeks of paid parental leave.", LEAVE),
            ("Employees in Germany get 20 weeks of paid parental leave.", LEAVE),
        ]
    )
    assert same is not None and changed is not None
    number = FEATURES.index("number_share")
    assert (same[number], changed[number]) == (1.0, 0.0)
    assert fast.probability(changed) < fast.probability(same)


def test_the_weights_decide(fast: FastChecker) -> None:
    """The same features, two sets of weights: the judgement follows the weights given."""
    pair = ("Employees in Germany get 16 weeks of paid parental leave.", LEAVE)
    yes = FastChecker(weights=replace(shipped_weights(), intercept=50.0), encoder=fast._encoder)
    no = FastChecker(weights=replace(shipped_weights(), intercept=-50.0), encoder=fast._encoder)
    assert yes.judge(*pair).supported and not no.judge(*pair).supported


def test_weights_for_other_features_are_refused() -> None:
    data = shipped_weights().to_dict()
    data["features"] = data["features"][:-1]
    with pytest.raises(EntailmentError, match="refit"):
        Weights.from_dict(data)
    assert Weights.from_dict(json.loads(json.dumps(shipped_weights().to_dict()))) == (
        shipped_weights()
    )


def test_what_it_cannot_read_whole_fails_closed(fast: FastChecker) -> None:
    too_long = " ".join(f"word{n}" for n in range(600))  # over MiniLM's 256 tokens
    for claim, quote in ((too_long, LEAVE), ("", LEAVE), ("A claim.", "  ")):
        judgement = fast.judge(claim, quote)
        assert judgement.error is not None and not judgement.supported


def test_an_encoder_failure_fails_closed() -> None:
    class Broken:
        def encode(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("out of memory")

    judgement = FastChecker(encoder=Broken()).judge("Leave is 16 weeks.", LEAVE)
    assert judgement.error is not None and "out of memory" in judgement.error


def test_make_backend_makes_the_fast_checker_with_the_shipped_weights() -> None:
    backend = make_backend("fast")
    try:
        assert isinstance(backend, FastChecker) and backend.weights == shipped_weights()
    finally:
        backend.close()


# -- the cascade ------------------------------------------------------------------------------


def _cascade(
    fast: FastChecker, band: tuple[float, float], outputs: list[str | ProviderError]
) -> tuple[CascadeBackend, ScriptedProvider]:
    provider = ScriptedProvider(outputs)
    return CascadeBackend(fast, JudgeBackend(provider), band), provider


PAIRS = [
    ("Employees in Germany get 16 weeks of paid parental leave.", LEAVE),
    ("The hotel cap is 180 EUR per night.", LEAVE),
]


def test_the_cascade_sends_only_the_unsure_band_to_the_judge(fast: FastChecker) -> None:
    everything, provider = _cascade(fast, (0.0, 1.01), ["unrelated", "supported"])
    judged = everything.judge_many(PAIRS)
    assert everything.judged == 2 and len(provider.requests) == 2
    assert [j.label for j in judged] == ["unrelated", "supported"]  # the judge's word stands
    assert all(j.backend == "cascade" and "unsure" in (j.detail or "") for j in judged)
    nothing, provider = _cascade(fast, (0.5, 0.5), [])
    alone = [fast.judge(*pair) for pair in PAIRS]
    assert [j.label for j in nothing.judge_many(PAIRS)] == [j.label for j in alone]
    assert nothing.judged == 0 and provider.requests == []


def test_the_cascade_keeps_the_fast_checkers_contradiction_veto(fast: FastChecker) -> None:
    cascade, provider = _cascade(fast, (0.0, 1.01), ["supported"])  # the judge would pass it
    judgement = cascade.judge(
        "Contractors are eligible for company-paid parental leave.",
        "Contractors are not eligible for company-paid parental leave.",
    )
    assert judgement.label == "contradicted" and provider.requests == []


def test_the_cascade_fails_closed_when_the_judge_fails(fast: FastChecker) -> None:
    cascade, _ = _cascade(fast, (0.0, 1.01), [ProviderError("timeout", "slow")])
    judgement = cascade.judge(*PAIRS[0])
    assert judgement.error is not None and not judgement.supported


def test_a_pair_the_fast_checker_cannot_read_goes_to_the_judge(fast: FastChecker) -> None:
    cascade, _ = _cascade(fast, (0.5, 0.5), ["supported"])
    too_long = " ".join(f"word{n}" for n in range(600))
    judgement = cascade.judge(too_long, too_long)
    assert cascade.judged == 1 and "could not read" in (judgement.detail or "")
    assert judgement.error is not None  # and the judge, which never cuts a claim, fails closed


def test_the_shipped_band_is_a_band() -> None:
    low, high = shipped_band()
    assert 0.0 <= low <= high <= 1.0
