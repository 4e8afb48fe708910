"""The ASGI app: the JSON API under ``/v1`` and the web page at ``/``.

Invariants:
- Every ``/v1`` call needs ``Authorization: Bearer KEY``. A key is bound to ACL groups (what its
  caller may retrieve, and so cite) and owns the traces it writes (what its caller may reopen).
  Someone else's trace is a 404, exactly like an unknown one.
- A source id that was not in a trace's working set is a 404, never a fabricated card.
- Every error is JSON ``{"error": {"code", "message"}}`` with a 4xx/5xx status; no traceback
  ever reaches a client (unexpected errors are logged here and answered with a plain 500).
- Streaming (``"stream": true``) sends progress, then each claim only after it passed
  verification, then the whole answer: a draft is never shown as verified.
- Request bodies above ``max_body_bytes`` are refused with 413 before they are parsed.
- Answers run in their own bounded pool, so a slow model never starves the other endpoints;
  when too many questions wait, a new one gets 503 ``busy`` at once.
- Store connections come from a pool, checked out per request and returned; a connection that
  failed is closed, not reused. Store and provider failures reach clients as a generic 503 (the
  details, paths included, go to the server log only).
"""

# No `from __future__ import annotations` here: FastAPI reads these annotations at run time.
import asyncio
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException

from .. import __version__
from ..errors import InputError, NotFoundError, PolicyError, QuoteboundError, StoreError
from ..packing import DEFAULT_BUDGET_CHARS
from ..pipeline import Answer, AskOptions, ask
from ..providers import ExtractiveProvider, Provider
from ..sources import Source, WorkingSet
from ..store import ApiKey, Store, open_store
from ..traceview import claims_view, source_view, trace_dict
from ..verify import Policy, verify

log = logging.getLogger("quotebound.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_P = ParamSpec("_P")
_T = TypeVar("_T")

_STATUS_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 413: "too_large", 415: "unsupported_media_type",
    422: "invalid_request", 500: "internal", 503: "unavailable",
}  # fmt: skip


@dataclass
class ServerConfig:
    """How a server runs. ``provider`` makes the model once, on the first ask."""

    store_url: str | None = None
    provider: Callable[[], Provider] = ExtractiveProvider
    max_body_bytes: int = 1 << 20
    max_sources: int = 500
    ask_workers: int = 8  # questions answered at once (the local model still takes one at a time)
    max_waiting: int = 64  # questions running or queued; beyond it a new one gets 503 busy
    idle_connections: int = 8  # store connections kept open between requests


# -- request bodies ----------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceIn(_Body):
    id: str = Field(min_length=1, max_length=200, description="What the model cites: S1, doc_9")
    text: str = Field(description="Exactly the text that was sent to the model")
    key: str | None = None
    title: str | None = None
    url: str | None = None
    updated: str | None = None
    kind: Literal["document", "tool", "user"] = "document"
    page: int | None = Field(default=None, ge=1)


class PolicyIn(_Body):
    min_quote_words: int = Field(default=4, ge=1, le=1000)
    max_quote_words: int = Field(default=40, ge=1, le=1000)
    allow_user_evidence: bool = False
    sentinels: list[str] = Field(default_factory=list, max_length=20)


class VerifyIn(_Body):
    sources: list[SourceIn] = Field(description="The working set that was sent")
    output: str = Field(description="The model's raw output")
    format: Literal["auto", "json", "inline", "evidence", "cites"] = "auto"
    policy: PolicyIn | None = None


_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000,
                                         pattern=r"^[^\x00]*$")]  # fmt: skip
_Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]


class AskIn(_Body):
    question: _Text
    corpus: list[_Name] | None = Field(default=None, description="Search only these corpora")
    format: Literal["json", "inline", "evidence"] = "json"
    limit: int = Field(default=20, ge=1, le=200, description="Chunks retrieved before packing")
    budget: int = Field(default=DEFAULT_BUDGET_CHARS, ge=1, le=1_000_000)
    stream: bool = Field(default=False, description="Answer as server-sent events")


# -- errors ------------------------------------------------------------------------------


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    headers = dict(headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    body: dict[str, Any] = {"error": {"code": code, "message": message, **extra}}
    return JSONResponse(body, status_code=status, headers=headers or None)


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


_UNAVAILABLE = {
    "store_error": "the store is unavailable; the server log has the details",
    "provider_unavailable": "the model is unavailable; the server log has the details",
}


def _status_of(exc: QuoteboundError) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, InputError | PolicyError):
        return 400
    return 500  # StoreError never gets here: its handler answers a generic 503


