"""The ASGI middleware around the app: body limit and the ``/v1`` response headers.

Invariants:
- Request bodies above the limit are refused with 413 before they are parsed: by the declared
  ``Content-Length`` at once, and while reading when none (or a false one) was declared. A
  ``Content-Length`` that is not a number is 400 ``bad_request``.
- Every ``/v1`` response carries ``X-Content-Type-Options: nosniff`` and ``Cache-Control:
  no-store`` (they carry document text), unless the response set them itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from .chat import ChatError
from .errors import ErrorReply
from .messages import MessagesError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Routes that answer in Anthropic's (``server.messages``) or OpenAI's (``server.chat``) error
# envelope: a body refused here is answered in it too, as the client's SDK parses it.
ANTHROPIC_PATHS = frozenset({"/v1/messages"})
OPENAI_PATHS = frozenset({"/v1/chat/completions"})


def _refused(path: object, refusal: ErrorReply) -> JSONResponse:
    """A body refused before the app read it, in the envelope of the route it was sent to
    (each face's own error: ``MessagesError``, ``ChatError``)."""
    too_large = refusal.status == 413
    if path in ANTHROPIC_PATHS:
        kind = "request_too_large" if too_large else "invalid_request_error"
        return MessagesError(kind, refusal.message, refusal.status).reply()
    if path in OPENAI_PATHS:
        code = "request_too_large" if too_large else "invalid_content_length"
        return ChatError(refusal.message, refusal.status, code).reply()
    return refusal.response()


_API_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes (413), by header and while reading."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        refusal = None
        if declared is not None and not declared.isdigit():
            refusal = ErrorReply(400, "bad_request", "Content-Length is not a number")
        elif declared is not None and int(declared) > self.limit:
            refusal = ErrorReply(413, "too_large", f"request body over {self.limit} bytes")
        if refusal is not None:
            await _refused(scope.get("path"), refusal)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # answered by the error handlers, inside the app
                    raise HTTPException(413, f"request body over {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


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
