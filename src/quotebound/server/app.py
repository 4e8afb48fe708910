"""The ASGI app: the JSON API under ``/v1`` and the web page at ``/``, put together.

What each part promises is said where it lives: ``routes`` (keys, owners, 404s), ``answers``
(the ask pool and streaming), ``errors`` (every error is JSON, no traceback reaches a client),
``middleware`` (body limit, ``/v1`` headers), ``state`` (pools, the model), ``schemas`` (the
request bodies), ``pages`` (the web page).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI

from .. import __version__
from . import chat, messages, pages, routes
from .errors import install_error_handlers
from .middleware import ApiHeaders, BodyLimit
from .state import ServerConfig, ServerState

log = logging.getLogger("quotebound.server")

__all__ = ["ServerConfig", "create_app"]


def create_app(config: ServerConfig | None = None) -> FastAPI:
    """The service: JSON API, OpenAPI at ``/openapi.json``, web page at ``/``."""
    state = ServerState(config or ServerConfig())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Warm before traffic: uvicorn accepts no connection before this returns, and a worker
        # the supervisor restarts warms the same way.
        if state.config.warm:
            seconds = await anyio.to_thread.run_sync(state.warm)
            log.warning("quotebound worker %d ready in %.1f s", os.getpid(), seconds)
        yield
        state.close()

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
    app.state.server = state  # what the routes' dependencies read
    app.state.stores = state.stores  # the tests read these two
    app.state.admission = state.admission
    app.add_middleware(BodyLimit, limit=state.config.max_body_bytes)
    app.add_middleware(ApiHeaders)  # added last, so it wraps BodyLimit: its 413s get them too
    install_error_handlers(app)
    app.include_router(pages.router)
    app.include_router(routes.router)
    app.include_router(messages.router)
    app.include_router(chat.router)
    return app
