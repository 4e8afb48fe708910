"""The evaluation harness: every metric on hand-made cases with hand-computed answers, every
loader on tiny files and on the first rows of the real ones (skipped where absent), the
`eval` command end to end, and the trace sampler on a temporary SQLite store."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from quotebound.entailment.base import Backend, EntailmentError, Judgement
from quotebound.entailment.tier import evidence_text
from quotebound.errors import InputError
from quotebound.evaluation import command, metrics
from quotebound.evaluation.command import eval_cmd, parse_gates
from quotebound.evaluation.loaders import detect_kind, load_dataset, own_example, wice_quote
from quotebound.evaluation.run import answer_summary, citation_evidence, outcome_of_output
from quotebound.evaluation.sample import allocate, sample_traces, stratum
from quotebound.sources import Source, WorkingSet
from quotebound.store import TraceAttempt, TraceRecord, TraceSource, open_store
from quotebound.verdict import Verdict
from quotebound.verify import verify

DATA = Path(__file__).resolve().parents[1] / "data" / "eval"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
_WORDS = re.compile(r"[a-z0-9]{3,}")


def words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


class WordBackend(Backend):
    """Deterministic: supported when every word (3+ characters) of the claim is in the quote;
    contradicted when the quote says "not" and the claim does not; else unrelated."""

    name: ClassVar[str] = "words"
    version = "test-1"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.closed = False

    def judge(self, claim: str, quote: str) -> Judgement:
        self.calls.append((claim, quote))
        if words(claim) <= words(quote):
            return Judgement("supported", 0.9, self.name, self.version)
        if "not" in words(quote) and "not" not in words(claim):
            return Judgement("contradicted", 0.8, self.name, self.version)
        return Judgement("unrelated", 0.7, self.name, self.version, detail="words missing")

    def close(self) -> None:
        self.closed = True


class FailingBackend(WordBackend):
    """Fails closed on every claim about cats: an error judgement, never a pass."""

    def judge(self, claim: str, quote: str) -> Judgement:
        if "cats" in claim.lower():
            return self.failed("model answered 'maybe'")
        return super().judge(claim, quote)


# --- metrics -------------------------------------------------------------------------------


def test_wilson_matches_the_formula_by_hand() -> None:
    # 8/10: centre (0.8 + z²/20) / (1 + z²/10), half-width z/(1+z²/10) * sqrt(.016 + z²/400)
    z2 = metrics.Z95**2
    centre = (0.8 + z2 / 20) / (1 + z2 / 10)
    half = metrics.Z95 / (1 + z2 / 10) * math.sqrt(0.8 * 0.2 / 10 + z2 / 400)
    low, high = metrics.wilson(8, 10)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)  # the published table value
    assert metrics.wilson(0, 10) == pytest.approx((0.0, z2 / 10 / (1 + z2 / 10)))
    assert metrics.wilson(10, 10)[1] == pytest.approx(1.0)


def test_proportion_over_nothing_has_no_value() -> None:
    est = metrics.proportion(0, 0)
    assert est.value is None and est.n == 0 and est.to_dict()["value"] is None
    with pytest.raises(ValueError):
        metrics.wilson(3, 2)


def test_binary_classification_by_hand() -> None:
    # gold S S S N N N N N; predicted S S N | N N N S S
    gold = ["supported"] * 3 + ["not_supported"] * 5
    pred = ["supported", "supported", "not_supported"] + ["not_supported"] * 3 + ["supported"] * 2
    c = metrics.classification(gold, pred, ("supported", "not_supported"), seed=1)
    assert c.matrix == [[2, 1], [2, 3]]
    assert c.accuracy.value == pytest.approx(5 / 8)
    assert c.balanced_accuracy.value == pytest.approx((2 / 3 + 3 / 5) / 2)
    s, n = c.per_label
    assert (s.precision.value, s.recall.value) == pytest.approx((2 / 4, 2 / 3))
    assert s.f1.value == pytest.approx(2 * 2 / (2 * 2 + 2 + 1))  # 2TP / (2TP + FP + FN)
    assert (n.precision.value, n.recall.value, n.f1.value) == pytest.approx((3 / 4, 3 / 5, 6 / 9))
    assert s.support == 3 and s.predicted == 4
    assert s.precision.low == pytest.approx(metrics.wilson(2, 4)[0])
    ba = c.balanced_accuracy
    assert ba.low is not None and ba.high is not None
    assert 0 <= ba.low <= ba.value <= ba.high <= 1  # type: ignore[operator]


def test_three_labels_balanced_accuracy_skips_labels_absent_from_gold() -> None:
    gold = ["supported", "supported", "unrelated", "unrelated"]
    pred = ["supported", "contradicted", "unrelated", "supported"]
    c = metrics.classification(gold, pred, ("supported", "contradicted", "unrelated"))
    assert c.balanced_accuracy.value == pytest.approx((1 / 2 + 1 / 2) / 2)  # no gold contradicted
    contradicted = c.per_label[1]
    assert contradicted.recall.value is None and contradicted.precision.value == 0
    assert contradicted.f1.value == 0.0  # 2*0 / (0 + 1 + 0)


def test_bootstrap_is_seeded_and_degenerate_when_all_correct() -> None:
    labels = ("supported", "not_supported")
    gold = ["supported", "not_supported"] * 10
    pred = ["supported", "not_supported"] * 7 + ["not_supported", "supported"] * 3
    a = metrics.classification(gold, pred, labels, seed=7).balanced_accuracy
    b = metrics.classification(gold, pred, labels, seed=7).balanced_accuracy
    assert (a.low, a.high) == (b.low, b.high)
    others = {
        (c.low, c.high)
        for c in (
            metrics.classification(gold, pred, labels, seed=s).balanced_accuracy for s in range(8)
        )
    }
    assert len(others) > 1  # the seed, and only the seed, moves the interval
    perfect = metrics.classification(gold, gold, labels).balanced_accuracy
    assert (perfect.value, perfect.low, perfect.high) == (1.0, 1.0, 1.0)


def test_quantile_interpolates_like_numpy() -> None:
    assert metrics._quantile([0.0, 1.0, 2.0, 3.0, 4.0], 0.025) == pytest.approx(0.1)
    assert metrics._quantile([5.0], 0.975) == 5.0


def _facts_entail(claim: str, evidence: str) -> bool:
    """Entailment by hand: every letter of the claim (its facts) is a word of the evidence."""
    return set(claim.split()) <= set(evidence.split())


def test_alce_recall_and_precision_by_hand() -> None:
    claims = [
        # union supports; c1 alone supports (precise); c2 alone does not and the rest does
        # (irrelevant); c3 has no checkable text and the rest does (irrelevant): 1 of 3
        metrics.CitedClaim("a b", ("a b", "a", None)),
        # neither alone, both together: both needed, 2 of 2
        metrics.CitedClaim("a b", ("a", "b")),
        # not supported: its citation is not precise, 0 of 1
        metrics.CitedClaim("x", ("a",)),
        # no citation: not supported, no citation counted
        metrics.CitedClaim("a", ()),
    ]
    scores = [metrics.score_claim(c, _facts_entail) for c in claims]
    assert [s.supported for s in scores] == [True, True, False, False]
    assert [s.precise for s in scores] == [1, 2, 0, 0]
    assert scores[0].irrelevant == (1, 2)
    quality = metrics.citation_quality(scores)
    assert (quality.recall.hits, quality.recall.n) == (2, 4)
    assert (quality.precision.hits, quality.precision.n) == (3, 6)
    assert quality.recall.value == 0.5 and quality.precision.value == 0.5


def test_alce_lone_citation_is_never_irrelevant() -> None:
    calls: list[tuple[str, str]] = []

    def entail(claim: str, evidence: str) -> bool:
        calls.append((claim, evidence))
        return True

    score = metrics.score_claim(metrics.CitedClaim("a", ("a",)), entail)
    assert score.precise == 1 and calls == [("a", "a")]  # one judgement, not three


def test_abstention_rates_by_hand() -> None:
    items = [
        (True, False),
        (True, True),
        (True, False),
        (True, False),
        (False, True),
        (False, False),
    ]
    rates = metrics.abstention(items)
    assert rates.false_abstention.value == 1 / 4  # 1 of 4 answerable abstained
    assert rates.missed_abstention.value == 1 / 2  # 1 of 2 unanswerable answered
    assert metrics.abstention([(True, False)]).missed_abstention.value is None


def test_citation_validity_counts_id_and_span_failures() -> None:
    ws_sources = (Source("S1", "The office opens at nine every weekday morning."),)
    output = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": "The office opens at nine.",
                    "citations": [
                        {"source": "S1", "quote": "The office opens at nine"},
                        {"source": "S1", "quote": "The office opens at ten"},
                        {"source": "S7", "quote": "The office opens at nine"},
                    ],
                }
            ],
        }
    )
    example = own_example(
        {"question": "q", "sources": [s.to_dict() for s in ws_sources], "output": output}, "test"
    )
    summary = answer_summary([outcome_of_output(example)], None, seed=0)
    assert summary["citation_validity"]["hits"] == 1
    assert summary["citation_validity"]["n"] == 3
    assert "citation_recall" not in summary  # no backend: no entailment metric


def test_citation_evidence_is_what_the_entailment_tier_reads() -> None:
    ws = WorkingSet(
        (
            Source("S1", "The office opens at nine every weekday morning."),
            Source("S2", "Lunch is served at noon in the hall."),
        )
    )
    quoted = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": "The office opens at nine.",
                    "citations": [
                        {"source": "S1", "quote": "the OFFICE opens at nine"},
                        {"source": "S1", "quote": "opens at ten on Sundays"},
                    ],
                }
            ],
        }
    )
    cits = [c for claim in verify(ws, quoted, "json").claims for c in claim.citations]
    cits += verify(ws, "Lunch is served at noon [S2].", "inline").claims[0].citations
    got = [citation_evidence(c, ws) for c in cits]
    # the verified span as the source writes it, nothing for a quote not found, the whole
    # source for a citation without a quote
    assert got == ["The office opens at nine", None, "Lunch is served at noon in the hall."]
    for c, text in zip(cits, got, strict=True):
        if c.valid:
            assert text == evidence_text(ws, c.source, c.quote, c.parts)


# --- loaders -------------------------------------------------------------------------------


def test_attributionbench_tiny_file() -> None:
    ds = load_dataset([DATA / "attributionbench_tiny.jsonl"])
    assert ds.kind == "attributionbench" and ds.task == "pairs"
    assert [p.id for p in ds.pairs] == ["ab1", "ab2", "ab3", "ab5", "ab6"]
    assert ds.skipped == {"no_reference_text": 1}
    assert ds.pairs[0].claim == "Neil Armstrong walked on the Moon."  # "[1]" marker stripped
    assert [p.gold for p in ds.pairs] == [
        "supported",
        "not_supported",
        "supported",
        "not_supported",
        "supported",
    ]
    assert ds.pairs[-1].quote == "Cats are small domesticated mammals.\n\nThey purr."
    assert load_dataset([DATA / "attributionbench_tiny.jsonl"], limit=2).pairs[-1].id == "ab2"


def test_wice_quote_choice() -> None:
    ds = load_dataset([DATA / "wice_tiny.jsonl"])
    assert ds.kind == "wice"
    quotes = [p.quote for p in ds.pairs]
    assert quotes[0] == "The museum opened in 1901 in Boston."  # first annotator: [1]
    # first annotator [2, 1]: in document order
    assert quotes[1] == "The museum opened in 1901 in Boston. It holds 5,000 paintings."
    # no annotator set: the sentences sharing most words (5 and 3 shared), document order
    assert quotes[2] == (
        "The museum opened in 1901 in Boston. The museum library holds rare maps of Boston."
    )
    assert [(p.gold, p.original) for p in ds.pairs] == [
        ("supported", "supported"),
        ("not_supported", "partially_supported"),
        ("not_supported", "not_supported"),
    ]
    assert wice_quote("zebra", ["a b", "c d", "e f", "g h"], [[], []]) == "a b c d e f"
    assert wice_quote("x", ["one"], [[], [0]]) == "one"  # a later annotator's set


def test_clapnq_and_own_tiny_files() -> None:
    clap = load_dataset([DATA / "clapnq_tiny.jsonl"])
    assert [a.answerable for a in clap.answers] == [True, False]
    assert clap.answers[0].gold_quotes[0].startswith("The harbour bridge opened")
    assert clap.answers[0].sources[0].title == "Harbour Bridge"
    own = load_dataset([DATA / "quotebound_tiny.jsonl"])
    assert own.kind == "quotebound" and own.task == "answers" and len(own) == 5
    assert own.answers[1].claims is not None and own.answers[1].claims[0].needed == (True, False)
    assert own.answers[3].claims is None and own.answers[3].format == "auto"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q", "sources": [], "output": "x", "extra": 1}, "unknown field"),
        ({"question": "q", "sources": [{"id": "S1"}], "output": "x"}, "missing field 'text'"),
        ({"question": "q", "sources": [], "output": 3}, "'output' must be a str"),
        ({"question": "q", "sources": [], "output": "x", "format": "yaml"}, "format must be"),
        (
            {"question": "q", "sources": [], "output": "x", "labels": {"answerable": "yes"}},
            "labels.answerable",
        ),
        (
            {
                "question": "q",
                "sources": [],
                "output": "x",
                "labels": {"claims": [{"support": "maybe"}]},
            },
            "support must be one of",
        ),
    ],
)
def test_own_format_errors_name_the_problem(row: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        own_example(row, "f.jsonl line 3")


def test_detection_and_load_errors(tmp_path: Path) -> None:
    odd = tmp_path / "mine.jsonl"
    odd.write_text('{"claim": "x", "attribution_label": "attributable", "references": ["x"]}\n')
    assert detect_kind(odd) == "attributionbench"
    unknown = tmp_path / "what.jsonl"
    unknown.write_text('{"foo": 1}\n')
    with pytest.raises(InputError, match="--dataset-kind"):
        detect_kind(unknown)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "q", "sources": [], "output": "x"}\n{nope\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        load_dataset([broken])
    with pytest.raises(InputError, match="different kinds"):
        load_dataset([DATA / "wice_tiny.jsonl", DATA / "clapnq_tiny.jsonl"])
    with pytest.raises(InputError, match="not found"):
        load_dataset([tmp_path / "missing.jsonl"])
    folder = tmp_path / "wice_folder.jsonl"
    folder.mkdir()
    with pytest.raises(InputError, match="dataset is a directory, not a file"):
        load_dataset([folder])
    latin = tmp_path / "latin_wice.jsonl"
    latin.write_bytes('{"claim": "caf\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_dataset([latin])
    empty = tmp_path / "empty_wice.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no examples"):
        load_dataset([empty])


def _shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return path


def test_first_rows_of_real_attributionbench() -> None:
    path = _shared("attributionbench", "test_all_subset_balanced_sampled500.jsonl")
    ds = load_dataset([path], limit=6)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:6]]
    assert [p.id for p in ds.pairs] == [r["id"] for r in rows]
    for pair, row in zip(ds.pairs, rows, strict=True):
        assert pair.gold == (
            "supported" if row["attribution_label"] == "attributable" else "not_supported"
        )
        assert pair.quote.startswith(row["references"][0].strip()[:40])
        assert pair.group == row["src_dataset"]
    assert ds.pairs[0].claim == "Neil Alden Armstrong"


def test_first_rows_of_real_wice() -> None:
    path = _shared("wice", "claim_dev.jsonl")
    ds = load_dataset([path], limit=3)
    row = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
    assert row["supporting_sentences"][0] == [5, 15]
    expected = f"{row['evidence'][5].strip()} {row['evidence'][15].strip()}"
    assert ds.pairs[0].quote == expected
    assert ds.pairs[0].gold == "not_supported" and ds.pairs[0].original == "partially_supported"
    assert all(p.quote for p in ds.pairs)


def test_first_rows_of_real_clapnq() -> None:
    answerable = _shared("clapnq", "clapnq_dev_answerable.jsonl")
    unanswerable = _shared("clapnq", "clapnq_dev_unanswerable.jsonl")
    ds = load_dataset([answerable, unanswerable], limit=3)
    assert ds.kind == "clapnq" and len(ds) == 6
    assert [a.answerable for a in ds.answers] == [True] * 3 + [False] * 3
    first = json.loads(answerable.read_text(encoding="utf-8").split("\n", 1)[0])
    assert ds.answers[0].question == first["input"]
    assert ds.answers[0].sources[0].text == first["passages"][0]["text"]
    assert all(g in ds.answers[0].sources[0].text for g in ds.answers[0].gold_quotes)


# --- the command ---------------------------------------------------------------------------


@pytest.fixture
def word_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[WordBackend]]:
    made: list[WordBackend] = []

    def create(name: str, *, model_path: Path | None = None, provider: Any = None) -> Backend:
        backend = FailingBackend() if name == "judge" else WordBackend()
        made.append(backend)
        return backend

    monkeypatch.setattr(command, "make_backend", create)
    yield made


def invoke(args: list[str]) -> tuple[Any, Any]:
    """Run the command as the CLI's main does (standalone_mode=False): its return value (the
    exit code) and the exception it raised, if any."""
    result = CliRunner().invoke(eval_cmd, args, standalone_mode=False)
    return result, result.exception


def test_eval_pairs_json_summary(word_backend: list[WordBackend]) -> None:
    result, exc = invoke([str(DATA / "attributionbench_tiny.jsonl"), "--json", "--seed", "3"])
    assert exc is None, result.output
    assert result.return_value == 0
    summary = json.loads(result.stdout)
    # gold S N S N S, words backend: S N N S S  ->  S row [2, 1], N row [1, 1]
    ent = summary["metrics"]["entailment"]
    assert ent["confusion"] == [[2, 1], [1, 1]]
    assert summary["flat"]["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2, abs=1e-4)
    assert summary["flat"]["accuracy"] == pytest.approx(3 / 5)
    assert summary["flat"]["f1_supported"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["flat"]["f1_not_supported"] == pytest.approx(1 / 2)
    assert summary["dataset"]["skipped"] == {"no_reference_text": 1}
    assert summary["backend"] == {"name": "words", "version": "test-1"}
    assert {d["id"] for d in summary["metrics"]["disagreements"]} == {"ab3", "ab5"}
    assert word_backend[0].closed
    assert result.stderr == ""  # no progress bar with --json


def test_eval_report_is_written_and_escaped(
    word_backend: list[WordBackend], tmp_path: Path
) -> None:
    report = tmp_path / "out.html"
    result, exc = invoke([str(DATA / "attributionbench_tiny.jsonl"), "--report", str(report)])
    assert exc is None and result.return_value == 0
    page = report.read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") >= 2  # confusion matrix and F1 bars
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "balanced accuracy" in page
    assert "balanced accuracy" in result.stdout  # the text table on stdout


def test_fail_under_exits_1_naming_metric_and_values(word_backend: list[WordBackend]) -> None:
    path = str(DATA / "attributionbench_tiny.jsonl")
    result, exc = invoke([path, "--json", "--fail-under", "balanced_accuracy=0.7"])
    assert exc is None and result.return_value == 1
    assert "balanced_accuracy is 0.5833, below the --fail-under threshold 0.7" in result.stderr
    gate = json.loads(result.stdout)["fail_under"][0]
    assert gate == {
        "metric": "balanced_accuracy",
        "threshold": 0.7,
        "value": pytest.approx((2 / 3 + 1 / 2) / 2),
        "passed": False,
    }  # unrounded
    ok, exc = invoke(
        [path, "--fail-under", "balanced_accuracy=0.5", "--fail-under", "f1_supported=0.6"]
    )
    assert exc is None and ok.return_value == 0


def test_judge_errors_fail_closed(word_backend: list[WordBackend]) -> None:
    result, exc = invoke(
        [str(DATA / "attributionbench_tiny.jsonl"), "--backend", "judge", "--json"]
    )
    assert exc is None
    metrics_ = json.loads(result.stdout)["metrics"]
    assert metrics_["judgement_errors"] == 1
    cats = [d for d in metrics_["disagreements"] if d["id"] == "ab6"]
    assert cats and cats[0]["predicted"] == "not_supported" and cats[0]["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a DATASET"),
        (["--traces", "x.jsonl"], "not both"),
        (["--fail-under", "balanced_accuracy"], "METRIC=NUMBER"),
        (["--fail-under", "balanced_accuracy=high"], "METRIC=NUMBER"),
        (["--fail-under", "bogus=0.5"], "unknown metric 'bogus'"),
        (["--backend", "none"], "choose --backend"),
        (["--sample", "3"], "add --traces"),
        (["--dataset-kind", "clapnq"], "missing field 'input'"),
    ],
)
def test_bad_arguments_are_input_errors(
    word_backend: list[WordBackend], args: list[str], message: str
) -> None:
    if args[:1] != ["--traces"] and args != []:
        args = [str(DATA / "attributionbench_tiny.jsonl"), *args]
    _, exc = invoke(args)
    assert isinstance(exc, InputError), exc
    assert exc.exit_code == 2
    assert message in str(exc)


def test_exit_codes_through_the_cli_main(
    word_backend: list[WordBackend],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from quotebound import cli as cli_module

    monkeypatch.setitem(cli_module.cli.commands, "eval", eval_cmd)
    path = str(DATA / "attributionbench_tiny.jsonl")
    codes = {}
    for name, args in {
        "ok": [path, "--json"],
        "gate": [path, "--json", "--fail-under", "accuracy=0.9"],
        "bad": [path, "--fail-under", "accuracy"],
        "usage": [path, "--limit", "0"],
    }.items():
        with pytest.raises(SystemExit) as stop:
            cli_module.main(["eval", *args])
        codes[name] = stop.value.code
        _, err = capsys.readouterr()
        if name == "bad":
            assert err.startswith("quotebound: error: --fail-under takes METRIC=NUMBER")
    assert codes == {"ok": 0, "gate": 1, "bad": 2, "usage": 2}


def test_eval_own_format_by_hand(word_backend: list[WordBackend]) -> None:
    result, exc = invoke([str(DATA / "quotebound_tiny.jsonl"), "--json"])
    assert exc is None, result.output
    flat = json.loads(result.stdout)["flat"]
    # citations: r1 1 valid; r2 2 valid + 1 quote_not_found; r3 1 valid
    assert flat["citation_validity"] == pytest.approx(4 / 5)
    # claims: r1 supported, r2 claim 1 supported, r2 claim 2 (no valid text) and r3 not
    assert flat["citation_recall"] == pytest.approx(2 / 4)
    # precise citations: r1 1/1, r2 claim 1 1/2 (S1's quote is irrelevant), 0/1, 0/1
    assert flat["citation_precision"] == pytest.approx(2 / 5)
    assert flat["kept_claim_support"] == pytest.approx(2 / 3, abs=1e-4)
    assert flat["false_abstention_rate"] == pytest.approx(1 / 3, abs=1e-4)  # r5 of r1, r2, r5
    assert flat["missed_abstention_rate"] == pytest.approx(1 / 2)  # r3 of r3, r4
    assert flat["abstention_rate"] == pytest.approx(2 / 5)
    # gold support S S U C vs predicted S S U U: recall S 1, U 1, C 0
    assert flat["support_accuracy"] == pytest.approx(3 / 4)
    assert flat["support_balanced_accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert flat["needed_accuracy"] == 1.0  # needed, needed, not needed, not needed


def test_eval_own_format_without_backend(word_backend: list[WordBackend], tmp_path: Path) -> None:
    report = tmp_path / "answers.html"
    result, exc = invoke(
        [
            str(DATA / "quotebound_tiny.jsonl"),
            "--backend",
            "none",
            "--json",
            "--report",
            str(report),
        ]
    )
    assert exc is None and not word_backend
    summary = json.loads(result.stdout)
    assert summary["backend"] is None and "citation_recall" not in summary["flat"]
    assert summary["metrics"]["statuses"] == {"abstained": 2, "grounded": 2, "partial": 1}
    page = report.read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "missed abstention rate" in page


def test_labels_must_match_the_parsed_claims(
    tmp_path: Path, word_backend: list[WordBackend]
) -> None:
    row = json.loads((DATA / "quotebound_tiny.jsonl").read_text().splitlines()[1])
    row["labels"]["claims"] = row["labels"]["claims"][:1]
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(row) + "\n")
    _, exc = invoke([str(path), "--dataset-kind", "quotebound"])
    assert isinstance(exc, InputError) and "parses into 2 claims" in str(exc)


def test_eval_clapnq_runs_the_pipeline(word_backend: list[WordBackend]) -> None:
    result, exc = invoke([str(DATA / "clapnq_tiny.jsonl"), "--json", "--provider", "extractive"])
    assert exc is None, result.output
    metrics_ = json.loads(result.stdout)["metrics"]
    assert metrics_["false_abstention_rate"]["n"] == 1
    assert metrics_["missed_abstention_rate"]["n"] == 1
    assert sum(metrics_["statuses"].values()) == 2
    assert metrics_["provider_errors"] == 0
    # the extractive provider quotes verbatim: every served citation passes
    served = metrics_["served_citation_validity"]
    assert served["n"] >= 1 and served["value"] == 1.0


def test_parse_gates() -> None:
    assert parse_gates(("a=0.5", " b = 1 ")) == [("a", 0.5), ("b", 1.0)]
    for bad in ("=0.5", "a=", "a=nan", "a=inf"):
        with pytest.raises(InputError):
            parse_gates((bad,))


# --- traces: evaluation and the review sample ----------------------------------------------

SOURCES = (
    Source("S1", "Employees receive 14 weeks of paid parental leave after one year."),
    Source("S2", "Contractors are not eligible for paid parental leave."),
)


def _output(*claims: tuple[str, str, str]) -> str:
    return json.dumps(
        {
            "answerable": True,
            "claims": [{"text": t, "citations": [{"source": s, "quote": q}]} for t, s, q in claims],
        }
    )


GOOD = ("Employees get 14 weeks.", "S1", "Employees receive 14 weeks of paid parental leave")
BAD = ("Contractors get 16 weeks.", "S2", "Contractors get 16 weeks of leave")
KINDS_OF_TRACE = {
    "grounded": _output(GOOD),
    "partial": _output(GOOD, BAD),
    "abstained": "INSUFFICIENT_CONTEXT",
}


def _write_traces(url: str, plan: list[str]) -> list[str]:
    ws = WorkingSet(SOURCES)
    ids = []
    with open_store(url) as store:
        for n, kind in enumerate(plan):
            output = KINDS_OF_TRACE[kind]
            verdict = verify(ws, output, "json")
            trace = TraceRecord(
                question=f"question {n} <i>",
                sources=tuple(TraceSource.of(s) for s in SOURCES),
                attempts=(TraceAttempt(output, verdict.to_dict()),),
                status=kind,
                counts={"served_attempt": 1},
                created_at=f"2026-11-29T10:{n:02d}:00.000+00:00",
            )
            ids.append(store.write_trace(trace))
    return ids


PLAN = ["grounded"] * 6 + ["partial"] * 3 + ["abstained"]


def test_allocate_by_hand() -> None:
    sizes = {("a", "x"): 6, ("b", "x"): 3, ("c", "x"): 1}
    # one each (3), then 2 more by share of the rest: quotas 10/7 and 4/7 -> a 1, then the
    # largest remainder (b's .57) takes the last
    assert allocate(sizes, 5) == {("a", "x"): 2, ("b", "x"): 2, ("c", "x"): 1}
    assert allocate(sizes, 2) == {("a", "x"): 1, ("b", "x"): 1, ("c", "x"): 0}
    assert allocate(sizes, 50) == sizes
    assert sum(allocate(sizes, 9).values()) == 9


def test_strata_and_sample(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    _write_traces(url, PLAN)
    with open_store(url) as store:
        traces = [store.get_trace(s.id) for s in store.list_traces(None, limit=100)]
    assert {stratum(t) for t in traces} == {
        ("grounded", "all_kept"),
        ("partial", "some_dropped"),
        ("abstained", "none"),
    }
    drawn = sample_traces(traces, 4, seed=5)
    keys = [k for _, k in drawn]
    assert keys.count(("abstained", "none")) == 1  # the rare stratum is always drawn
    assert (
        keys.count(("partial", "some_dropped")) == 1 and keys.count(("grounded", "all_kept")) == 2
    )
    assert [t.id for t, _ in sample_traces(traces, 4, seed=5)] == [t.id for t, _ in drawn]
    seeds = {tuple(t.id for t, _ in sample_traces(traces, 4, seed=s)) for s in range(6)}
    assert len(seeds) > 1  # the seed chooses which grounded traces


def test_sample_export_roundtrips_as_a_dataset(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    ids = _write_traces(url, PLAN)
    out = tmp_path / "review.jsonl"
    result, exc = invoke(
        ["--traces", "--store", url, "--sample", "4", "--out", str(out), "--seed", "2", "--json"]
    )
    assert exc is None and result.return_value == 0, result.output
    info = json.loads(result.stdout)
    assert info["pool"] == 10 and info["drawn"] == 4
    assert info["strata"]["partial/some_dropped"] == {"pool": 3, "drawn": 1}
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 4 and all(line["id"] in ids for line in lines)
    partial = next(line for line in lines if line["trace"]["status"] == "partial")
    assert partial["sources"][0] == SOURCES[0].to_dict()
    assert partial["verdict"]["status"] == "partial" and partial["format"] == "json"
    assert partial["labels"]["claims"] == [{"support": None, "citations": [{"needed": None}]}] * 2
    again = tmp_path / "again.jsonl"
    invoke(["--traces", "--store", url, "--sample", "4", "--out", str(again), "--seed", "2"])
    assert again.read_text() == out.read_text()
    reloaded = load_dataset([out])  # a review file is a dataset of our format
    assert reloaded.kind == "quotebound" and len(reloaded) == 4
    # quotebound sample is the command of its own; eval --traces --sample its older spelling
    own = tmp_path / "own.jsonl"
    made = CliRunner().invoke(
        command.sample_cmd,
        ["4", "--store", url, "--out", str(own), "--seed", "2", "--json"],
        standalone_mode=False,
    )
    assert made.exception is None and made.return_value == 0, made.output
    assert json.loads(made.stdout) == {**info, "out": str(own)}
    assert own.read_text() == out.read_text()
    missing = CliRunner().invoke(command.sample_cmd, ["4", "--store", url])
    assert missing.exit_code == 2 and "--out" in missing.output


def test_eval_traces(tmp_path: Path, word_backend: list[WordBackend]) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    _write_traces(url, PLAN)
    result, exc = invoke(["--traces", "--store", url, "--json", "--limit", "5"])
    assert exc is None, result.output
    summary = json.loads(result.stdout)
    assert summary["examples"] == 5 and summary["dataset"]["kind"] == "traces"
    # the 5 newest: abstained, 3 partial, 1 grounded -> 1 + 3*1 valid of 1 + 3*2 citations
    assert summary["metrics"]["citation_validity"]["hits"] == 4
    assert summary["metrics"]["citation_validity"]["n"] == 7
    assert summary["flat"]["abstention_rate"] == pytest.approx(1 / 5)
    assert summary["flat"]["false_abstention_rate"] is None  # traces carry no gold
    # GOOD's claim "Employees get 14 weeks." lacks "get" in its quote: unsupported by words
    assert summary["flat"]["citation_recall"] == 0.0


def test_traces_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    _, exc = invoke(["--traces", "--store", url, "--backend", "none"])
    assert isinstance(exc, InputError) and "no stored traces" in str(exc)
    _, exc = invoke(["--traces", "--store", url, "--sample", "2"])
    assert isinstance(exc, InputError) and "--out" in str(exc)


# --- review findings: provider errors, validity, gates, label checks -----------------------

TIMEOUT = "<provider error: timeout> the model did not answer in 30s"


def _write_error_traces(url: str) -> None:
    """A first-call provider error, and a repair turn that failed with nothing kept."""
    ws = WorkingSet(SOURCES)
    bad = _output(BAD)
    sources = tuple(TraceSource.of(s) for s in SOURCES)
    with open_store(url) as store:
        store.write_trace(
            TraceRecord(
                question="first call failed",
                sources=sources,
                attempts=(TraceAttempt(TIMEOUT),),
                status="provider_error",
                counts={"provider_errors": 1, "kept_claims": 0},
                created_at="2026-11-29T11:00:00.000+00:00",
            )
        )
        store.write_trace(
            TraceRecord(
                question="repair failed",
                sources=sources,
                attempts=(
                    TraceAttempt(bad, verify(ws, bad, "json").to_dict()),
                    TraceAttempt(TIMEOUT),
                ),
                status="abstained",
                counts={
                    "served_attempt": 1,
                    "provider_errors": 1,
                    "kept_claims": 0,
                    "abstained": 1,
                },
                created_at="2026-11-29T11:01:00.000+00:00",
            )
        )


def test_sample_leaves_out_provider_errors_and_the_review_file_evaluates(
    tmp_path: Path, word_backend: list[WordBackend]
) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    _write_traces(url, PLAN)
    _write_error_traces(url)
    out = tmp_path / "review.jsonl"
    result, exc = invoke(
        ["--traces", "--store", url, "--sample", "20", "--out", str(out), "--json"]
    )
    assert exc is None, result.output
    info = json.loads(result.stdout)
    assert info["pool"] == 10 and info["drawn"] == 10 and info["provider_errors_left_out"] == 2
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert not any(line["output"].startswith("<provider error") for line in lines)
    # a reviewer fills some labels; the file is then a dataset for eval, with any backend
    for line in lines:
        line["labels"]["answerable"] = line["trace"]["status"] != "abstained"
        for claim in line["labels"]["claims"]:
            claim["support"] = "supported"
            claim["citations"] = [{"needed": True} for _ in claim["citations"]]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for backend in ("heuristic", "none"):
        result, exc = invoke([str(out), "--backend", backend, "--json"])
        assert exc is None and result.return_value == 0, (backend, exc)
        summary = json.loads(result.stdout)
        assert summary["examples"] == 10 and summary["metrics"]["provider_errors"] == 0
        assert summary["flat"]["abstention_rate"] == pytest.approx(1 / 10)
        assert ("support_accuracy" in summary["flat"]) == (backend != "none")
    human, exc = invoke(["--traces", "--store", url, "--sample", "3", "--out", str(out)])
    assert exc is None and "left out 2 provider-error trace(s)" in human.stdout


def test_provider_error_rows_count_as_provider_errors(
    tmp_path: Path, word_backend: list[WordBackend]
) -> None:
    rows = [json.loads(line) for line in (DATA / "quotebound_tiny.jsonl").read_text().splitlines()]
    old_export = {
        **rows[0],
        "id": "pe1",
        "output": TIMEOUT,
        "format": "auto",
        "labels": {"answerable": True, "claims": []},
        "trace": {"id": "t1", "status": "provider_error"},
    }
    bare = {**rows[3], "id": "pe2", "output": TIMEOUT, "labels": {"answerable": False}}
    path = tmp_path / "errors.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, old_export, bare]))
    for backend in ("heuristic", "none"):
        result, exc = invoke([str(path), "--backend", backend, "--json"])
        assert exc is None and result.return_value == 0, (backend, exc)
        metrics_ = json.loads(result.stdout)["metrics"]
        assert metrics_["provider_errors"] == 2
        assert metrics_["statuses"]["provider_error"] == 2
        # the same abstention numbers as the file without them (2 of 5 abstained)
        assert (metrics_["abstention_rate"]["hits"], metrics_["abstention_rate"]["n"]) == (2, 5)
        assert metrics_["false_abstention_rate"]["n"] == 3
        assert metrics_["missed_abstention_rate"]["n"] == 2


def test_repair_turn_provider_error_is_not_an_abstention(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    _write_traces(url, ["grounded", "abstained"])
    _write_error_traces(url)
    result, exc = invoke(["--traces", "--store", url, "--backend", "none", "--json"])
    assert exc is None, result.output
    metrics_ = json.loads(result.stdout)["metrics"]
    assert metrics_["provider_errors"] == 2  # the first-call error and the failed repair
    assert (metrics_["abstention_rate"]["hits"], metrics_["abstention_rate"]["n"]) == (1, 2)
    # the failed repair's first output was real: its citation still counts for validity
    assert metrics_["citation_validity"]["n"] == 2


def test_citation_validity_is_id_and_span_only() -> None:
    sources = (Source("S1", "Employees receive 14 weeks of paid parental leave after one year."),)
    output = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": "Employees receive 14 weeks of leave.",
                    "citations": [
                        {
                            "source": "S1",
                            "quote": "Employees receive 14 weeks of paid parental leave",
                        }
                    ],
                },
                # passes id and span, fails the number check
                {
                    "text": "Leave lasts 16 weeks.",
                    "citations": [
                        {"source": "S1", "quote": "weeks of paid parental leave after one year"}
                    ],
                },
                {
                    "text": "Leave is paid.",
                    "citations": [{"source": "S1", "quote": "paid parental leave for everyone"}],
                },  # quote_not_found
            ],
        }
    )
    example = own_example(
        {"question": "q", "sources": [s.to_dict() for s in sources], "output": output}, "test"
    )
    outcome = outcome_of_output(example)
    assert outcome.first is not None
    reasons = [c.reason for cl in outcome.first.claims for c in cl.citations]
    assert reasons == [None, "number_not_in_source", "quote_not_found"]
    # an entailment verdict on a citation that passed id and span: still id+span valid
    entailed = json.loads(json.dumps(outcome.first.to_dict()))
    entailed["claims"][0]["citations"][0].update(valid=False, reason="not_entailed")
    outcome.first = outcome.served = Verdict.from_dict(entailed)
    summary = answer_summary([outcome], None, seed=0)
    assert (summary["citation_validity"]["hits"], summary["citation_validity"]["n"]) == (2, 3)
    assert (summary["citation_checks_passed"]["hits"], summary["citation_checks_passed"]["n"]) == (
        0,
        3,
    )
    assert summary["served_citation_validity"]["hits"] == 2


@pytest.mark.parametrize(
    ("rate", "complement"),
    [
        ("false_abstention_rate", "answered_when_answerable"),
        ("missed_abstention_rate", "abstained_when_unanswerable"),
        ("abstention_rate", "answer_rate"),
        ("repair_rate", "first_pass_rate"),
    ],
)
def test_gates_on_lower_is_better_rates_are_refused(
    word_backend: list[WordBackend], rate: str, complement: str
) -> None:
    _, exc = invoke([str(DATA / "clapnq_tiny.jsonl"), "--fail-under", f"{rate}=0.1"])
    assert isinstance(exc, InputError) and exc.exit_code == 2
    assert "lower-is-better" in str(exc) and f"gate on {complement}" in str(exc)


def test_complement_gates_pass_and_fail_on_their_values(word_backend: list[WordBackend]) -> None:
    path = str(DATA / "quotebound_tiny.jsonl")
    # answered_when_answerable = 1 - 1/3, answer_rate = 1 - 2/5
    ok, exc = invoke(
        [
            path,
            "--json",
            "--fail-under",
            "answered_when_answerable=0.66",
            "--fail-under",
            "answer_rate=0.6",
        ]
    )
    assert exc is None and ok.return_value == 0, ok.output
    flat = json.loads(ok.stdout)["flat"]
    assert flat["answered_when_answerable"] == pytest.approx(2 / 3)
    assert flat["answer_rate"] == pytest.approx(3 / 5)
    bad, exc = invoke([path, "--fail-under", "abstained_when_unanswerable=0.9"])
    assert exc is None and bad.return_value == 1


def _no_run(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the evaluation ran before the gate names were checked")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "none", "--fail-under", "citation_recall=0.5"], "entailment backend"),
        (["--backend", "none", "--fail-under", "support_accuracy=0.5"], "entailment backend"),
        (["--fail-under", "first_pass_rate=0.5"], "CLAPNQ"),
    ],
)
def test_unmeasurable_gates_stop_before_running(
    word_backend: list[WordBackend],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setattr(command, "_outcomes", _no_run)
    _, exc = invoke([str(DATA / "quotebound_tiny.jsonl"), *args])
    assert isinstance(exc, InputError) and message in str(exc), exc


def test_unmeasurable_gates_on_traces_stop_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    _write_traces(url, ["grounded"])
    monkeypatch.setattr(command, "_outcomes", _no_run)
    _, exc = invoke(
        [
            "--traces",
            "--store",
            url,
            "--backend",
            "none",
            "--fail-under",
            "answered_when_answerable=0.5",
        ]
    )
    assert isinstance(exc, InputError) and "no answerable example" in str(exc)


def test_a_gate_without_a_value_still_writes_report_and_json(
    word_backend: list[WordBackend], tmp_path: Path
) -> None:
    report = tmp_path / "r.html"
    # the words backend never predicts contradicted: its precision has no value
    result, exc = invoke(
        [
            str(DATA / "quotebound_tiny.jsonl"),
            "--json",
            "--report",
            str(report),
            "--fail-under",
            "support_precision_contradicted=0.5",
        ]
    )
    assert isinstance(exc, InputError) and exc.exit_code == 2
    assert "support_precision_contradicted has no value" in str(exc)
    summary = json.loads(result.stdout)
    assert summary["fail_under"] == [
        {
            "metric": "support_precision_contradicted",
            "threshold": 0.5,
            "value": None,
            "passed": False,
        }
    ]
    assert "missed abstention rate" in report.read_text(encoding="utf-8")


def test_gates_compare_unrounded_values(word_backend: list[WordBackend]) -> None:
    path = str(DATA / "attributionbench_tiny.jsonl")
    # balanced accuracy 0.58333... (0.5833 rounded): a floor of 0.58331 passes
    ok, exc = invoke([path, "--fail-under", "balanced_accuracy=0.58331"])
    assert exc is None and ok.return_value == 0
    # F1 supported 0.66666... (0.6667 rounded): a floor of 0.66669 fails
    bad, exc = invoke([path, "--fail-under", "f1_supported=0.66669"])
    assert exc is None and bad.return_value == 1
    assert "f1_supported is 0.6667, below" in bad.stderr


@pytest.mark.parametrize("backend", ["heuristic", "none"])
def test_label_lengths_are_checked_whatever_the_backend(
    tmp_path: Path, word_backend: list[WordBackend], backend: str
) -> None:
    lines = (DATA / "quotebound_tiny.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["labels"]["claims"] = row["labels"]["claims"][:1]
    path = tmp_path / "mine.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(row) + "\n")
    _, exc = invoke([str(path), "--dataset-kind", "quotebound", "--backend", backend])
    assert isinstance(exc, InputError) and "parses into 2 claims" in str(exc)
    assert f"{path} line 2" in str(exc)
    row = json.loads(lines[1])
    row["labels"]["claims"][0]["citations"].append({"needed": True})  # 3 labels, 2 citations
    path.write_text(json.dumps(row) + "\n")
    _, exc = invoke([str(path), "--dataset-kind", "quotebound", "--backend", backend])
    assert isinstance(exc, InputError) and f"{path} line 1" in str(exc)
    assert "labels.claims[1].citations has 3 entries but claim 1 has 2 citations" in str(exc)


def test_entailment_benchmark_gives_the_numbers_eval_gives(
    word_backend: list[WordBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from benchmarks.quality import entailment_quality as bench

    monkeypatch.setattr(bench, "make_backend", lambda name, model_path=None: WordBackend())
    monkeypatch.setitem(bench.FILES, "test", "attributionbench_tiny.jsonl")
    dataset = bench.load("test", DATA)
    assert [p.quote for p in dataset.pairs] == [
        p.quote for p in load_dataset([DATA / "attributionbench_tiny.jsonl"]).pairs
    ]
    row = bench.run("heuristic", dataset, argparse.Namespace(model_path=None, seed=3))
    result, exc = invoke([str(DATA / "attributionbench_tiny.jsonl"), "--json", "--seed", "3"])
    flat = json.loads(result.stdout)["flat"]
    assert exc is None and row["rows"] == 5 and row["skipped"] == {"no_reference_text": 1}
    assert (row["bacc"], row["f1"]) == (flat["balanced_accuracy"], flat["f1_supported"])


class _FakeJudgeAPI:
    """An OpenAI-compatible chat completions server on a loopback port (a fake at the HTTP
    layer, no network): it labels each claim from a table, and records what it was sent."""

    def __init__(self) -> None:
        import http.server
        import threading

        fake = self
        self.labels = {
            "Neil": "supported",
            "Paris": "contradicted",
            "The bridge": "supported",
            "Water": "unrelated",
            "Cats": "not-a-label",
        }
        self.seen: list[dict[str, Any]] = []
        # what it answers a question with: one claim, quoting the first CLAPNQ passage
        self.answer = {
            "answerable": True,
            "claims": [
                {
                    "text": "The bridge opened on 19 March 1932.",
                    "citations": [
                        {
                            "source": "S1",
                            "quote": "The harbour bridge opened to traffic on 19 March 1932",
                        }
                    ],
                }
            ],
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.seen.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                asked = body["messages"][-1]["content"]
                if "<sources>" in json.dumps(body["messages"]):  # asked to answer (CLAPNQ)
                    content = json.dumps(fake.answer)
                else:  # asked to judge: anything else fails loudly
                    claim = json.loads(asked.splitlines()[0])["claim"]
                    label = next(v for k, v in fake.labels.items() if claim.startswith(k))
                    content = json.dumps({"label": label}) if "response_format" in body else label
                choice: dict[str, Any] = {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
                if body.get("logprobs"):  # the scored judge: one token, read by its logprobs
                    first = {"supported": "Yes", "not-a-label": "Maybe"}.get(label, "No")
                    other = {"Yes": "No", "No": "Yes"}.get(first, "Perhaps")
                    top = [
                        {"token": first, "logprob": -0.1, "bytes": list(first.encode())},
                        {"token": other, "logprob": -2.5, "bytes": list(other.encode())},
                    ]
                    choice["finish_reason"] = "length"
                    choice["message"]["content"] = first
                    choice["logprobs"] = {
                        "content": [{"token": first, "logprob": -0.1, "top_logprobs": top}]
                    }
                reply = json.dumps(
                    {"id": "x", "model": body["model"], "choices": [choice]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_eval_judges_through_an_api_provider() -> None:
    api = _FakeJudgeAPI()
    try:
        result, exc = invoke(
            [
                str(DATA / "attributionbench_tiny.jsonl"),
                "--backend",
                "judge",
                "--provider",
                "openai",
                "--model",
                "judge-test",
                "--base-url",
                api.url,
                "--api-key",
                "sk-eval-SECRET",
                "--json",
            ]
        )
    finally:
        api.close()
    assert exc is None, result.output
    summary = json.loads(result.stdout)
    assert summary["backend"]["name"] == "judge"
    # gold S N S N S (ab4 has no reference text); the fake says S C S U and garbage for ab6,
    # which fails closed (not supported): S row [2, 1], N row [0, 2]
    assert summary["metrics"]["entailment"]["confusion"] == [[2, 1], [0, 2]]
    assert summary["metrics"]["judgement_errors"] == 1
    assert len(api.seen) == 5
    assert all(s["body"]["logprobs"] and s["body"]["max_tokens"] == 1 for s in api.seen)
    assert {s["path"] for s in api.seen} == {"/v1/chat/completions"}
    assert {s["auth"] for s in api.seen} == {"Bearer sk-eval-SECRET"}
    assert {s["body"]["model"] for s in api.seen} == {"judge-test"}
    assert "sk-eval-SECRET" not in result.stdout


def test_eval_clapnq_judge_answers_and_judges_with_one_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []
    closed: list[Any] = []
    real_make = command._Model.make

    def make(self: Any, name: str) -> Any:
        provider = real_make(self, name)
        real_close = provider.close
        monkeypatch.setattr(provider, "close", lambda: (closed.append(provider), real_close()))
        made.append(provider)
        return provider

    monkeypatch.setattr(command._Model, "make", make)
    api = _FakeJudgeAPI()
    try:
        result, exc = invoke(
            [
                str(DATA / "clapnq_tiny.jsonl"),
                "--backend",
                "judge",
                "--provider",
                "openai",
                "--model",
                "judge-test",
                "--base-url",
                api.url,
                "--api-key",
                "sk-x",
                "--json",
            ]
        )
    finally:
        api.close()
    assert exc is None, result.output
    assert len(made) == 1 and closed == made  # one provider (a local model loads once), closed
    contents = [json.dumps(s["body"]["messages"]) for s in api.seen]
    answered = [c for c in contents if "<sources>" in c]
    judged = [c for c in contents if "<sources>" not in c]
    # every question answered (a repair asks again), and claims judged, all through it
    assert len(answered) >= json.loads(result.stdout)["examples"] and judged


@pytest.mark.parametrize("option", ["--nli-model", "--model-path"])
def test_eval_nli_model_option_and_its_older_name(option: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    _, exc = invoke(
        [str(DATA / "attributionbench_tiny.jsonl"), "--backend", "nli", option, str(missing)]
    )
    assert isinstance(exc, EntailmentError) and str(missing) in str(exc)


def test_eval_judge_provider_errors_are_usage_errors() -> None:
    path = str(DATA / "attributionbench_tiny.jsonl")
    _, exc = invoke([path, "--backend", "judge", "--provider", "extractive"])
    assert isinstance(exc, EntailmentError) and "extractive provider cannot judge" in str(exc)
    _, exc = invoke([path, "--backend", "judge", "--provider", "anthropic"])
    assert isinstance(exc, InputError) and "--model" in str(exc)
