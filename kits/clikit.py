"""Running the CLI in process, as its ``main`` does (exit code, stdout, stderr)."""

from __future__ import annotations

import io
import sys

import pytest

from quotebound.cli import main


def run(
    args: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None
) -> tuple[int, str, str]:
    """``quotebound ARGS``, reading ``stdin`` (when given) as its standard input."""
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with pytest.raises(SystemExit) as exc:
            main(args)
    finally:
        sys.stdin = saved
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 1), out, err
