"""``quotebound eval``: the command (registered in cli.py with ``cli.add_command``).

Thin, like every command: check the arguments, load, run, render. Exit codes follow
docs/cli.md: 0 done (every ``--fail-under`` gate passed), 1 a gate failed (the message names
the metric, its value and the threshold), 2 bad arguments or input (``InputError``, mapped by
``quotebound.cli.main``). Gate names are checked before anything runs (unknown, lower is
better, or unmeasurable with this backend and data); a gate whose metric turns out to have no
value still gets the report and the summary written before the exit 2.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..choices import BACKENDS as ENTAILMENT_BACKENDS
from ..choices import DEFAULT_TIER
from ..entailment import close_together, make_backend
from ..errors import InputError
from ..providers import PROVIDER_NAMES, make_provider
from ..text.display import terminal_safe
from .loaders import KINDS, Dataset, Kind, load_dataset
from .report import text_report, write_html
from .run import (
    LOWER_IS_BETTER,
    AnswerOutcome,
    Tick,
    evaluate_answers,
    evaluate_pairs,
    metric_names,
    outcome_of_output,
    outcome_of_trace,
    run_pipeline,
    unmeasurable,
)
from .sample import export_sample, recent_traces

BACKENDS = (*ENTAILMENT_BACKENDS, "none")
DEFAULT_TRACE_LIMIT = 200
DEFAULT_SAMPLE_POOL = 500


@dataclass(frozen=True)
class _Model:
    """The model the user chose (--provider, --model, --base-url, --api-key)."""

    provider: str | None
    model: str | None
    base_url: str | None
    api_key: str | None

    def make(self, name: str) -> Any:
        return make_provider(name, self.model, base_url=self.base_url, api_key=self.api_key)


def parse_gates(specs: tuple[str, ...]) -> list[tuple[str, float]]:
    """``METRIC=VALUE`` pairs; bad syntax is an InputError naming the option."""
    gates = []
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or not name or math.isnan(value) or math.isinf(value):
            raise InputError(
                f"--fail-under takes METRIC=NUMBER, such as balanced_accuracy=0.7; got {spec!r}"
            )
        gates.append((name, value))
    return gates


def check_gate_names(
    gates: list[tuple[str, float]], names: list[str], unavailable: dict[str, str]
) -> None:
    """Before running: every gate names a higher-is-better metric this run can measure."""
    for name, _ in gates:
        if name in LOWER_IS_BETTER:
            complement = LOWER_IS_BETTER[name]
            raise InputError(
                f"--fail-under: {name} is lower-is-better, so a floor on it would "
                f"pass as it gets worse; gate on {complement} (= 1 - {name}) "
                "instead"
            )
        if name not in names:
            raise InputError(
                f"--fail-under: unknown metric {name!r} for this evaluation; "
                f"choose one of {', '.join(names)}"
            )
        if name in unavailable:
            raise InputError(f"--fail-under: {name} cannot be measured here: {unavailable[name]}")


def apply_gates(
    summary: dict[str, Any], gates: list[tuple[str, float]]
) -> tuple[list[str], list[str]]:
    """Record each gate in the summary, comparing the unrounded value (``summary["flat"]``):
    one message per gate that failed, and one per gate whose metric has no value."""
    checks, failed, missing = [], [], []
    for name, threshold in gates:
        value = summary["flat"].get(name)
        passed = value is not None and value >= threshold
        checks.append({"metric": name, "threshold": threshold, "value": value, "passed": passed})
        if value is None:
            missing.append(
                f"--fail-under: {name} has no value on this data (nothing to "
                "measure it on), so it cannot gate"
            )
        elif not passed:
            failed.append(f"{name} is {value:.4f}, below the --fail-under threshold {threshold:g}")
    summary["fail_under"] = checks
    return failed, missing


@contextmanager
def _bar(length: int, label: str, show: bool) -> Iterator[Tick]:
    with click.progressbar(
        length=length, label=label, file=sys.stderr, show_pos=True, hidden=not show
    ) as bar:
        yield bar.update


def _check_arguments(
    datasets: tuple[Path, ...],
    traces: bool,
    sample: int | None,
    out: Path | None,
    report: Path | None,
) -> None:
    if traces and datasets:
        raise InputError("give DATASET files or --traces, not both")
    if not traces and not datasets:
        raise InputError(
            "give a DATASET file (AttributionBench, WiCE, CLAPNQ or quotebound "
            "JSONL), or --traces to evaluate stored traces"
        )
    if sample is not None and not traces:
        raise InputError("--sample draws from stored traces: add --traces")
    if (sample is None) != (out is None):
        raise InputError("--sample N and --out FILE go together (the sample is written to FILE)")
    if sample is not None and report is not None:
        raise InputError("--report is for an evaluation, not for --sample")


@click.command("eval")
@click.argument("datasets", nargs=-1, metavar="[DATASET]...", type=click.Path(path_type=Path))
@click.option(
    "--dataset-kind",
    type=click.Choice(KINDS),
    help="The kind of DATASET (default: detected from the file name or fields).",
)
@click.option("--traces", is_flag=True, help="Evaluate the newest stored traces instead.")
@click.option(
    "--store",
    "store_url",
    envvar="QUOTEBOUND_STORE",
    metavar="URL",
    help="sqlite:///PATH or postgresql://... (with --traces).",
)
@click.option(
    "--owner",
    metavar="KEY_ID",
    help="Traces of this API key id (default: traces written without one).",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=DEFAULT_TIER,
    show_default=True,
    help="The entailment backend; none skips the checks that need one.",
)
@click.option(
    "--nli-model",
    "--model-path",  # its older name: --model-path is a GGUF file in ask and check-support
    "model_path",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="The local model (a directory) of the nli backend.",
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDER_NAMES),
    help="Who answers CLAPNQ questions (default extractive); the judge's model (default local).",
)
@click.option("--model", help="The --provider's model: an API model name, or a bundled local one.")
@click.option("--base-url", metavar="URL", help="The API base URL (OpenAI-compatible servers).")
@click.option("--api-key", metavar="KEY", help="The model API key (default: from the environment).")
@click.option(
    "--limit",
    type=click.IntRange(1),
    metavar="N",
    help="The first N rows of each DATASET file; the N newest traces.",
)
@click.option(
    "--report",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write an HTML report with tables and plots here.",
)
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 1 when METRIC is below VALUE (repeatable).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap intervals and of --sample.",
)
@click.option(
    "--sample",
    type=click.IntRange(1),
    metavar="N",
    help="With --traces: as quotebound sample N (its older spelling).",
)
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="The JSONL file --sample writes."
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
def eval_cmd(
    datasets: tuple[Path, ...],
    dataset_kind: Kind | None,
    traces: bool,
    store_url: str | None,
    owner: str | None,
    backend: str,
    model_path: Path | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    limit: int | None,
    report: Path | None,
    fail_under: tuple[str, ...],
    seed: int,
    sample: int | None,
    out: Path | None,
    as_json: bool,
) -> int:
    """Measure grounding on a labelled DATASET (or on stored traces, --traces): entailment
    balanced accuracy and F1, citation validity, precision and recall, abstention rates, each
    with a 95% confidence interval. Metric definitions: docs/evaluation.md."""
    _check_arguments(datasets, traces, sample, out, report)
    gates = parse_gates(fail_under)
    if sample is not None and out is not None:  # the older spelling of ``quotebound sample``
        return _export(store_url, out, sample, seed, owner, limit, as_json)
    show = not as_json and sys.stderr.isatty()
    chosen = _Model(provider, model, base_url, api_key)
    summary = _evaluate(
        datasets,
        dataset_kind,
        traces,
        store_url,
        owner,
        backend,
        model_path,
        chosen,
        limit,
        seed,
        gates,
        show,
    )
    failed, missing = apply_gates(summary, gates)
    if report is not None:
        write_html(summary, report)
    _emit(as_json, summary, text_report(summary))
    for message in failed:
        click.echo(terminal_safe(f"quotebound: {message}"), err=True)
    if missing:
        raise InputError("; ".join(missing))
    return 1 if failed else 0


@click.command("sample")
@click.argument("n", type=click.IntRange(1), metavar="N")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The JSONL file to write the sample to.",
)
@click.option(
    "--store",
    "store_url",
    envvar="QUOTEBOUND_STORE",
    metavar="URL",
    help="sqlite:///PATH or postgresql://...",
)
@click.option(
    "--owner",
    metavar="KEY_ID",
    help="Traces of this API key id (default: traces written without one).",
)
@click.option(
    "--limit",
    type=click.IntRange(1),
    metavar="POOL",
    help=f"Draw from the POOL newest traces (default {DEFAULT_SAMPLE_POOL}).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON document.")
def sample_cmd(
    n: int,
    out: Path,
    store_url: str | None,
    owner: str | None,
    limit: int | None,
    seed: int,
    as_json: bool,
) -> int:
    """Write a stratified sample of N recent traces to --out as JSONL, for people to label;
    the labelled file evaluates with quotebound eval. Strata: docs/evaluation.md."""
    return _export(store_url, out, n, seed, owner, limit, as_json)


def _export(
    store_url: str | None,
    out: Path,
    n: int,
    seed: int,
    owner: str | None,
    limit: int | None,
    as_json: bool,
) -> int:
    from ..store import open_store

    with open_store(store_url) as store:
        result = export_sample(store, out, n, seed, owner, limit or DEFAULT_SAMPLE_POOL)
    lines = [f"wrote {result['drawn']} of {result['pool']} traces to {result['out']} (seed {seed})"]
    if result["provider_errors_left_out"]:
        lines.append(
            f"  left out {result['provider_errors_left_out']} provider-error "
            "trace(s): no model output to review"
        )
    lines += [f"  {k:<28} {v['drawn']:>4} of {v['pool']}" for k, v in result["strata"].items()]
    _emit(as_json, result, "\n".join(lines))
    return 0


def _emit(as_json: bool, payload: dict[str, Any], human: str) -> None:
    click.echo(
        json.dumps(payload, ensure_ascii=False, indent=2) if as_json else terminal_safe(human)
    )


def _evaluate(
    datasets: tuple[Path, ...],
    kind: Kind | None,
    traces: bool,
    store_url: str | None,
    owner: str | None,
    backend_name: str,
    model_path: Path | None,
    chosen: _Model,
    limit: int | None,
    seed: int,
    gates: list[tuple[str, float]],
    show: bool,
) -> dict[str, Any]:
    dataset: Dataset | None = None
    records: list[Any] = []
    if traces:
        from ..store import open_store

        with open_store(store_url) as store:
            records = recent_traces(store, owner, limit or DEFAULT_TRACE_LIMIT)
        if not records:
            raise InputError(
                "no stored traces to evaluate (for this --owner); "
                "answer some questions with quotebound ask first"
            )
    else:
        dataset = load_dataset(list(datasets), kind, limit)
    task = "answers" if dataset is None else dataset.task
    check_gate_names(
        gates,
        metric_names(task, dataset.labels if dataset else ()),
        unmeasurable(dataset, backend_name != "none"),
    )
    if task == "pairs" and backend_name == "none":
        raise InputError(
            f"{dataset.kind if dataset else 'this'} data measures an entailment "
            f"backend: choose --backend {', '.join(ENTAILMENT_BACKENDS)}"
        )
    backend = judge_model = None
    if backend_name in ("judge", "cascade") and (chosen.provider or chosen.model) is not None:
        judge_model = chosen.make(chosen.provider or "local")
    try:
        if backend_name != "none":
            backend = make_backend(backend_name, model_path=model_path, provider=judge_model)
        if dataset is not None and dataset.task == "pairs" and backend is not None:
            with _bar(len(dataset.pairs), "judging", show) as tick:
                return evaluate_pairs(dataset, backend, seed, tick)
        started = time.perf_counter()
        # the judge's model answers too where the user chose one provider for both: a local
        # model is loaded once, not twice
        shared = judge_model if chosen.provider is not None else None
        outcomes = _outcomes(dataset, records, chosen, show, shared)
        seconds = time.perf_counter() - started
        with _bar(len(outcomes), "checking support", show and backend is not None) as tick:
            return evaluate_answers(
                dataset,
                outcomes,
                backend,
                seed,
                seconds,
                tick,
                "traces" if dataset is None else "dataset",
            )
    finally:
        close_together(backend, judge_model)


def _outcomes(
    dataset: Dataset | None, records: list[Any], chosen: _Model, show: bool, shared: Any = None
) -> list[AnswerOutcome]:
    """The answers to check: from traces, from the dataset's outputs, or (CLAPNQ) written now
    by the chosen provider (``shared``, the judge's, when it is the same one; left open)."""
    if dataset is None:
        return [outcome_of_trace(t) for t in records]
    if dataset.kind != "clapnq":
        return [outcome_of_output(ex) for ex in dataset.answers]
    answerer = shared if shared is not None else chosen.make(chosen.provider or "extractive")
    try:
        with _bar(len(dataset.answers), "answering", show) as tick:
            return run_pipeline(dataset.answers, answerer, tick)
    finally:
        if answerer is not shared:
            answerer.close()
