"""`quotebound ask` end to end on the embedded store (no network: loopback at most)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kits.clikit import run

EXTRACTIVE = ["--provider", "extractive"]


@pytest.fixture
def corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(
        "# Parental leave\n\nEmployees are entitled to 16 weeks of paid parental leave unless "
        "local law provides more.\n\nIn Germany, the company tops up statutory parental "
        "allowance to full salary for the first 14 weeks.\n",
        encoding="utf-8",
    )
    for n, topic in enumerate(["expenses", "laptops", "holidays", "security", "travel"]):
        (docs / f"{topic}.txt").write_text(
            f"The {topic} policy number {n} is reviewed every year by the owning team.\n",
            encoding="utf-8",
        )
    rc, _, _ = run(
        ["ingest", str(docs), "--corpus", "hr", "--url-prefix", "https://hr.example/"], capsys
    )
    assert rc == 0


@pytest.mark.usefixtures("corpus")
def test_ask_answers_with_cards_and_a_reopenable_trace(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        ["ask", "How many weeks of parental leave in Germany?", "--json", *EXTRACTIVE], capsys
    )
    assert rc == 0
    answer = json.loads(out)
    assert answer["status"] == "grounded"
    assert any("14 weeks" in c["text"] for c in answer["claims"])
    card = answer["cards"][0]
    assert card["document"] == "hr:leave.md" and card["url"] == "https://hr.example/leave.md"
    assert card["quotes"][0]["link"].startswith("https://hr.example/leave.md#:~:text=")
    rc, out, _ = run(["trace", answer["trace_id"], "--json"], capsys)
    assert rc == 0 and json.loads(out)["status"] == "grounded"

    rc, out, _ = run(["ask", "How many weeks of parental leave in Germany?", *EXTRACTIVE], capsys)
    assert "[1] Parental leave (hr:leave.md" in out and "status grounded" in out


@pytest.mark.usefixtures("corpus")
def test_ask_abstains_helpfully(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["ask", "Who won the chess olympiad?", "--json", *EXTRACTIVE], capsys)
    assert rc == 0
    answer = json.loads(out)
    assert answer["status"] == "abstained" and answer["claims"] == []
    assert answer["abstention"]["next_step"]
    rc, out, _ = run(["ask", "Who won the chess olympiad?", *EXTRACTIVE], capsys)
    assert "Not answered from the documents." in out and "next step:" in out


@pytest.mark.usefixtures("corpus")
def test_provider_failure_is_exit_1_with_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ask", "parental leave weeks", "--provider", "openai", "--model", "m", "--json"]
    args += ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-test-secret"]
    rc, out, _ = run(args, capsys)
    assert rc == 1
    answer = json.loads(out)
    assert answer["status"] == "provider_error" and answer["trace_id"]
    assert "sk-test-secret" not in out


def test_ask_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(["ask", "x", "--provider", "openai"], capsys)
    assert rc == 2 and "needs --model" in err
    rc, _, err = run(["ask", "x", "--provider", "nope"], capsys)
    assert rc == 2 and "Invalid value for '--provider'" in err


@pytest.mark.usefixtures("corpus")
def test_ask_runs_the_fast_tier_by_default_and_off_skips_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every served citation was judged by the default tier, and the verdict says which ran."""
    args = ["ask", "How many weeks of parental leave in Germany?", "--json", *EXTRACTIVE]
    rc, out, _ = run(args, capsys)
    assert rc == 0
    answer = json.loads(out)
    final = answer["verdicts"][-1]
    assert final["tiers"] == ["code", "entailment:fast"]
    kept = [c for claim in final["claims"] for c in claim["citations"] if c["valid"]]
    assert kept and all(c["entailment"]["backend"] == "fast" for c in kept)
    assert all(c["entailment"]["label"] == "supported" for c in kept)
    rc, out, _ = run([*args, "--entailment", "off"], capsys)
    assert rc == 0 and json.loads(out)["verdicts"][-1]["tiers"] == ["code"]


