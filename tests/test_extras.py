"""The optional-extras registry of conftest.py: it names what pyproject.toml's extras install,
and every test it lists exists (a renamed test would silently stop skipping)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from conftest import EXTRA_MODULES, NEEDS, extra_hint

ROOT = Path(__file__).resolve().parent.parent


def test_the_extras_modules_are_what_pyproject_installs() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra, modules in EXTRA_MODULES.items():
        names = {re.match(r"[\w.-]+", req).group(0) for req in extras[extra]}  # type: ignore[union-attr]
        assert sorted(modules) == sorted(n.lower().replace("-", "_") for n in names)


@pytest.mark.parametrize("key", sorted(NEEDS))
def test_every_listed_test_exists(key: str) -> None:
    assert NEEDS[key] in EXTRA_MODULES
    path, _, test = key.partition("::")
    assert (ROOT / path).is_file(), key
    if test:
        name = test.split("[")[0]
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, key


def test_the_hint_names_the_extra() -> None:
    assert extra_hint("entail") == "needs quotebound[entail]: pip install -e '.[entail]'"
