"""A cited source's original file, and the verified quote shown on it.

Ingest keeps each document version's original bytes (``Store.original``). From a trace, a
source that was sent opens as the file it came from, exactly as it was when the answer was
written (``original_of``), and:

- a PDF opens at its page with the quote highlighted on the page itself (``pdf_highlights``,
  ``render_page``; ``pdf.py``, the PNG written by ``png.py``);
- an HTML original opens rendered safely (``html_page``, ``safehtml.py``: structure and emphasis
  kept, no attribute, script, style or embed), a Markdown one rendered from its text
  (``markdown_page``, ``markdown.py``: headings, lists, quotes, tables, code, emphasis; no link,
  image or raw HTML), any other as its text (``text_page``, ``page.py``); in each, every
  character escaped and the verified quotes marked where they stand (found as ``quotes.py``
  finds them) and scrolled to: nothing of the original runs or loads.

This module is the public face: the names other modules import, and the two that pick a
source's original (``original_of``) and the page its whole document is shown as
(``document_page``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cards import document_of
from ..errors import NotFoundError
from ..store.base import Original, Store, TraceRecord, TraceSource
from ..traceview import sent_source, spans_for
from .markdown import MAX_MARKDOWN_CHARS, markdown_page
from .page import text_page
from .pdf import (
    ALPHA,
    DEFAULT_SCALE,
    HIGHLIGHT,
    MAX_CHARS_READ,
    MAX_PAGES_SEARCHED,
    MAX_PIXELS,
    Box,
    OriginalError,
    PageHighlight,
    pdf_highlights,
    render_page,
)
from .quotes import CONTEXT_WORDS, Quote, quotes_of
from .safehtml import MAX_HTML_BYTES, html_page

__all__ = [
    "ALPHA",
    "CONTEXT_WORDS",
    "DEFAULT_SCALE",
    "HIGHLIGHT",
    "MAX_CHARS_READ",
    "MAX_HTML_BYTES",
    "MAX_MARKDOWN_CHARS",
    "MAX_PAGES_SEARCHED",
    "MAX_PIXELS",
    "Box",
    "OriginalError",
    "PageHighlight",
    "Quote",
    "document_page",
    "html_page",
    "markdown_page",
    "original_of",
    "pdf_highlights",
    "quotes_of",
    "render_page",
    "text_page",
]


def original_of(
    store: Store, trace: TraceRecord, sid: str, groups: Sequence[str] | None = None
) -> tuple[TraceSource, Original]:
    """The source ``sid`` as sent in ``trace``, and the original file of the document version
    it came from; ``NotFoundError`` when it was not sent, came from no stored document, no
    original was kept, or (``groups`` given: the service's callers) the document's ACL does
    not admit the caller now: the whole file is more than the chunks the trace holds."""
    source = sent_source(trace, sid)
    if not source.key or source.version is None:
        raise NotFoundError(f"{sid} of trace {trace.id} was not sent from a stored document")
    key = document_of(source.to_source())
    original = store.original(key, source.version, groups)
    if original is None:
        raise NotFoundError(
            f"no original was kept for {key} v{source.version} (ingested with --no-originals, "
            "or before originals were kept): its text as sent is all there is"
        )
    return source, original


def document_page(
    store: Store, trace: TraceRecord, sid: str, groups: Sequence[str] | None = None
) -> str:
    """The whole document a sent source came from, at the version that was sent, as an HTML page
    with the source's verified quotes marked where they stand and the first scrolled to: an HTML
    original rendered safely (``html_page``), any other document's text escaped; the source's
    text alone when its document is not stored, or (``groups`` given) its ACL does not admit the
    caller now."""
    source = sent_source(trace, sid)
    try:
        _, original = original_of(store, trace, sid, groups)
    except NotFoundError:
        original = None
    if original is not None and original.media_type == "text/html":  # rendered, made safe
        page = html_page(original.data, quotes_of(trace, source), source.title)
        if page is not None:
            return page
    spans = spans_for(trace, sid)
    if source.key and source.version is not None and source.start is not None:
        key = document_of(source.to_source())
        readable = groups is None or store.readable(key, groups)
        try:
            text = store.document_text(key, source.version) if readable else None
        except NotFoundError:
            text = None
        end = source.start + len(source.text)
        if text is not None and text[source.start : end] == source.text:
            shifted = [[a + source.start, b + source.start] for a, b in spans]
            if _is_markdown(original, key) and len(text) <= MAX_MARKDOWN_CHARS:
                return markdown_page(text, shifted, source.title)
            whole = TraceSource(source.id, text, source.key, source.title)
            return text_page(whole, shifted, source.title)
    return text_page(source, spans)


def _is_markdown(original: Original | None, key: str) -> bool:
    if original is not None:
        return original.media_type == "text/markdown"
    return key.lower().endswith((".md", ".markdown"))  # (kept without its file: by its name)