@pytest.mark.usefixtures("corpus")
def test_the_judge_beside_the_extractive_provider_is_the_packaged_judge_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The extractive provider cannot judge, so the judge runs on its own packaged model (the
    one its threshold was fitted for), not on the answering provider."""
    from quotebound.entailment.judge import JUDGE_MODEL

    args = ["ask", "How many weeks of parental leave in Germany?", "--json", *EXTRACTIVE]
    rc, out, _ = run([*args, "--entailment", "judge"], capsys)
    assert rc == 0
    final = json.loads(out)["verdicts"][-1]
    assert final["tiers"] == ["code", "entailment:judge"]
    judged = [c["entailment"] for claim in final["claims"] for c in claim["citations"]]
    judged = [j for j in judged if j]
    assert judged and all(j["version"].startswith(f"judge-2+local:{JUDGE_MODEL}") for j in judged)


@pytest.mark.usefixtures("corpus")
def test_the_answer_check_runs_on_the_packaged_judge_model_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The fast check by default, none when off; ``judge`` (or ``on``), beside a provider that
    cannot judge, runs the packaged judge model on the verified quotes and either serves the
    answer or turns it into an abstention."""
    from quotebound.entailment.judge import JUDGE_MODEL

    args = ["ask", "How many weeks of parental leave do employees get?", "--json", *EXTRACTIVE]
    rc, out, _ = run(args, capsys)
    assert rc == 0 and json.loads(out)["answer_check"]["backend"] == "fast-answers"
    rc, out, _ = run([*args, "--answer-check", "off"], capsys)
    assert rc == 0 and json.loads(out)["answer_check"] is None
    rc, out, _ = run([*args, "--answer-check", "on"], capsys)
    assert rc == 0
    answer = json.loads(out)
    check = answer["answer_check"]
    assert check["backend"] == "judge" and f"local:{JUDGE_MODEL}" in check["version"]
    assert check["detail"].startswith("P(yes) ")
    if check["label"] == "supported":
        assert answer["status"] == "grounded" and answer["claims"]
    else:
        assert answer["status"] == "abstained" and answer["claims"] == []
        assert "do not answer what was asked" in answer["abstention"]["missing"]
    assert answer["counts"]["answer_check_refused"] == int(check["label"] != "supported")
    # both: the fast check and the same judge read together, the mean deciding
    rc, out, _ = run([*args, "--answer-check", "both"], capsys)
    assert rc == 0
    answer = json.loads(out)
    check = answer["answer_check"]
    assert check["backend"] == "fast+judge" and f"local:{JUDGE_MODEL}" in check["version"]
    assert check["detail"].startswith("mean ") and "judge P(yes) " in check["detail"]
    assert (answer["status"] == "grounded") == (check["label"] == "supported")


@pytest.mark.usefixtures("corpus")
def test_the_fast_answer_check_serves_an_answer_it_accepts_and_abstains_on_one_it_refuses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--answer-check fast``: MiniLM and the fitted features judge the verified quotes (the
    support tier's MiniLM shared); an answer it accepts is served, one it refuses becomes an
    abstention, the verified claims kept in the trace's verdicts."""
    from dataclasses import replace

    import quotebound.answering.check as answers

    question = "How many weeks of parental leave do employees get in Germany?"
    args = ["ask", question, "--json", *EXTRACTIVE, "--answer-check", "fast"]
    rc, out, _ = run(args, capsys)
    assert rc == 0
    answer = json.loads(out)
    check = answer["answer_check"]
    assert check["backend"] == "fast-answers" and check["label"] == "supported"
    assert answer["status"] == "grounded" and answer["counts"]["answer_check_refused"] == 0
    strict = replace(answers.shipped_answer_weights(), threshold=1.01)  # refuses everything
    monkeypatch.setattr(answers, "shipped_answer_weights", lambda: strict)
    rc, out, _ = run(args, capsys)
    assert rc == 0
    answer = json.loads(out)
    assert answer["status"] == "abstained" and answer["claims"] == []
    assert answer["answer_check"]["label"] == "unrelated"
    assert "do not answer what was asked" in answer["abstention"]["missing"]
    assert answer["verdicts"][0]["counts"]["kept"] >= 1  # verified, yet no answer
    assert len(answer["verdicts"]) == 1  # the extractive provider is not its own fallback
    assert answer["counts"]["answer_check_refused"] == 1
    # `trace` says why, weeks later: the check's judgement, with its numbers
    rc, out, _ = run(["trace", answer["trace_id"]], capsys)
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("answer check of attempt 1: "))
    assert "does not answer (fast-answers, " in line and "vs threshold 1.01" in line
    rc, out, _ = run(["trace", answer["trace_id"], "--json"], capsys)
    assert json.loads(out)["answer_checks"] == [{"attempt": 1, **answer["answer_check"]}]


def test_local_provider_errors_are_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(["ask", "x", "--model", "gpt-5"], capsys)
    assert rc == 2 and "unknown local model 'gpt-5'" in err
    rc, _, err = run(["ask", "x", "--model-path", str(tmp_path / "none.gguf")], capsys)
    assert rc == 2 and "no GGUF file" in err


