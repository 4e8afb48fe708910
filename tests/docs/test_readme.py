"""The README read cold: every command it shows runs as shown, in order, offline, on the
project's own example data, and every Python block runs (issue 46's proof).

The commands run in a fresh folder holding links to the checkout's ``.venv`` and ``examples``,
with a private ``QUOTEBOUND_HOME`` (the store), so that nothing of the checkout or the user's
store is touched. ``TRACE_ID`` is the trace the ``ask`` before it printed; ``serve`` runs until
it listens, then is stopped. Each command's exit status is the one docs/cli.md documents for
what it shows (``verify`` of a partial answer: 1).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# what each command's output must show, and its exit status, by its first words
EXPECTED: tuple[tuple[str, int, str], ...] = (
    ("verify examples/sources.json examples/partial.json", 1, "status: partial (1 of 3"),
    ("verify examples/sources.json -", 1, "status: partial"),
    ("verify examples/sources.json examples/native/anthropic.json", 0, "format anthropic"),
    ("ingest examples/handbook --corpus handbook", 0, "handbook"),
    ("ask ", 0, "trace "),
    ("trace TRACE_ID", 0, ""),
    ("open TRACE_ID", 0, ""),
    ("ingest examples/handbook --corpus hr", 0, "hr"),
    ("keys create", 0, ""),
)


def readme_commands() -> list[str]:
    """The shell commands of the README's ``sh`` blocks after the first (the set-up), each
    with its continuation lines joined and its comment left out."""
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    commands: list[str] = []
    for block in blocks[1:]:
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command:
                commands.append(" ".join(command.split()))
    return commands


def readme_python() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_the_readme_shows_the_three_tasks_and_stays_short() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings[:3] == [
        "1. Verify your model's answer",
        "2. Answer from your own documents",
        "3. Serve it for a team",
    ]
    assert len(text.splitlines()) <= 200
    commands = readme_commands()
    for start, _, _ in EXPECTED:  # every command the table expects is shown
        assert any(start in c for c in commands), start
    assert any(re.search(r"quotebound serve\b", c) for c in commands)


def _expected(command: str) -> tuple[int, str]:
    for start, status, shows in EXPECTED:
        if start in command:
            return status, shows
    raise AssertionError(f"the README shows a command this test does not know: {command}")


def _serve_until_listening(command: str, cwd: Path, env: dict[str, str]) -> None:
    """Run ``command`` (``quotebound serve``) until it says it serves, then stop it."""
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and b"serving on http://127.0.0.1:8000/" not in seen:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break  # it exited
                seen += chunk
        assert b"serving on http://127.0.0.1:8000/" in seen, seen.decode()[-2000:]
        time.sleep(1.0)
        assert proc.poll() is None, seen.decode()[-2000:]  # still serving (the port was free)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


def test_every_readme_command_runs_as_shown(tmp_path: Path) -> None:
    venv = ROOT / ".venv" / "bin" / "quotebound"
    if not venv.exists():
        pytest.skip("needs the checkout's .venv (make test creates it)")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    (work / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "QUOTEBOUND_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    env.pop("QUOTEBOUND_STORE", None)
    trace_id = None
    for command in readme_commands():
        if re.search(r"quotebound serve\b", command):
            _serve_until_listening(command, work, env)
            continue
        status, shows = _expected(command)
        if "TRACE_ID" in command:
            assert trace_id is not None, f"{command}: no ask before it printed a trace"
            command = command.replace("TRACE_ID", trace_id)
        done = subprocess.run(
            command, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        out = done.stdout + done.stderr
        assert done.returncode == status, f"{command} exited {done.returncode}:\n{out[-3000:]}"
        assert shows in out, f"{command} did not show {shows!r}:\n{out[-3000:]}"
        if " ask " in f" {command}":
            found = re.search(r"\btrace (\w+)\s*$", done.stdout.strip())
            assert found is not None, done.stdout[-2000:]
            trace_id = found.group(1)
    # the Python blocks, against the same store
    code = "\n\n".join(readme_python())
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ungrounded", "number_not_in_source"]  # as the README says
    assert lines[1].startswith(("grounded", "partial")), lines  # the handbook answers it
