"""The worker processes of ``quotebound serve --workers N``, each on a listening socket of its
own, and the supervisor that replaces one that dies.

Why not one socket shared by every worker (uvicorn's ``--workers``): each worker's event loop,
woken by a new connection, accepts every connection waiting, so a burst of clients lands on
whichever worker woke first. Measured here with 2 workers and 32 keep-alive clients: 31 and 1
connections, or 32 and 0, every time; the service ran on one core of two. With
``SO_REUSEPORT`` (Linux), each worker listens on its own socket bound to the same port and the
kernel spreads new connections over the sockets that listen, by a hash of each connection's
addresses.

A worker's socket is bound here and listens only once its worker has warmed (uvicorn starts
listening after the app's start-up, where the worker loads its models): no connection waits on
a cold worker. When a worker dies (even by ``kill -9``) its socket is closed (the connections
queued on it and not yet accepted are reset, as a dead worker's were before) and a new worker
starts on a new socket, taking connections once warm. Where ``SO_REUSEPORT`` is missing (not
Linux), the workers share one socket, as before.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import sys
import threading
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger("quotebound.server")

STARTUP_FAILURE = 3  # uvicorn's exit status for a worker whose app could not start
POLL_S = 0.5  # how often the supervisor looks for a dead worker
STOP_GRACE_S = 30.0  # how long a worker may take to finish its requests when stopped


def per_worker_sockets() -> bool:
    """Whether each worker gets a socket of its own (``SO_REUSEPORT`` spreads connections
    over them on Linux; elsewhere it means something else, or nothing)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def bind(host: str, port: int, reuse_port: bool) -> socket.socket:
    """A TCP socket bound to ``host:port``, not yet listening. Made here, not by uvicorn:
    uvicorn's has protocol 0, which asyncio takes for "not TCP" and so never sets TCP_NODELAY
    on the connections it accepts, and every keep-alive response then waits ~40 ms for the
    client's delayed ACK (measured: 44 ms per /healthz)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _run_worker(config: uvicorn.Config, sock: socket.socket) -> None:
    """One worker process: uvicorn serving the app on ``sock`` (it listens after start-up)."""
    import uvicorn

    config.configure_logging()
    uvicorn.Server(config).run(sockets=[sock])


class Supervisor:
    """Runs ``workers`` worker processes on ``host:port`` until SIGINT or SIGTERM, starting a
    new one (on a new socket) in place of each that dies; stops when a worker's app cannot
    start at all (``STARTUP_FAILURE``: every replacement would fail the same way)."""

    def __init__(self, config: uvicorn.Config, host: str, port: int, workers: int) -> None:
        self.config = config
        self.host, self.port, self.workers = host, port, workers
        self.own = per_worker_sockets()
        # bound now, so that a port in use is an error before any worker starts
        self.shared = None if self.own else bind(host, port, reuse_port=False)
        self.slots: list[tuple[BaseProcess, socket.socket]] = []
        self.stopping = threading.Event()
        self.failed = False
        self._spawn = multiprocessing.get_context("spawn")

    def _start(self) -> tuple[BaseProcess, socket.socket]:
        sock = self.shared or bind(self.host, self.port, reuse_port=True)
        process = self._spawn.Process(target=_run_worker, args=(self.config, sock))
        process.start()
        return process, sock

    def _closed(self, sock: socket.socket) -> None:
        if sock is not self.shared:
            sock.close()

    def run(self) -> int:
        """Serve until stopped; the exit status (1 when a worker's app could not start)."""
        previous = {
            sig: signal.signal(sig, lambda *_: self.stopping.set())
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            for _ in range(self.workers):
                self.slots.append(self._start())
            while not self.stopping.wait(POLL_S):
                self._replace_dead()
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self.shared is not None:
                self.shared.close()
        return 1 if self.failed else 0

    def _replace_dead(self) -> None:
        for n, (process, sock) in enumerate(self.slots):
            if process.is_alive():
                continue
            process.join()
            self._closed(sock)
            if process.exitcode == STARTUP_FAILURE:
                log.error("worker %s could not start its app; stopping", process.pid)
                self.failed = True
                self.stopping.set()
                return
            log.warning("worker %s died (exit %s); starting another", process.pid, process.exitcode)
            self.slots[n] = self._start()

    def _stop_all(self) -> None:
        for process, _ in self.slots:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn finishes the requests in flight
        for process, sock in self.slots:
            process.join(STOP_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
            self._closed(sock)
        self.slots = []


def supervise(config: Any, host: str, port: int, workers: int) -> int:
    """``Supervisor(...).run()``: the exit status."""
    return Supervisor(config, host, port, workers).run()
