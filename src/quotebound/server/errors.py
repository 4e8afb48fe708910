"""How any failure becomes the JSON error response: one mapping, ``reply_for``.

Invariants:
- Every error is JSON ``{"error": {"code", "message"}}`` with a 4xx/5xx status (validation
  errors add ``details``); no traceback ever reaches a client. The streaming endpoint sends the
  same code and message as its ``error`` event (``ErrorReply.event``).
- A QuoteboundError's status is its class's ``http_status`` (``quotebound/errors.py``), its code
  the class's ``code``; nothing else here decides them.
- A StoreError's message (paths, server details) and an unexpected error's traceback go to the
  server log only; the client gets a generic message.
- A 401 always carries ``WWW-Authenticate: Bearer``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ..errors import QuoteboundError, StoreError

log = logging.getLogger("quotebound.server")

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal",
    503: "unavailable",
}

STORE_UNAVAILABLE = "the store is unavailable; the server log has the details"
PROVIDER_UNAVAILABLE = "the model is unavailable; the server log has the details"
INTERNAL = "internal error; the server log has the details"


class ApiError(Exception):
    """A refusal of the HTTP layer itself (no key, busy, no model): status, code, headers."""

    def __init__(
        self, http_status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.http_status, self.code, self.message = http_status, code, message
        self.headers = headers


async def json_body(request: Request) -> Any:
    """A face's request body, parsed: ``ApiError`` 400 ``bad_request`` when it is not JSON,
    413 ``too_large`` when it runs over the body limit while read (no ``Content-Length``).
    The faces with an API's own envelope (Messages, Chat Completions) say these in it."""
    try:
        return await request.json()
    except ValueError:
        raise ApiError(400, "bad_request", "the request body is not valid JSON") from None
    except HTTPException as exc:
        raise ApiError(exc.status_code, "too_large", str(exc.detail)) from None


def provider_unavailable() -> ApiError:
    """The model cannot be made; the reason is logged by whoever tried to make it."""
    return ApiError(503, "provider_unavailable", PROVIDER_UNAVAILABLE)


@dataclass(frozen=True)
class ErrorReply:
    """What a client is told about a failure."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    details: list[Any] = field(default_factory=list)

    def response(self) -> JSONResponse:
        headers = dict(self.headers)
        if self.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return JSONResponse({"error": error}, status_code=self.status, headers=headers or None)

    def event(self) -> dict[str, str]:
        """The data of a streamed ``error`` event."""
        return {"code": self.code, "message": self.message}


def reply_for(exc: Exception, request: Request | None = None) -> ErrorReply:
    """The reply for ``exc``, raised while serving ``request`` (None: while answering in the
    ask pool, after a streamed response has started)."""
    where = f"on {request.method} {request.url.path}" if request else "while answering"
    if isinstance(exc, ApiError):
        return ErrorReply(exc.http_status, exc.code, exc.message, dict(exc.headers or {}))
    if isinstance(exc, StoreError):  # paths and server details stay in the log
        log.error("store error %s: %s", where, exc)
        return ErrorReply(exc.http_status, exc.code, STORE_UNAVAILABLE)
    if isinstance(exc, QuoteboundError):
        return ErrorReply(exc.http_status, exc.code, str(exc))
    if isinstance(exc, HTTPException):
        return _http_reply(exc, request)
    if isinstance(exc, RequestValidationError):
        return _validation_reply(exc)
    log.error("unexpected error %s", where, exc_info=exc)
    return ErrorReply(500, "internal", INTERNAL)


def _http_reply(exc: HTTPException, request: Request | None) -> ErrorReply:
    """Starlette's own refusals (no route, wrong method, unreadable body, 413 while reading),
    with messages that say what was asked."""
    code = _STATUS_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
    method, path = (request.method, request.url.path[:200]) if request else ("", "")
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such endpoint: {method} {path}"
    elif exc.status_code == 405 and message == "Method Not Allowed":
        message = f"{method} is not allowed on {path}"
    elif exc.status_code == 400 and code == "bad_request":
        message = f"the request body could not be read ({message})"
    return ErrorReply(exc.status_code, code, message, dict(exc.headers or {}))


def _validation_reply(exc: RequestValidationError) -> ErrorReply:
    """A body that is not a JSON object is 400 ``malformed_json``; any other mismatch with the
    schema is 422 with one ``{"at", "problem"}`` per error, the first one in the message."""
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return ErrorReply(400, "malformed_json", "the request body is not valid JSON")
    if any(tuple(e.get("loc", ())) == ("body",) for e in errors):
        message = "the request body must be a JSON object, sent as Content-Type: application/json"
        return ErrorReply(400, "malformed_json", message)
    details = [
        {"at": ".".join(str(p) for p in e.get("loc", ()) if p != "body"), "problem": e.get("msg")}
        for e in errors
    ]
    first = details[0] if details else {"at": "", "problem": "invalid"}
    where = f" at {first['at']}" if first["at"] else ""
    return ErrorReply(422, "invalid_request", f"{first['problem']}{where}", details=details)


async def _handle(request: Request, exc: Exception) -> Response:
    return reply_for(exc, request).response()


def install_error_handlers(app: FastAPI) -> None:
    """One handler for every kind of failure, registered per class: FastAPI would answer
    HTTPException and RequestValidationError in its own shape, and Starlette calls the handler
    for ``Exception`` from its outermost middleware, outside ours (no ``/v1`` headers) and then
    re-raises to the server: only the truly unexpected goes there."""
    for kind in (ApiError, QuoteboundError, HTTPException, RequestValidationError, Exception):
        app.add_exception_handler(kind, _handle)