def _no_entail_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a light install: the fast checker cannot be made (its encoder is not installed)."""
    import quotebound.entailment as entailment
    from quotebound.entailment import EntailmentError
    from quotebound.entailment.heuristic import EXTRA_HINT

    def missing(*args: object, **kwargs: object) -> object:
        raise EntailmentError(f"the entailment tier needs sentence_transformers: {EXTRA_HINT}")

    monkeypatch.setattr(entailment, "make_backend", missing)  # (what quotebound.defaults makes)


@pytest.mark.usefixtures("corpus")
def test_a_light_install_skips_the_default_tier_with_a_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_entail_extra(monkeypatch)
    args = ["ask", "How many weeks of parental leave in Germany?", "--json", *EXTRACTIVE]
    rc, out, err = run(args, capsys)
    assert rc == 0 and json.loads(out)["verdicts"][-1]["tiers"] == ["code"]  # said, not hidden
    assert "warning: the fast entailment tier is off" in err and "quotebound[entail]" in err
    # a tier the user named is never skipped: the missing extra is the error
    rc, out, _ = run([*args, "--entailment", "fast"], capsys)
    assert rc == 2 and json.loads(out)["error"]["code"] == "entailment_setup"


@pytest.mark.usefixtures("corpus")
def test_a_light_install_skips_the_default_answer_check_with_a_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No MiniLM: the default answer check is skipped, said on stderr (and so the fallback,
    which runs only with a check); one the user named is the error."""
    import quotebound.answering.check as answers
    from quotebound.entailment import EntailmentError
    from quotebound.entailment.heuristic import EXTRA_HINT

    def missing(*args: object, **kwargs: object) -> object:
        raise EntailmentError(f"all-MiniLM-L6-v2 needs sentence_transformers: {EXTRA_HINT}")

    _no_entail_extra(monkeypatch)
    monkeypatch.setattr(answers, "load_minilm", missing)
    args = ["ask", "How many weeks of parental leave in Germany?", "--json", *EXTRACTIVE]
    rc, out, err = run(args, capsys)
    assert rc == 0 and json.loads(out)["answer_check"] is None
    assert "warning: the fast answer check is off" in err and "--answer-check off" in err
    rc, out, _ = run([*args, "--answer-check", "fast"], capsys)
    assert rc == 2 and json.loads(out)["error"]["code"] == "entailment_setup"


def test_ensure_installed_names_the_extra_and_loads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from quotebound.entailment import EntailmentError, ensure_installed

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    with pytest.raises(EntailmentError, match=r"quotebound\[entail\]"):
        ensure_installed("fast")
    with pytest.raises(EntailmentError, match="unknown"):
        ensure_installed("bert")
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "xllamacpp" else real(name, *a),
    )
    with pytest.raises(EntailmentError, match=r"quotebound\[local\]"):
        ensure_installed("cascade")


def test_the_fallback_beside_each_answer_check() -> None:
    """ask's fallback: ranked by the fast check beside it, by the question's words beside the
    judge's or when asked for (covering), none without a check or when off; serve's likewise
    (a config without a check keeps the covering extract, as before)."""
    from types import SimpleNamespace

    from quotebound.answering.check import AnswerChecker
    from quotebound.answering.fallback import fallback_for
    from quotebound.entailment.judge import JudgeBackend
    from quotebound.providers import ExtractiveProvider
    from quotebound.server.answers import _fallback
    from quotebound.server.state import ServerConfig

    fast = AnswerChecker(encoder=object())  # the extractor is made without the encoder
    ranked = fallback_for("extractive", fast)
    assert isinstance(ranked, ExtractiveProvider) and ranked.model == "extractive-ranked"
    assert ranked.rank == fast.scores and ranked.min_score == fast.extract_threshold
    judge = JudgeBackend(ExtractiveProvider())
    for kind, checker in (("extractive", judge), ("covering", fast), ("covering", judge)):
        plain = fallback_for(kind, checker)
        assert isinstance(plain, ExtractiveProvider) and plain.rank is None, (kind, checker)
        assert plain.model == "extractive"
    assert fallback_for("extractive", None) is None and fallback_for("covering", None) is None
    assert fallback_for("off", fast) is None
    with pytest.raises(ValueError, match="unknown fallback 'ranked'"):
        fallback_for("ranked", fast)
    state = SimpleNamespace(
        config=SimpleNamespace(fallback=True), checker=SimpleNamespace(get=lambda: fast)
    )
    served = _fallback(state)  # type: ignore[arg-type]
    assert isinstance(served, ExtractiveProvider) and served.model == "extractive-ranked"
    state.config.fallback = "covering"
    covering = _fallback(state)  # type: ignore[arg-type]
    assert isinstance(covering, ExtractiveProvider) and covering.rank is None
    state.config.fallback = "extractive"
    assert _fallback(state).model == "extractive-ranked"  # type: ignore[arg-type,union-attr]
    state.checker = None
    unchecked = _fallback(state)  # type: ignore[arg-type]
    assert isinstance(unchecked, ExtractiveProvider) and unchecked.rank is None
    for off in (False, "off"):
        state.config.fallback = off
        assert _fallback(state) is None  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown fallback 'yes'"):
        ServerConfig(fallback="yes")


