"""The HTTP service and the web page: ``quotebound serve``. See docs/server.md."""

from __future__ import annotations

from .app import create_app
from .state import ServerConfig

__all__ = ["ServerConfig", "create_app"]
