"""What one app holds between requests: its config, the store pool, the model, the ask pool.

Invariants:
- Store connections come from a pool, checked out per request and returned; at most
  ``idle_connections`` stay open between requests; a connection that failed is closed, not
  reused.
- The provider is made once, on the first question; a provider that is not thread-safe answers
  one question at a time. One that cannot be made is a 503 ``provider_unavailable`` (the reason
  goes to the server log only) and is tried again on the next question.
- Answers run in their own bounded pool, so a slow model never starves the other endpoints; at
  most ``max_waiting`` questions are running or queued, and every one admitted gives its place
  back exactly once, however it ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Generic, ParamSpec, Protocol, TypeVar

from ..answering.rerank import DenseReranker
from ..budget import Budget
from ..choices import FALLBACKS
from ..entailment.base import Backend
from ..errors import QuoteboundError
from ..providers import ExtractiveProvider, Provider
from ..store import ApiKey
from ..store.pool import Stores
from .errors import ApiError, provider_unavailable

if TYPE_CHECKING:
    from ..defaults import Checker

log = logging.getLogger("quotebound.server")

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass
class ServerConfig:
    """How a server runs. ``provider`` makes the model once, on the first ask. The parts
    ``serve`` runs by default are made by the factories of ``quotebound.defaults``
    (``ServeOptions.config`` in ``server.workers``: what ``quotebound serve`` builds); None
    here is off."""

    store_url: str | None = None
    provider: Callable[[], Provider] = ExtractiveProvider
    max_body_bytes: int = 1 << 20
    max_sources: int = 500
    ask_workers: int = 8  # questions answered at once (the local model still takes one at a time)
    max_waiting: int = 64  # questions running or queued; beyond it a new one gets 503 busy
    idle_connections: int = 8  # store connections kept open between requests
    # what one verification may cost (claims, citations, characters, wall time): docs/server.md
    budget: Budget = field(default_factory=Budget)
    # the entailment tier every answer runs (made once, on the first ask); None: off
    entailment: Callable[[], Backend] | None = None
    # the answer check every answer runs, made once from the tier (to share its encoder) on the
    # first answer it judges (``defaults.make_answer_check``); None: off
    answer_check: Callable[[Backend | None], Checker] | None = None
    # when an answer would be an abstention, the extractive provider's (AskOptions.fallback):
    # "extractive" (or True: ranked by the answer check when one runs), "covering" (by the
    # question's words), "off" (or False)
    fallback: bool | str = False
    # what re-orders the store's hits before packing (AskOptions.rerank), made once beside the
    # tier and the answer check (to share their encoder) on the first ask; None: BM25's order
    rerank: Callable[..., DenseReranker] | None = None
    # the chunks of the documents a question names first (AskOptions.named_first)
    named_first: bool = True
    # Make every part and run each model once before the app takes traffic (``warm``); False:
    # each is made by the first answer that needs it, as before
    warm: bool = True
    # Links to a cited source without a key (``server.links``): how long they open, and the
    # absolute address links are written with (``serve --public-url``; None: the request's)
    link_days: float = 30.0
    public_url: str | None = None
    # More models ``/v1/messages`` answers with, by the name a request's ``model`` gives
    # (``serve --backend NAME=PROVIDER``): each made once, beside ``provider``
    backends: Mapping[str, Callable[[], Provider]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.fallback, bool) and self.fallback not in FALLBACKS:
            raise ValueError(f"unknown fallback {self.fallback!r}: {', '.join(FALLBACKS)}")
        if not self.link_days > 0:
            raise ValueError(f"link_days must be positive, got {self.link_days!r}")
        if self.public_url is not None and not self.public_url.startswith(("http://", "https://")):
            raise ValueError(f"public_url must start with http:// or https://: {self.public_url!r}")


class Admission:
    """How many questions are running or queued, at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit, self.count = limit, 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self.count >= self.limit:
                return False
            self.count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.count -= 1


class _Closeable(Protocol):
    def close(self) -> None: ...


