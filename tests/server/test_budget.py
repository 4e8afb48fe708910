"""One request must never hold the service: a work budget on every verification, and worker
processes so that a slow request costs one worker (issue 13, item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from kits.serverkit import call, fill
from quotebound import Source, WorkingSet, verify
from quotebound.budget import Budget
from quotebound.errors import PolicyError, TimeLimitError, WorkLimitError
from quotebound.pipeline import AskOptions, ask
from quotebound.providers import ScriptedProvider
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store

WS = WorkingSet([Source("S1", "Employees get 16 weeks of paid parental leave in Germany.")])
QUOTE = "16 weeks of paid parental leave"


def _answer(claims: int, text: str = "Employees get 16 weeks of leave.") -> str:
    claim = {"text": text, "citations": [{"source": "S1", "quote": QUOTE}] * 2}
    return json.dumps({"answerable": True, "claims": [claim] * claims, "missing": ""})


def test_a_budget_refuses_more_work_than_it_allows() -> None:
    assert verify(WS, _answer(3), budget=Budget()).status == "grounded"
    with pytest.raises(WorkLimitError, match="makes 3 claims; this service checks at most 2"):
        verify(WS, _answer(3), budget=Budget(max_claims=2))
    with pytest.raises(WorkLimitError, match="makes 6 citations"):
        verify(WS, _answer(3), budget=Budget(max_citations=5))
    with pytest.raises(WorkLimitError, match="claim 1 is 60 characters long"):
        verify(WS, _answer(1, "x" * 60), budget=Budget(max_claim_chars=59))
    with pytest.raises(TimeLimitError, match="longer than this service allows"):
        verify(WS, _answer(3), budget=Budget(seconds=1e-9))
    assert verify(WS, _answer(300)).status == "grounded"  # the library itself limits nothing
    for bad in ({"max_claims": 0}, {"max_citations": True}, {"seconds": 0}):
        with pytest.raises(PolicyError):
            Budget(**bad)


def test_the_service_answers_over_budget_with_a_clear_json_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        key = store.create_key()[1]
    body = {"sources": [s.to_dict() for s in WS], "output": _answer(3)}
    for budget, status, code in [
        (Budget(max_claims=2), 413, "work_limit"),
        (Budget(seconds=1e-9), 503, "time_limit"),
        (Budget(), 200, None),
    ]:
        app = create_app(ServerConfig(store_url=url, budget=budget))
        try:
            r = call(app, "POST", "/v1/verify", key, json=body)
            assert r.status_code == status, r.text
            if code is not None:
                assert r.json()["error"]["code"] == code and "Traceback" not in r.text
            assert call(app, "GET", "/healthz").status_code == 200
        finally:
            app.state.stores.close()


def test_an_answer_over_budget_is_an_unparseable_attempt_and_still_traced(
    tmp_path: Path,
) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        fill(store)
        hits = store.search("parental leave")
        sid = "S1"
        many = json.dumps(
            {
                "answerable": True,
                "claims": [{"text": hits[0].text, "citations": [{"source": sid, "quote": None}]}]
                * 5,
            }
        )
        provider = ScriptedProvider([many, many])
        answer = ask("parental leave?", store, provider, AskOptions(work=Budget(max_claims=4)))
        assert answer.status == "abstained"
        assert answer.abstention is not None and "at most 4" in answer.abstention.missing
        trace = store.get_trace(answer.trace_id or "")
        assert [a.verdict["status"] for a in trace.attempts if a.verdict] == ["unparseable"] * 2


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def _workers(pid: int) -> set[int] | None:
    """The server's worker processes, once there are two (uvicorn spawns them)."""
    found = {c for c in _children(pid) if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()}
    return found if len(found) >= 2 else None


def _until(condition: Any, seconds: float = 30.0) -> Any:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s")


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_serve_with_two_workers_survives_a_killed_worker(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        key = store.create_key()[1]
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "quotebound",
            "serve",
            "--provider",
            "extractive",
            "--store",
            url,
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env={**os.environ},
    )
    try:
        _until(lambda: _healthy(port))
        workers = _until(lambda: _workers(server.pid))
        assert len(workers) == 2
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        # the other worker serves on; the supervisor starts a new one in the victim's place
        body = {"sources": [s.to_dict() for s in WS], "output": _answer(1)}
        headers = {"Authorization": f"Bearer {key}"}
        for _ in range(10):
            r = httpx.post(
                f"http://127.0.0.1:{port}/v1/verify", json=body, headers=headers, timeout=10
            )
            assert r.status_code == 200 and r.json()["status"] == "grounded"
        _until(lambda: (w := _workers(server.pid)) is not None and victim not in w)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