def _validation_message(exc: RequestValidationError) -> tuple[int, str, str, list[Any]]:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return 400, "malformed_json", "the request body is not valid JSON", []
    if any(tuple(e.get("loc", ())) == ("body",) for e in errors):
        message = "the request body must be a JSON object, sent as Content-Type: application/json"
        return 400, "malformed_json", message, []
    details = [
        {"at": ".".join(str(p) for p in e.get("loc", ()) if p != "body"), "problem": e.get("msg")}
        for e in errors
    ]
    first = details[0] if details else {"at": "", "problem": "invalid"}
    where = f" at {first['at']}" if first["at"] else ""
    return 422, "invalid_request", f"{first['problem']}{where}", details


def _install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return _error(exc.status, exc.code, exc.message, exc.headers)

    async def on_quotebound(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, QuoteboundError)
        if isinstance(exc, StoreError):  # paths and server details stay in the log
            log.error("store error on %s %s: %s", request.method, request.url.path, exc)
            return _error(503, "store_error", _UNAVAILABLE["store_error"])
        return _error(_status_of(exc), exc.code, str(exc))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path[:200]}"
        elif exc.status_code == 405 and message == "Method Not Allowed":
            message = f"{request.method} is not allowed on {request.url.path[:200]}"
        elif exc.status_code == 400 and code == "bad_request":
            message = f"the request body could not be read ({message})"
        return _error(exc.status_code, code, message, dict(exc.headers or {}))

    async def on_invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        status, code, message, details = _validation_message(exc)
        if details:
            return _error(status, code, message, None, details=details)
        return _error(status, code, message)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal", "internal error; the server log has the details")

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(QuoteboundError, on_quotebound)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(Exception, on_unexpected)


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes (413), by header and while reading."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and not declared.isdigit():
            response = _error(400, "bad_request", "Content-Length is not a number")
            await response(scope, receive, send)
            return
        if declared is not None and int(declared) > self.limit:
            response = _error(413, "too_large", f"request body over {self.limit} bytes")
            await response(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise HTTPException(413, f"request body over {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


# -- shared state ------------------------------------------------------------------------


class _Stores:
    """A pool of store connections: one is checked out per request and given back after it;
    at most ``idle`` stay open between requests; one that failed is closed, never reused."""

    def __init__(self, url: str | None, idle: int) -> None:
        self.url = url
        self.idle = idle
        self._free: list[Store] = []
        self._lock = threading.Lock()
        self._closed = False
        self.opened = 0  # connections opened so far (for tests and the log)

    @contextmanager
    def checkout(self) -> Iterator[Store]:
        with self._lock:
            store = self._free.pop() if self._free else None
        if store is None:
            store = open_store(self.url)
            with self._lock:
                self.opened += 1
        healthy = False
        try:
            yield store
            healthy = True
        except StoreError:
            raise
        except QuoteboundError:  # the request failed, not the connection (a 404, a 400)
            healthy = True
            raise
        finally:
            self._give_back(store, healthy)

    def _give_back(self, store: Store, healthy: bool) -> None:
        """Keep a healthy connection for the next request (up to ``idle``); close the rest.
        A StoreError, or anything unexpected, closes it: it may be broken."""
        if healthy and not self._closed:
            with self._lock:
                if len(self._free) < self.idle:
                    self._free.append(store)
                    return
        store.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for store in free:
            store.close()


class _Admission:
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


class _Model:
    """The provider, made once on first use; calls serialised where it is not thread-safe."""

    def __init__(self, factory: Callable[[], Provider]) -> None:
        self._factory = factory
        self._provider: Provider | None = None
        self._make_lock = threading.Lock()
        self.call_lock = threading.Lock()

    def get(self) -> Provider:
        with self._make_lock:
            if self._provider is None:
                try:
                    self._provider = self._factory()
                except QuoteboundError as exc:
                    log.error("cannot make the provider: %s", exc)
                    raise ApiError(
                        503, "provider_unavailable", _UNAVAILABLE["provider_unavailable"]
                    ) from exc
            return self._provider

    def close(self) -> None:
        if self._provider is not None:
            self._provider.close()


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _claim_events(answer: Answer) -> Iterator[str]:
    for index, claim in enumerate(answer.claims):
        cards = [c.to_dict() for c in answer.cards if c.number in claim.cards]
        yield _sse("claim", {
            "index": index, "text": claim.text, "cards": cards,
            "cites": [x.to_dict() for x in claim.cites], "verified": True,
            "trace_id": answer.trace_id,
        })  # fmt: skip


_WEB = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


_TRACE_ID = re.compile(r"^[0-9a-f]{1,64}$")
_API_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


class ApiHeaders:
    """``nosniff`` and ``no-store`` on every /v1 response: they carry document text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {k.lower() for k, _ in headers}
                for name, value in _API_HEADERS.items():
                    if name.lower().encode() not in present:
                        headers.append((name.lower().encode(), value.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def _asset(name: str) -> bytes:
    return resources.files("quotebound.server").joinpath("web", name).read_bytes()


# -- the app -----------------------------------------------------------------------------


def create_app(config: ServerConfig | None = None) -> FastAPI:
    """The service: JSON API, OpenAPI at ``/openapi.json``, web page at ``/``."""
    cfg = config or ServerConfig()
    stores = _Stores(cfg.store_url, cfg.idle_connections)
    model = _Model(cfg.provider)
    pool = ThreadPoolExecutor(max_workers=cfg.ask_workers, thread_name_prefix="qb-ask")
    waiting = _Admission(cfg.max_waiting)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        yield
        pool.shutdown(wait=True)
        model.close()
        stores.close()

    app = FastAPI(
        title="quotebound",
        version=__version__,
        description=(
            "Answers from documents where every claim links to its source. Every /v1 call "
            "needs `Authorization: Bearer KEY` (create keys with `quotebound keys create`). "
            'Errors are `{"error": {"code", "message"}}`.'
        ),
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.stores = stores
    app.state.admission = waiting
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)
    app.add_middleware(ApiHeaders)
    _install_error_handlers(app)

    def store() -> Iterator[Store]:
        with stores.checkout() as opened:
            yield opened

    Db = Annotated[Store, Depends(store)]

    def caller(request: Request) -> ApiKey:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401, "unauthorized",
                "send Authorization: Bearer KEY (create a key with: quotebound keys create)",
            )  # fmt: skip
        with stores.checkout() as db:  # given back at once: an ask may wait a long time
            key = db.authenticate(token.strip())
        if key is None:
            raise ApiError(401, "unauthorized", "unknown or revoked API key")
        return key

    Caller = Annotated[ApiKey, Depends(caller)]
    TraceId = Annotated[str, Path(max_length=64)]
    Sid = Annotated[str, Path(max_length=200)]

    def run_ask(body: AskIn, key: ApiKey, progress: Any = None) -> Answer:
        """One answer, in the ask pool (never in the request threadpool)."""
        options = AskOptions(
            corpora=body.corpus, groups=key.groups, format=body.format, limit=body.limit,
            budget_chars=body.budget, owner=key.id,
        )  # fmt: skip
        provider = model.get()
        guard = nullcontext() if provider.thread_safe else model.call_lock
        with guard, stores.checkout() as db:
            return ask(body.question, db, provider, options, progress)

    def admit() -> None:
        if not waiting.enter():
            raise ApiError(503, "busy", f"{cfg.max_waiting} questions are already waiting; "
                           "retry shortly", {"Retry-After": "5"})  # fmt: skip

    def release(_: Any = None) -> None:
        waiting.leave()

    def start(work: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """``work`` in the ask pool; when the pool is shutting down, the place taken by
        ``admit`` is given back and the answer is 503 ``busy``."""
        try:
            return pool.submit(work, *args, **kwargs)
        except RuntimeError:  # the pool is shutting down
            release()
            raise ApiError(503, "busy", "the server is stopping") from None

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page() -> Response:
        return Response(_asset("index.html"), media_type="text/html; charset=utf-8",
                        headers=_PAGE_HEADERS)  # fmt: skip

    @app.api_route("/static/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _WEB:
            raise ApiError(404, "not_found", "no such file")
        return Response(_asset(name), media_type=_WEB[name], headers=_PAGE_HEADERS)

    @app.get("/healthz", tags=["service"])
    def healthz(db: Db) -> dict[str, Any]:
        """Liveness: the service answers and its store answers a query."""
        db.ping()
        return {"ok": True, "version": __version__}

    @app.head("/healthz", include_in_schema=False)
    def healthz_head(db: Db) -> Response:
        db.ping()
        return Response()

    @app.get("/v1/whoami", tags=["service"])
    def whoami(key: Caller) -> dict[str, Any]:
        """The calling key: its id (owner of its traces), name and ACL groups."""
        return {"id": key.id, "name": key.name, "groups": list(key.groups)}

    @app.post("/v1/verify", tags=["verify"])
    def verify_endpoint(body: VerifyIn, key: Caller) -> dict[str, Any]:
        """Verify a model's raw output against the working set that was sent: the same
        verdict JSON as ``quotebound verify --json``."""
        if len(body.sources) > cfg.max_sources:
            raise ApiError(413, "too_large", f"more than {cfg.max_sources} sources")
        ws = WorkingSet(Source(**s.model_dump()) for s in body.sources)
        p = body.policy or PolicyIn()
        policy = Policy(p.min_quote_words, p.max_quote_words, p.allow_user_evidence)
        for sentinel in p.sentinels:
            policy = policy.with_sentinel(sentinel)
        return verify(ws, body.output, body.format, policy).to_dict()

    @app.post("/v1/ask", tags=["ask"], response_model=None)
    async def ask_endpoint(body: AskIn, key: Caller) -> dict[str, Any] | StreamingResponse:
        """Answer a question from the documents the key may read: claims verified, cited,
        repaired once or dropped, or a helpful abstention; traced under the key. With
        ``"stream": true``, server-sent events: ``progress``..., ``claim`` per verified claim,
        then ``answer`` (the same JSON as without streaming), or ``error``. 503 ``busy`` when
        too many questions are waiting."""
        admit()
        if not body.stream:
            future = start(run_ask, body, key)
            future.add_done_callback(release)
            answer = await asyncio.wrap_future(future)
            return answer.to_dict()
        # The work starts now, whether or not the client reads the stream: it always gives
        # its place back and writes its trace, even when the client goes away.
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

        def put(item: tuple[str, Any] | None) -> None:
            # RuntimeError: the event loop is gone; nobody listens, and the answer goes on.
            with suppress(RuntimeError):
                loop.call_soon_threadsafe(events.put_nowait, item)

        start(_answer_into, body, key, put)
        return StreamingResponse(
            _stream(events), media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )  # fmt: skip

    def _answer_into(body: AskIn, key: ApiKey, put: Callable[[Any], None]) -> None:
        """Answer in the ask pool, putting progress, then the answer or an error, then None."""

        def progress(stage: str, data: dict[str, Any]) -> None:
            put(("progress", {"stage": stage, **data}))

        try:
            put(("answer", run_ask(body, key, progress)))
        except ApiError as exc:
            put(("error", {"code": exc.code, "message": exc.message}))
        except StoreError as exc:
            log.error("store error while answering: %s", exc)
            put(("error", {"code": "store_error", "message": _UNAVAILABLE["store_error"]}))
        except QuoteboundError as exc:
            put(("error", {"code": exc.code, "message": str(exc)}))
        except Exception:
            log.exception("unexpected error while answering")
            message = "internal error; the server log has the details"
            put(("error", {"code": "internal", "message": message}))
        finally:
            put(None)
            release()

    async def _stream(events: asyncio.Queue[tuple[str, Any] | None]) -> AsyncIterator[str]:
        yield _sse("progress", {"stage": "searching"})
        while (item := await events.get()) is not None:
            kind, payload = item
            if kind == "answer":
                for event in _claim_events(payload):
                    yield event
                yield _sse("answer", payload.to_dict())
            else:
                yield _sse(kind, payload)

    def _trace(db: Store, trace_id: str, key: ApiKey) -> Any:
        if not _TRACE_ID.match(trace_id):  # not an id we make: no need to ask the store
            raise NotFoundError(f"no trace {trace_id[:64]!r}")
        return db.get_trace(trace_id, owner=key.id)

    @app.get("/v1/traces", tags=["traces"])
    def list_traces(
        key: Caller, db: Db, limit: Annotated[int, Query(ge=1, le=200)] = 50
    ) -> dict[str, Any]:
        """The caller's newest answers, each with its claims (kept and dropped) and
        citations."""
        out = []
        summaries = db.list_traces(key.id, limit)
        for trace in db.get_traces([s.id for s in summaries], owner=key.id):
            out.append({
                "id": trace.id, "created_at": trace.created_at, "question": trace.question,
                "status": trace.status, "model": trace.model, "claims": claims_view(trace),
                "sources": [{"id": s.id, "key": s.key, "title": s.title} for s in trace.sources],
            })  # fmt: skip
        return {"traces": out}

    @app.get("/v1/traces/{trace_id}", tags=["traces"])
    def get_trace(trace_id: TraceId, key: Caller, db: Db) -> dict[str, Any]:
        """One of the caller's traces: everything sent and received."""
        return trace_dict(_trace(db, trace_id, key))

    @app.get("/v1/traces/{trace_id}/sources/{sid}", tags=["traces"])
    def get_source(trace_id: TraceId, sid: Sid, key: Caller, db: Db) -> dict[str, Any]:
        """One source exactly as it was sent in the trace, with its verified spans and a link
        to the original at the right page; 404 if ``sid`` was not sent."""
        return source_view(_trace(db, trace_id, key), sid)

    return app
