"""Each test's SDK clients are closed when it ends, and what it left unclosed is collected then,
so a leaked socket fails the test that leaked it (warnings are errors here), not a later one."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kits.serverkit import close_opened


@pytest.fixture(autouse=True)
def _clients_closed_and_leaks_found_here() -> Iterator[None]:
    yield
    close_opened()
    gc.collect()
