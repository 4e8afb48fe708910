"""The JSON API: health, ``/v1`` endpoints and the request dependencies they share.

Invariants:
- Every ``/v1`` call needs ``Authorization: Bearer KEY``. A key is bound to ACL groups (what its
  caller may retrieve, and so cite) and owns the traces it writes (what its caller may reopen).
  Someone else's trace is a 404, exactly like an unknown one.
- A source id that was not in a trace's working set is a 404, never a fabricated card.
- The key check gives its store connection back at once (an ask may wait a long time); other
  endpoints hold one connection for the request (``Db``).
- The function names are part of ``/openapi.json`` (operation ids): renaming one is an API
  change.
"""

# No `from __future__ import annotations` here: FastAPI reads these annotations at run time.
import asyncio
import re
from collections.abc import Iterator
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from .. import __version__
from ..errors import NotFoundError
from ..originals import document_page, original_of, pdf_highlights, quotes_of, render_page
from ..sources import WorkingSet
from ..store import ApiKey, Store, TraceRecord
from ..traceview import claims_view, source_view, trace_dict
from ..verdict import Policy
from ..verify import verify
from .answers import run_ask, stream_answer
from .errors import ApiError
from .schemas import AskIn, PolicyIn, VerifyIn
from .state import ServerState

_TRACE_ID = re.compile(r"^[0-9a-f]{1,64}$")

router = APIRouter()


# -- dependencies ------------------------------------------------------------------------


async def server_state(request: Request) -> ServerState:
    return cast(ServerState, request.app.state.server)


State = Annotated[ServerState, Depends(server_state)]


def store(state: State) -> Iterator[Store]:
    with state.stores.checkout() as opened:
        yield opened


Db = Annotated[Store, Depends(store)]


def caller(request: Request, state: State) -> ApiKey:
    key = state.key_for(request.headers)
    if key is None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401,
                "unauthorized",
                "send Authorization: Bearer KEY (create a key with: quotebound keys create)",
            )
        raise ApiError(401, "unauthorized", "unknown or revoked API key")
    return key


Caller = Annotated[ApiKey, Depends(caller)]
TraceId = Annotated[str, Path(max_length=64)]
Sid = Annotated[str, Path(max_length=200)]


# -- endpoints ---------------------------------------------------------------------------


@router.get("/healthz", tags=["service"])
def healthz(db: Db) -> dict[str, Any]:
    """Liveness: the service answers and its store answers a query."""
    db.ping()
    return {"ok": True, "version": __version__}


@router.get("/readyz", tags=["service"], response_model=None)
def readyz(state: State) -> dict[str, Any] | Response:
    """Readiness: 200 when this worker should take traffic (its models loaded and run once,
    its store answering, room for a question), else 503 with the reasons. A load balancer
    sends traffic on this; ``/healthz`` says only that the process answers."""
    why = state.readiness()
    if why:
        return JSONResponse({"ready": False, "reasons": why}, status_code=503)
    return {"ready": True, "warmed_in_s": round(state.warmed_in or 0.0, 3)}


@router.head("/healthz", include_in_schema=False)
def healthz_head(db: Db) -> Response:
    db.ping()
    return Response()


@router.get("/v1/whoami", tags=["service"])
def whoami(key: Caller) -> dict[str, Any]:
    """The calling key: its id (owner of its traces), name and ACL groups."""
    return {"id": key.id, "name": key.name, "groups": list(key.groups)}


@router.post("/v1/verify", tags=["verify"])
def verify_endpoint(body: VerifyIn, key: Caller, state: State) -> dict[str, Any]:
    """Verify a model's raw output against the working set that was sent: the same
    verdict JSON as ``quotebound verify --json``."""
    if len(body.sources) > state.config.max_sources:
        raise ApiError(413, "too_large", f"more than {state.config.max_sources} sources")
    ws = WorkingSet.from_dicts(s.model_dump() for s in body.sources)
    policy = Policy.from_options(**(body.policy or PolicyIn()).model_dump())
    return verify(ws, body.output, body.format, policy, state.config.budget).to_dict()


@router.post("/v1/ask", tags=["ask"], response_model=None)
async def ask_endpoint(
    body: AskIn, key: Caller, state: State
) -> dict[str, Any] | StreamingResponse:
    """Answer a question from the documents the key may read: claims verified, cited,
    repaired once or dropped, or a helpful abstention; traced under the key. With
    ``"stream": true``, server-sent events: ``progress``..., ``claim`` per verified claim,
    then ``answer`` (the same JSON as without streaming), or ``error``. 503 ``busy`` when
    too many questions are waiting."""
    state.admit()
    if body.stream:
        return stream_answer(state, body, key)
    future = state.start(run_ask, state, body, key)
    future.add_done_callback(state.release)
    answer = await asyncio.wrap_future(future)
    return answer.to_dict()


def _trace(db: Store, trace_id: str, key: ApiKey) -> TraceRecord:
    if not _TRACE_ID.match(trace_id):  # not an id we make: no need to ask the store
        raise NotFoundError(f"no trace {trace_id[:64]!r}")
    return db.get_trace(trace_id, owner=key.id)


