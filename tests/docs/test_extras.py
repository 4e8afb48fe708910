"""The optional-extras registry of conftest.py: it names what pyproject.toml's extras install,
and every test it lists exists (a renamed test would silently stop skipping)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import EXTRA_MODULES, NEEDS, extra_hint

ROOT = Path(__file__).resolve().parents[2]


def test_the_extras_modules_are_what_pyproject_installs() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    # a distribution whose module has another name; "quotebound[a,b]" is those extras' own
    module_of = {"haystack_ai": "haystack", "llama_index_core": "llama_index"}

    def names(extra: str) -> set[str]:
        out: set[str] = set()
        for req in extras[extra]:
            if own := re.fullmatch(r"quotebound\[([\w,]+)\]", req):
                out |= {n for e in own.group(1).split(",") for n in names(e)}
                continue
            name = re.match(r"[\w.-]+", req).group(0).lower().replace("-", "_")  # type: ignore[union-attr]
            out.add(module_of.get(name, name))
        return out

    for extra, modules in EXTRA_MODULES.items():
        assert sorted(modules) == sorted(names(extra)), extra


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
