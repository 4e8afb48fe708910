"""quotebound over the Model Context Protocol: verified citations inside the assistants people
already use (Claude Desktop, Claude Code, Cursor, VS Code, ...). ``quotebound mcp`` runs it;
docs/mcp.md says what it gives an assistant and how each client is configured.

``conversation`` holds what a conversation was given and checks against it (no MCP type);
``server`` maps it onto the official SDK's ``MCPServer`` (tools, resources, a prompt). The SDK
is the ``quotebound[mcp]`` extra: importing this package loads none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import ApiKey
    from ..store.pool import Connections
    from .conversation import Asker, Conversation


def run_stdio(conversation: Conversation) -> None:
    """Serve one conversation over stdin and stdout until the client closes them."""
    from .server import build, one_conversation

    build(one_conversation(conversation)).run("stdio")


def http_app(make: Any, stores: Connections) -> Any:
    """The streamable HTTP app (at ``/mcp``): a request without a valid key is 401 before any
    MCP message is read; each session's conversation is made by ``make(key)``; keys are read
    through ``stores``."""
    import logging

    import anyio.to_thread
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ..errors import QuoteboundError

    log = logging.getLogger("quotebound.mcp")

    from .server import Sessions, build

    sessions = Sessions(make, stores)
    inner: ASGIApp = build(sessions).streamable_http_app()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Request(scope).headers.get("authorization", "")
            # (in a worker thread: looking a key up may open a store connection)
            try:
                key = await anyio.to_thread.run_sync(sessions.key_of, header)
            except QuoteboundError as exc:  # the store cannot be reached: not the caller's fault
                log.error("cannot look the key up: %s", exc)
                reply = JSONResponse(  # (as serve says it: store_error, the details logged)
                    {
                        "error": exc.code,
                        "message": "the server cannot reach its store now; try again later",
                    },
                    status_code=exc.http_status,
                )
                await reply(scope, receive, send)
                return
            if key is None:
                reply = JSONResponse(
                    {
                        "error": "unauthorized",
                        "message": "send Authorization: Bearer KEY (create a key with: "
                        "quotebound keys create)",
                    },
                    status_code=401,
                )
                await reply(scope, receive, send)
                return
        await inner(scope, receive, send)

    return app


def conversation_for(
    stores: Connections,
    key: ApiKey | None,
    groups: tuple[str, ...],
    corpora: Any,
    asker: Asker | None,
) -> Conversation:
    """A conversation reading as ``key`` (its groups, traced as its owner), or as the local
    user's ``groups`` when there is no key (stdio); its store connections from ``stores``."""
    from .conversation import Conversation

    if key is not None:
        return Conversation(stores, key.groups, key.id, corpora, asker=asker)
    return Conversation(stores, groups, None, corpora, asker=asker)