def test_auto_reads_with_the_judge_only_where_the_answering_model_is_the_judges_own() -> None:
    """``--answer-check auto`` (the default): the fast check and the judge together when the
    answering model is the packaged 1.5B (the judge then runs on that very model, no second
    one loaded), the fast check alone beside any other provider."""
    from quotebound.answering.check import AnswerChecker, BothAnswerCheck
    from quotebound.defaults import make_answer_check
    from quotebound.entailment.judge import JUDGE_MODEL
    from quotebound.providers.scripted import ScriptedProvider

    class Local(ScriptedProvider):
        name = "local"  # the answering model's name and file, as the local provider has them

    own = Local([], model=JUDGE_MODEL, logprobs=True)
    both = make_answer_check("auto", own, None)
    assert isinstance(both, BothAnswerCheck) and both.judge.provider is own
    assert not both.owns_judge  # the judge is the answering model: closed with it
    other = Local([], model="qwen2.5-coder-0.5b-instruct-q4_k_m", logprobs=True)
    fast = make_answer_check("auto", other, None)
    assert isinstance(fast, AnswerChecker)
    scripted = make_answer_check("auto", ScriptedProvider([]), None)
    assert isinstance(scripted, AnswerChecker)
    assert make_answer_check("off", own, None) is None
    for made in (both.fast, fast, scripted):
        made.close()


def test_serve_refuses_both_where_the_judge_would_need_a_second_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve --answer-check both`` judges on the served model; beside one that cannot judge
    (the extractive provider) it is a clear exit 2 before anything is served, and ``auto``
    there is the fast check (``chosen_check``)."""
    from quotebound.answering.check import chosen_check
    from quotebound.entailment.judge import JUDGE_MODEL
    from quotebound.providers import ExtractiveProvider
    from quotebound.providers.scripted import ScriptedProvider

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    args = ["serve", "--provider", "extractive", "--answer-check", "both", "--store", url]
    rc, _, err = run(args, capsys)
    assert rc == 2 and "--answer-check both judges on the served model" in err
    assert "Traceback" not in err and "use --answer-check fast" in err

    class Local(ScriptedProvider):
        name = "local"

    assert chosen_check("auto", ExtractiveProvider()) == "fast"
    assert chosen_check("auto", Local([], model=JUDGE_MODEL, logprobs=True)) == "both"
    assert chosen_check("auto", Local([], model=JUDGE_MODEL)) == "fast"  # no log-probabilities
    assert chosen_check("on", ExtractiveProvider()) == "judge"


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("claude", "write NAME=PROVIDER[:MODEL][@URL]"),
        ("=anthropic", "write NAME=PROVIDER[:MODEL][@URL]"),
        ("claude=gemini:pro", "unknown provider 'gemini'"),
        ("quotebound-extractive=anthropic", "is already served"),
        ("vllm=openai:qwen@ftp://host/v1", "must start with http:// or https://"),
        ("claude=anthropic", "name the model: claude=anthropic:MODEL"),
        ("small=local@http://127.0.0.1:9/v1", "a URL is for the openai or anthropic provider"),
        ("small=local:no-such-model", "unknown local model"),  # made now: exit 2, not a 503
    ],
)
def test_serve_names_a_backend_it_cannot_serve(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    backend: str,
    said: str,
) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    args = ["serve", "--provider", "extractive", "--answer-check", "off", "--entailment", "off"]
    rc, _, err = run([*args, "--backend", backend, "--store", url], capsys)
    assert rc == 2 and said in err and "Traceback" not in err


def test_a_backends_model_and_url_are_read_whole() -> None:
    from quotebound.cli.admin import _backends
    from quotebound.providers import ExtractiveProvider

    given = (
        "ollama=openai:qwen2.5:7b@http://127.0.0.1:11434/v1",
        "claude=anthropic:claude-sonnet-4-5@20250929",  # an @ of the model's own
        "plain=extractive",
    )
    assert _backends(given, ExtractiveProvider()) == [
        ["ollama", "openai", "qwen2.5:7b", "http://127.0.0.1:11434/v1"],
        ["claude", "anthropic", "claude-sonnet-4-5@20250929", None],
        ["plain", "extractive", None, None],
    ]


def test_each_worker_makes_the_backends_it_was_given() -> None:
    import json

    from quotebound.providers import ExtractiveProvider
    from quotebound.server.workers import ServeOptions

    options = ServeOptions(provider="extractive", backends=[["plain", "extractive", None, None]])
    again = ServeOptions(**json.loads(options.to_env()))  # what each worker reads
    config = again.config(ExtractiveProvider())
    assert list(config.backends) == ["plain"]
    assert isinstance(config.backends["plain"](), ExtractiveProvider)