_M = TypeVar("_M", bound=_Closeable)


class Once(Generic[_M]):
    """What ``factory`` makes (a provider, an entailment backend), made once on first use; one
    that cannot be made is a 503 ``provider_unavailable`` (the reason is logged, not sent)."""

    def __init__(self, factory: Callable[[], _M], what: str) -> None:
        self._factory = factory
        self._what = what
        self._made: _M | None = None
        self._make_lock = threading.Lock()

    def get(self) -> _M:
        with self._make_lock:
            if self._made is None:
                try:
                    self._made = self._factory()
                except QuoteboundError as exc:
                    log.error("cannot make the %s: %s", self._what, exc)
                    raise provider_unavailable() from exc
            return self._made

    def close(self) -> None:
        if self._made is not None:
            self._made.close()


class Model(Once[Provider]):
    """The provider; its calls serialised (``call_lock``) where it is not thread-safe."""

    def __init__(self, factory: Callable[[], Provider]) -> None:
        super().__init__(factory, "provider")
        self.call_lock = threading.Lock()


class ServerState:
    """Everything one app shares between its requests; ``close`` when the app stops."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.stores = Stores(config.store_url, config.idle_connections)
        self.model = Model(config.provider)
        self.backends = {name: Model(make) for name, make in config.backends.items()}
        # (backends are safe to share between the answer threads: each serialises its model)
        self.tier = Once(config.entailment, "entailment backend") if config.entailment else None
        check = config.answer_check
        self.checker = Once(partial(self._beside, check), "answer check") if check else None
        rerank = config.rerank
        self.reranker = Once(partial(self._reranker, rerank), "reranker") if rerank else None
        self.admission = Admission(config.max_waiting)
        self._pool = ThreadPoolExecutor(max_workers=config.ask_workers, thread_name_prefix="qb-ask")
        from ..store import data_dir
        from .links import LinkSigner, link_secret

        self.links = LinkSigner(link_secret(data_dir()), config.link_days)
        self.warmed_in: float | None = None  # seconds ``warm`` took; None: not warm (yet)
        self.warm_error: str | None = None  # why warming failed, when it did

    def _beside(self, make: Callable[[Backend | None], Checker]) -> Checker:
        """The answer check, made beside the tier (its encoder shared) when there is one."""
        return make(self.tier.get() if self.tier is not None else None)

    def _reranker(self, make: Callable[..., DenseReranker]) -> DenseReranker:
        """The reranker, sharing the encoder of the tier or the answer check when one runs."""
        tier = self.tier.get() if self.tier is not None else None
        return make(tier, self.checker.get() if self.checker is not None else None)

    def warm(self) -> float:
        """Make every part the answers need (the provider, the support tier, the answer check,
        the reranker) and run each encoder once on a few words, so that the first answer is as
        fast as the next: called before the app takes traffic (the lifespan's start). Returns
        the seconds it took; a part that cannot be made is left for the first answer to report
        (503 ``provider_unavailable``), and ``ready`` says not ready."""
        import time

        from ..corpus import Hit

        at = time.perf_counter()
        try:
            self.model.get()
            self._warm_backends()
            tier = self.tier.get() if self.tier is not None else None
            if tier is not None:
                tier.judge("Quotebound warms up.", "Quotebound warms up before traffic.")
            if self.checker is not None:
                self.checker.get().answers("What warms up?", "Quotebound warms up.")
            if self.reranker is not None:  # the store's chunks, else a batch of their size
                reranker = self.reranker.get()
                if not self._warm_vectors(reranker):
                    text = "Quotebound warms up before it takes traffic. " * 25
                    hits = [
                        Hit(f"warm:{n}", 1, f"{n} {text}", f"warm{n}", 0, len(text), 1.0)
                        for n in range(reranker.depth)
                    ]
                    reranker.rerank("What does quotebound do before it takes traffic?", hits)
        except Exception as exc:  # (a warm-up is best effort: the answers say what is wrong)
            self.warm_error = f"{type(exc).__name__}: {exc}"
            log.error("warming up failed: %s", self.warm_error)
            return time.perf_counter() - at
        self.warmed_in = time.perf_counter() - at
        return self.warmed_in

    def _warm_backends(self) -> None:
        """Each backend made (a remote one: its client); one that cannot be made is logged and
        left for the requests that name it to report (503), the worker still ready."""
        for name, backend in self.backends.items():
            try:
                backend.get()
            except Exception as exc:
                log.error("backend %s cannot be made: %s: %s", name, type(exc).__name__, exc)

    WARM_BATCH = 256  # chunks embedded per call while warming

    def _warm_vectors(self, reranker: DenseReranker) -> int:
        """The store's chunks (the newest documents' first, as many as the reranker's cache
        keeps) embedded into its cache, so that the first questions embed only themselves.
        Returns how many vectors it added."""
        start = reranker.cached
        with self.stores.checkout() as db:
            hits = db.chunks(reranker.cache_size)
        for at in range(0, len(hits), self.WARM_BATCH):
            reranker.remember(hits[at : at + self.WARM_BATCH])
        return reranker.cached - start

    def models(self) -> dict[str, Model]:
        """The models a request may name (``/v1/messages``): the served one as
        ``quotebound-NAME`` and as its own model name, then each backend by its name."""
        provider = self.model.get()
        named = {f"quotebound-{provider.name}": self.model, provider.model: self.model}
        for name, backend in self.backends.items():
            named.setdefault(name, backend)
        return named

    def readiness(self) -> list[str]:
        """Why this worker should not take traffic now; empty when it should: warm, its store
        answering, room for a question."""
        why: list[str] = []
        if self.warmed_in is None:
            why.append(
                "warming up failed: " + self.warm_error
                if self.warm_error
                else "the models are not loaded yet"
            )
        try:
            with self.stores.checkout() as db:
                db.ping()
        except QuoteboundError as exc:
            why.append(f"the store does not answer: {exc}")
        if self.admission.count >= self.admission.limit:
            why.append(f"{self.admission.limit} questions are already waiting")
        return why

    def key_for(self, headers: Mapping[str, str], x_api_key: bool = False) -> ApiKey | None:
        """The API key a request carries (``Authorization: Bearer KEY``; with ``x_api_key``,
        Anthropic's ``x-api-key`` header first), or None when it carries no valid one. The one
        reader of keys for every face of the service."""
        token = headers.get("x-api-key", "").strip() if x_api_key else ""
        if not token:
            scheme, _, bearer = headers.get("authorization", "").partition(" ")
            token = bearer.strip() if scheme.lower() == "bearer" else ""
        if not token:
            return None
        with self.stores.checkout() as db:  # given back at once: an ask may wait a long time
            return db.authenticate(token)

    def admit(self) -> None:
        """Take a place for one question, or refuse it at once: 503 ``busy``."""
        if not self.admission.enter():
            raise ApiError(
                503,
                "busy",
                f"{self.config.max_waiting} questions are already waiting; retry shortly",
                {"Retry-After": "5"},
            )

    def release(self, _: object = None) -> None:
        """Give back the place ``admit`` took (also a Future's done callback)."""
        self.admission.leave()

    def start(self, work: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """``work`` in the ask pool; when the pool is shutting down, the place taken by
        ``admit`` is given back and the answer is 503 ``busy``."""
        try:
            return self._pool.submit(work, *args, **kwargs)
        except RuntimeError:  # the pool is shutting down
            self.release()
            raise ApiError(503, "busy", "the server is stopping") from None

    def close(self) -> None:
        """Wait for the answers under way (they write their traces), then close everything."""
        self._pool.shutdown(wait=True)
        self.model.close()
        for backend in self.backends.values():
            backend.close()
        if self.reranker is not None:
            self.reranker.close()
        if self.checker is not None:
            self.checker.close()
        if self.tier is not None:
            self.tier.close()
        self.stores.close()