@router.get("/v1/traces", tags=["traces"])
def list_traces(
    key: Caller, db: Db, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> dict[str, Any]:
    """The caller's newest answers, each with its claims (kept and dropped) and
    citations."""
    out = []
    summaries = db.list_traces(key.id, limit)
    for trace in db.get_traces([s.id for s in summaries], owner=key.id):
        out.append(
            {
                "id": trace.id,
                "created_at": trace.created_at,
                "question": trace.question,
                "status": trace.status,
                "model": trace.model,
                "claims": claims_view(trace),
                "sources": [{"id": s.id, "key": s.key, "title": s.title} for s in trace.sources],
            }
        )
    return {"traces": out}


@router.get("/v1/traces/{trace_id}", tags=["traces"])
def get_trace(trace_id: TraceId, key: Caller, db: Db) -> dict[str, Any]:
    """One of the caller's traces: everything sent and received."""
    return trace_dict(_trace(db, trace_id, key))


@router.get("/v1/traces/{trace_id}/sources/{sid}", tags=["traces"])
def get_source(trace_id: TraceId, sid: Sid, key: Caller, db: Db) -> dict[str, Any]:
    """One source exactly as it was sent in the trace, with its verified spans and a link
    to the original at the right page; 404 if ``sid`` was not sent."""
    return source_view(_trace(db, trace_id, key), sid)


# The original file is served so that nothing in it can act: HTML and every other kind in a
# sandbox (no script, no form, no plugin, no outside request), under its own media type, never
# sniffed; a PDF opens in the browser's own viewer (a sandbox would block the viewer).
_SANDBOX = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_ORIGINAL_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


@router.get("/v1/traces/{trace_id}/sources/{sid}/original", tags=["traces"])
def get_original(trace_id: TraceId, sid: Sid, key: Caller, db: Db) -> Response:
    """The original file of the document version the source was sent from, exactly as it was
    ingested (under the trace's ACL: only its owner); 404 when none was kept."""
    trace = _trace(db, trace_id, key)
    source, original = original_of(db, trace, sid, key.groups)
    name = (source.key or sid).split(":", 1)[-1].split("#", 1)[0].rsplit("/", 1)[-1]
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "original"
    headers = {**_ORIGINAL_HEADERS, "Content-Disposition": f'inline; filename="{safe}"'}
    if original.media_type != "application/pdf":
        headers["Content-Security-Policy"] = _SANDBOX
    return Response(original.data, media_type=original.media_type, headers=headers)


@router.get("/v1/traces/{trace_id}/sources/{sid}/document", tags=["traces"])
def get_document_page(trace_id: TraceId, sid: Sid, key: Caller, db: Db) -> Response:
    """The whole document the source came from, at the version sent, as an HTML page of its
    text (escaped, no script) with the source's verified quotes marked and scrolled to; the
    source's text alone when the document is not stored or the caller may not read it now."""
    page = document_page(db, _trace(db, trace_id, key), sid, key.groups)
    headers = {**_ORIGINAL_HEADERS, "Content-Security-Policy": _SANDBOX}
    return Response(page, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/shared/{trace_id}/{sid}", tags=["traces"], response_model=None)
def shared_source(
    trace_id: TraceId, sid: Sid, state: State, db: Db, exp: str = "", sig: str = ""
) -> Response:
    """A cited source opened by a signed link (``server.links``), without a key: the page of
    ``.../sources/{sid}/document`` as a caller of no group sees it (the whole document only
    when it is public, else the source's text as it was sent). An altered or expired link is
    a 403 page."""
    if not _TRACE_ID.match(trace_id) or not state.links.valid(trace_id, sid, exp, sig[:128]):
        page = (
            "<!doctype html><meta charset=utf-8><title>Link not valid</title>"
            "<p>This link to a cited source is not valid: it has expired or was altered. "
            "Ask for a new answer, or open the source with your API key.</p>"
        )
        return Response(page, status_code=403, media_type="text/html; charset=utf-8")
    page = document_page(db, db.get_trace(trace_id), sid, ())
    headers = {**_ORIGINAL_HEADERS, "Content-Security-Policy": _SANDBOX}
    return Response(page, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/v1/traces/{trace_id}/sources/{sid}/highlights", tags=["traces"])
def get_highlights(trace_id: TraceId, sid: Sid, key: Caller, db: Db) -> dict[str, Any]:
    """Where the source's verified quotes stand on the pages of its original PDF: per page,
    its size and one rectangle per line, in PDF points (origin bottom left); empty for an
    original that is not a PDF."""
    trace = _trace(db, trace_id, key)
    source, original = original_of(db, trace, sid, key.groups)
    pages = []
    if original.media_type == "application/pdf":
        found = pdf_highlights(original.data, source.page, quotes_of(trace, source))
        pages = [
            {
                "page": h.page,
                "width": h.width,
                "height": h.height,
                "boxes": [list(b) for b in h.boxes],
            }
            for h in found
        ]
    return {"trace": trace.id, "source": sid, "media_type": original.media_type, "pages": pages}


@router.get("/v1/traces/{trace_id}/sources/{sid}/page.png", tags=["traces"])
def get_page_image(
    trace_id: TraceId,
    sid: Sid,
    key: Caller,
    db: Db,
    page: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """The page of the original PDF that holds the source's verified quote (or ``page``, one
    of the pages that hold its quotes), as a PNG with the quote highlighted on it."""
    trace = _trace(db, trace_id, key)
    source, original = original_of(db, trace, sid, key.groups)
    if original.media_type != "application/pdf":
        raise NotFoundError(f"the original of {sid} is not a PDF: open it as text instead")
    found = pdf_highlights(original.data, source.page, quotes_of(trace, source))
    chosen = [h for h in found if page is None or h.page == page]
    if not chosen:
        raise NotFoundError(f"no verified quote of {sid} was found on that page of the original")
    png = render_page(original.data, chosen[0])
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})
