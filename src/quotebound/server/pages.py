"""The web page at ``/`` and its two static files, served by the same app.

Invariants:
- Only the files named in ``_WEB`` are served (anything else is a 404), so no path a client
  sends ever reaches the file system.
- The page and its files carry a Content-Security-Policy that allows only the page's own
  script and style: server text that looks like HTML stays inert.
"""

# No `from __future__ import annotations` here: FastAPI reads these annotations at run time.
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from .errors import ApiError

router = APIRouter()

_WEB = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _asset(name: str) -> bytes:
    return resources.files("quotebound.server").joinpath("web", name).read_bytes()


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
def page() -> Response:
    return Response(
        _asset("index.html"), media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS
    )


@router.api_route("/static/{name}", methods=["GET", "HEAD"], include_in_schema=False)
def static(name: str) -> Response:
    if name not in _WEB:
        raise ApiError(404, "not_found", "no such file")
    return Response(_asset(name), media_type=_WEB[name], headers=_PAGE_HEADERS)
