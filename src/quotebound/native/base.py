"""The vendors' closed vocabulary, the claims model a response is read into, the checked
accessors every reader reads a response with (a field of the wrong shape is a
``NativeError`` naming it), and how a provider's document is resolved to the sources sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from ..sources import Source, WorkingSet

Vendor = Literal["anthropic", "openai", "cohere", "gemini"]
VENDORS: tuple[Vendor, ...] = get_args(Vendor)


class NativeError(ValueError):
    """A vendor response of the wrong shape; the message names the field."""


@dataclass(slots=True)
class NativeCitation:
    ref: str  # as the provider named it (an id of the set, or a label that is none)
    source_id: str | None
    quote: str | None
    native: dict[str, Any]  # what the provider said: kind, offsets, pages, answer span


@dataclass(slots=True)
class NativeClaim:
    text: str
    citations: list[NativeCitation] = field(default_factory=list)
    context: str | None = None  # the paragraph a link citation on it was given for


@dataclass(slots=True)
class NativeAnswer:
    text: str  # the whole answer text
    claims: list[NativeClaim]


def event_type(event: dict[str, Any]) -> str:
    """A stream event's ``type``, or "" when it has none."""
    kind = event.get("type")
    return kind if isinstance(kind, str) else ""


def bad(message: str) -> NativeError:
    """The error a malformed response is, naming the field."""
    return NativeError(message)


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad(f"{where} is not an object")
    return value


def array(value: Any, where: str, missing_ok: bool = False) -> list[Any]:
    if value is None and missing_ok:
        return []
    if not isinstance(value, list):
        raise bad(f"{where} is not a list")
    return value


def string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise bad(f"{where} is not a string")
    return value


def nonnegative(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise bad(f"{where} is not a non-negative integer")
    return value


def not_an_id(ws: WorkingSet, label: str) -> str:
    """A label no ref resolution can map to a source of the set (not an id, not a number)."""
    label = label.strip() or "citation"
    while label in ws or label.isdigit():
        label += "?"
    return label


def resolved(
    ws: WorkingSet, found: list[Source], label: str, native: dict[str, Any]
) -> list[NativeCitation]:
    """A citation of each matching source (the chunks of one cited file or page: each judged
    on its own, so the one that says it keeps the claim), or one with a label that is not an
    id when nothing sent matches."""
    if not found:
        return [NativeCitation(not_an_id(ws, label), None, None, native)]
    return [NativeCitation(src.id, src.id, None, dict(native)) for src in found]


def by_url(ws: WorkingSet, url: str) -> list[Source]:
    """The sources sent with the page ``url`` names (``same_page``)."""
    page = same_page(url)
    return [s for s in ws if s.url and same_page(s.url) == page]


def same_page(url: str) -> str:
    """``url`` reduced to the page it names: the scheme, the host's case, a trailing slash, a
    ``#fragment`` and tracking parameters (``utm_*``: OpenAI adds ``utm_source=openai``) left
    out. Nothing looser: another path, or another value of another parameter, is another
    page."""
    parts = urlsplit(url.strip())
    query = "&".join(p for p in parts.query.split("&") if p and not p.lower().startswith("utm_"))
    host = parts.netloc.lower()
    path = parts.path.rstrip("/")
    if not parts.scheme and not parts.netloc:  # no scheme: "example.com/page" as written
        host, _, rest = path.partition("/")
        host, path = host.lower(), ("/" + rest).rstrip("/") if rest else ""
    return f"{host}{path}?{query}" if query else f"{host}{path}"


def by_file(ws: WorkingSet, file_id: Any, filename: Any) -> list[Source]:
    """Sources sent under that id, or whose document (key without corpus and chunk), title or
    URL's last segment is that file name."""
    if isinstance(file_id, str) and (src := ws.get(file_id)) is not None:
        return [src]
    if not isinstance(filename, str) or not filename.strip():
        return []
    name = filename.strip()
    out = []
    for src in ws:
        document = (src.key or "").split(":", 1)[-1].split("#", 1)[0]
        tail = (src.url or "").split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if name in (document, src.title, tail, src.id):
            out.append(src)
    return out
