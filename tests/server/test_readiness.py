"""A worker takes traffic when it can answer: it warms before it accepts a connection, and
``/readyz`` says whether it should take traffic (``/healthz`` only that it answers)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from kits.serverkit import call, live_server
from quotebound.providers import Provider
from quotebound.providers.base import ProviderError
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.server import ServerConfig, create_app
from quotebound.server.state import ServerState
from quotebound.store import open_store


class SlowToLoad:
    """A provider factory that takes ``seconds`` to load the model, and counts its loads."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.loads = seconds, 0

    def __call__(self) -> Provider:
        time.sleep(self.seconds)
        self.loads += 1
        return ExtractiveProvider()


def test_a_worker_warms_before_it_accepts_a_connection(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        secret = store.create_key(name="k")[1]
    slow = SlowToLoad(1.0)
    app = create_app(ServerConfig(store_url=url, provider=slow))
    at = time.monotonic()
    with live_server(app) as base:
        listening = time.monotonic() - at
        assert slow.loads == 1 and listening >= 1.0  # (it listened only once it was warm)
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 200 and ready.json()["warmed_in_s"] >= 1.0
        at = time.monotonic()
        answer = httpx.post(
            f"{base}/v1/ask",
            json={"question": "How many weeks of leave?"},
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert answer.status_code == 200 and time.monotonic() - at < 1.0
        assert slow.loads == 1  # the first answer loaded nothing


def test_readyz_is_503_until_the_models_are_loaded_and_200_after(tmp_path: Path) -> None:
    app = create_app(
        ServerConfig(store_url=f"sqlite:///{tmp_path / 'qb.db'}", provider=SlowToLoad(0.2))
    )
    state: ServerState = app.state.server
    # (httpx's ASGI transport runs no lifespan: the app has not warmed)
    cold = call(app, "GET", "/readyz")
    assert cold.status_code == 503 and "not loaded yet" in cold.json()["reasons"][0]
    assert call(app, "GET", "/healthz").status_code == 200  # alive all the same
    assert state.warm() >= 0.2
    warm = call(app, "GET", "/readyz")
    assert warm.status_code == 200 and warm.json()["ready"] is True


def test_a_model_that_cannot_load_is_not_ready_and_says_why(tmp_path: Path) -> None:
    def broken() -> Provider:
        raise ProviderError("config", "no model file at /nowhere.gguf")

    app = create_app(ServerConfig(store_url=f"sqlite:///{tmp_path / 'qb.db'}", provider=broken))
    state: ServerState = app.state.server
    state.warm()
    reply = call(app, "GET", "/readyz")
    assert reply.status_code == 503 and "warming up failed" in reply.json()["reasons"][0]


def test_warming_embeds_the_stores_chunks_so_the_first_question_embeds_only_itself(
    tmp_path: Path,
) -> None:
    from kits.serverkit import fill
    from quotebound.answering.rerank import DenseReranker

    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        fill(store)
        chunks = sum(d.chunks for d in store.documents() if d.current and not d.deleted)
    app = create_app(ServerConfig(store_url=url, rerank=DenseReranker.beside))
    state: ServerState = app.state.server
    state.warm()
    reranker = state.reranker.get() if state.reranker is not None else None
    assert reranker is not None and chunks > 0
    assert reranker.cached == chunks  # every chunk, each under its own groups' search


def test_a_killed_worker_is_replaced_and_warm_before_it_answers(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from kits.serverkit import free_port, workers_of

    port = free_port()
    command = [sys.executable, "-m", "quotebound", "serve", "--provider", "extractive"]
    command += ["--port", str(port), "--store", f"sqlite:///{tmp_path / 'q.db'}"]
    command += ["--workers", "2", "--entailment", "off", "--answer-check", "off"]
    command += ["--fallback", "off", "--rerank", "off"]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while len(workers_of(server.pid)) < 2 or not _ready(base):
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        first = workers_of(server.pid)
        # each worker's encoders take its share of the cores, not all of them
        from quotebound.server.workers import threads_per_worker

        share = f"OMP_NUM_THREADS={threads_per_worker(2)}".encode()
        for pid in first:
            assert share in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        os.kill(first[0], signal.SIGKILL)
        while True:  # the supervisor starts another
            now = workers_of(server.pid)
            if len(now) == 2 and first[0] not in now:
                break
            assert time.monotonic() < deadline, f"not replaced: {now}"
            time.sleep(0.2)
        for _ in range(20):  # whichever worker answers is warm
            reply = httpx.get(f"{base}/readyz", timeout=10)
            assert reply.status_code == 200 and reply.json()["warmed_in_s"] is not None
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_worker_takes_its_share_of_the_cores() -> None:
    from quotebound.server.workers import threads_per_worker

    assert [threads_per_worker(w, cores=8) for w in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    assert threads_per_worker(2, cores=2) == 1


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False
