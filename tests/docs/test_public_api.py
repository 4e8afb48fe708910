"""The public surface: ``quotebound.__all__`` exactly, every name in it resolves, the entry points
the docs teach are the objects of their modules, and ``import quotebound`` stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import quotebound

PUBLIC = [
    "CITATION_REASONS",
    "CLAIM_REASONS",
    "DEFAULT_SENTINELS",
    "FORMATS",
    "NORMALIZATION_VERSION",
    "STATUSES",
    "AskOptions",
    "Citation",
    "Claim",
    "Defaults",
    "InputError",
    "NormalizedText",
    "Policy",
    "PolicyError",
    "QuoteboundError",
    "Source",
    "SourceError",
    "Verdict",
    "WorkingSet",
    "__version__",
    "ask",
    "check_entailment",
    "defaults",
    "make_backend",
    "normalize",
    "pack",
    "verify",
]

# The names the docs teach from their own modules, and those modules.
HOMES = {
    "ask": "quotebound.pipeline",
    "AskOptions": "quotebound.pipeline",
    "pack": "quotebound.packing",
    "make_backend": "quotebound.entailment",
    "check_entailment": "quotebound.entailment.tier",
    "defaults": "quotebound.defaults",
    "Defaults": "quotebound.defaults",
    "verify": "quotebound.verify",
    "Policy": "quotebound.verify",
    "Verdict": "quotebound.verify",
    "Source": "quotebound.sources",
    "WorkingSet": "quotebound.sources",
}


def test_all_is_pinned() -> None:
    assert quotebound.__all__ == PUBLIC


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(quotebound, name) is not None
    assert name in dir(quotebound)


@pytest.mark.parametrize(("name", "module"), sorted(HOMES.items()))
def test_entry_points_are_the_objects_of_their_modules(name: str, module: str) -> None:
    assert getattr(quotebound, name) is getattr(importlib.import_module(module), name)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from quotebound import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(PUBLIC)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = quotebound.nope


def test_import_quotebound_loads_only_the_core() -> None:
    """The pipeline, packing and entailment load when their names are first read, not before."""
    code = (
        "import sys, quotebound\n"
        "flow = ('pipeline', 'packing', 'entailment', 'store', 'providers', 'cards', 'contract')\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith('quotebound.') and m.split('.')[1] in flow))\n"
        "quotebound.ask, quotebound.pack, quotebound.check_entailment\n"
        "print('quotebound.pipeline' in sys.modules, 'quotebound.entailment.tier' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "True True"]
