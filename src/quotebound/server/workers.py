"""Several processes over one store: ``quotebound serve --workers N``.

uvicorn starts N worker processes that share the listening socket; the kernel hands each new
connection to one of them, so a slow request holds one worker, never the service, and a worker
that dies (even by ``kill -9``) is restarted by uvicorn's supervisor while the others go on.
Each worker opens its own store connections and makes its own provider (a local model is
loaded once per worker: plan its memory per worker, docs/server.md). The store is what they
share: SQLite in WAL mode or PostgreSQL, both safe for concurrent writers.

The options reach the workers through one environment variable (``QUOTEBOUND_SERVE``, JSON),
read by ``app()``, the factory uvicorn calls in each of them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI

from ..answering.rerank import DenseReranker
from ..budget import Budget
from ..defaults import make_answer_check, make_reranker, make_tier
from ..entailment.base import Backend, EntailmentError
from ..providers import Provider, make_provider
from .app import create_app
from .state import ServerConfig

if TYPE_CHECKING:
    from ..defaults import Checker

ENV = "QUOTEBOUND_SERVE"
_T = TypeVar("_T")


@dataclass(frozen=True)
class ServeOptions:
    """What every worker needs to build the same app."""

    store_url: str | None = None
    max_body_bytes: int = 1 << 20
    provider: str = "extractive"
    model: str | None = None
    model_path: str | None = None
    base_url: str | None = None
    api_key: str | None = None  # (in the workers' environment only, never on a command line)
    budget: dict[str, Any] = field(default_factory=lambda: dataclasses.asdict(Budget()))
    entailment: str = "off"  # the tier every answer runs: a backend name, or off
    # the answer check every answer runs: fast; both (the fast check and the judge on the
    # served model, averaged: the packaged 1.5B or an API model with log-probabilities); off
    answer_check: str = "off"
    fallback: str = "off"  # extractive, covering: the sources' own sentences, when it would abstain
    rerank: str = "off"  # dense: BM25's hits re-ranked with MiniLM before packing, or off
    named_first: bool = True  # the chunks of the documents a question names first
    public_url: str | None = None  # the absolute address links are written with
    link_days: float = 30.0  # how long a signed link to a cited source opens
    # more models /v1/messages answers with: [name, provider, model, base URL] (``--backend``;
    # their API keys from the environment, as each provider reads it)
    backends: list[list[str | None]] = field(default_factory=list)

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    def make_provider(self) -> Provider:
        """The provider, made now (in this process: a local model loads here)."""
        return make_provider(
            self.provider,
            self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            model_path=Path(self.model_path) if self.model_path else None,
        )

    def make_backend(self, name: str) -> Provider:
        """The backend ``name`` (``--backend``), made now."""
        for named, provider, model, base_url in self.backends:
            if named == name:
                return make_provider(provider or "", model, base_url=base_url)
        raise KeyError(name)

    def config(self, made: Provider, tier: Backend | None = None) -> ServerConfig:
        """The app's config, answering with ``made`` (and judging with ``tier`` when given:
        else each worker makes its entailment backend on its first ask; the answer check,
        when on, is made beside the tier on the first answer it judges)."""
        return ServerConfig(
            store_url=self.store_url,
            max_body_bytes=self.max_body_bytes,
            provider=lambda: made,
            budget=Budget(**self.budget),
            entailment=(lambda: tier) if tier is not None else self.tier(),
            answer_check=self.checker(made),
            # (only with a check: unchecked, the extract would overrule a right abstention)
            fallback=self.fallback if self.answer_check != "off" else "off",
            rerank=self.reranker(),
            named_first=self.named_first,
            public_url=self.public_url,
            link_days=self.link_days,
            backends={
                str(name): partial(self.make_backend, str(name)) for name, *_ in self.backends
            },
        )

    # What makes each part, in the worker on its first use: the factories of
    # ``quotebound.defaults``, as ``ask`` makes its parts; the app makes each once.

    def checker(self, made: Provider) -> Callable[[Backend | None], Checker] | None:
        """What makes the answer check beside the tier (in the worker, on the first answer it
        judges), or None: ``both`` judges on ``made``, the served model, which the app closes."""
        if self.answer_check == "off":
            return None
        choice = self.answer_check

        def make(tier: Backend | None) -> Checker:
            check = make_answer_check(choice, made, tier)
            if check is None:  # (as ``_made``: mypy joins the union to object through it)
                raise EntailmentError("the answer check is off: nothing to make")
            return check

        return make

    def tier(self) -> Callable[[], Backend] | None:
        """What makes the entailment backend (in the worker, on its first ask; its judge on the
        packaged judge model), or None."""
        if self.entailment == "off":
            return None
        name = self.entailment
        return lambda: _made(make_tier(name), "entailment tier")

    def reranker(self) -> Callable[..., DenseReranker] | None:
        """What makes the reranker beside the tier and the answer check, or None."""
        if self.rerank == "off":
            return None
        choice = self.rerank
        return lambda *holders: _made(make_reranker(choice, *holders), "reranker")


def _made(part: _T | None, what: str) -> _T:
    """A part a factory made: only ``off`` makes none, and an ``off`` part has no factory."""
    if part is None:
        raise EntailmentError(f"the {what} is off: nothing to make")
    return part


def app() -> FastAPI:
    """The app of one worker, from ``QUOTEBOUND_SERVE`` (uvicorn's ``factory=True``)."""
    options = ServeOptions(**json.loads(os.environ[ENV]))
    return create_app(options.config(options.make_provider()))


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """The threads one worker's encoders may use: its share of the machine's cores, at least
    one."""
    return max(1, (cores or os.cpu_count() or 1) // max(1, workers))


def serve(options: ServeOptions, host: str, port: int, workers: int) -> None:
    """Run ``workers`` processes on one listening socket until interrupted.

    The socket is made here, not by uvicorn: uvicorn's has protocol 0, which asyncio takes for
    "not TCP" and so never sets TCP_NODELAY on the connections it accepts, and every keep-alive
    response then waits ~40 ms for the client's delayed ACK (measured: 44 ms per /healthz).
    """
    import socket

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ[ENV] = options.to_env()  # what each worker builds its app from
    # Each worker's encoders (torch) use the cores it has a share of, not every core: two
    # workers each running two threads on two cores spin against each other (set either
    # variable to choose otherwise).
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(threads_per_worker(workers)))
    config = uvicorn.Config(
        "quotebound.server.workers:app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level="warning",
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
