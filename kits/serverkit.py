"""Shared by the API and browser tests: a small corpus, in-process calls, a live server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn

from kits.corpuskit import make_doc
from quotebound.corpus import Chunk, LoadedDocument
from quotebound.store import Store

LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = (
    "In Germany, the company tops up statutory parental allowance to full salary for the "
    "first 14 weeks."
)
MERGER = "The merger with Contoso closes on 1 March 2027, subject to regulator approval."
HOSTILE = (
    'Release notes: <script>window.__pwned = 1</script> the <img src=x onerror="window.__pwned=2"> '
    "vendor portal migration finishes in week 12 of the project plan."
)


def doc(name: str, *paras: str, title: str | None = None) -> tuple[LoadedDocument, list[Chunk]]:
    return make_doc(name, *paras, title=title, updated="2026-11-01")


def fill(store: Store) -> None:
    """Public HR documents, a document only the ``legal`` group reads, a hostile page."""
    store.ingest(
        "hr",
        *doc("leave.txt", LEAVE, GERMANY, title="Leave policy"),
        url="https://hr.example/leave.txt",
    )
    store.ingest("legal", *doc("merger.txt", MERGER, title="Merger memo"), acl=["legal"])
    store.ingest("web", *doc("release.html", HOSTILE, title="<b>Release</b> notes"))


_Closable = TypeVar("_Closable")
_OPENED: list[Any] = []


def closed_after_test(client: _Closable) -> _Closable:
    """``client`` (an SDK's client, anything with ``close()``), closed when the test ends.

    An SDK client left to the garbage collector closes in an order of its choosing: its socket
    may be finalised first, and warn (an error in this suite) in whichever later test the
    collector happens to run."""
    _OPENED.append(client)
    return client


def close_opened() -> None:
    """Close every client ``closed_after_test`` was given, newest first."""
    failed: list[Exception] = []
    while _OPENED:
        try:
            _OPENED.pop().close()
        except Exception as exc:  # (the rest are closed all the same)
            failed.append(exc)
    if failed:
        raise failed[0]


def call(app: Any, method: str, path: str, key: str | None = None, **kw: Any) -> httpx.Response:
    """One request through httpx's ASGI transport, in process."""
    headers = dict(kw.pop("headers", {}))
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path, headers=headers, **kw)

    return asyncio.run(go())


def listening_url(proc: Any) -> str:
    """The URL a server started with ``--json`` prints as ``{"listening": URL}`` on its first
    line of stdout, once a request to it is answered (10 s at most)."""
    url = str(json.loads(proc.stdout.readline())["listening"])
    for _ in range(100):
        try:
            httpx.post(url, json={}, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    return url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port, in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def workers_of(supervisor: int) -> list[int]:
    """The worker processes of a ``serve --workers`` supervisor (its spawned children)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == supervisor and b"spawn_main" in cmdline:
            out.append(int(stat.parent.name))
    return sorted(out)
