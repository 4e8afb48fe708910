"""Running the CLI in process, as its ``main`` does (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from quotebound.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 1), out, err
