"""A cited source's original file, and the verified quote shown on it.

Ingest keeps each document version's original bytes (``Store.original``). From a trace, a
source that was sent opens as the file it came from, exactly as it was when the answer was
written (``original_of``), and:

- a PDF opens at its page with the quote highlighted on the page itself (``pdf_highlights``):
  the quote's characters are found in the page's own text (PDFium's, with the offset map of the
  normaliser, line-break hyphens taken out the way ingest cleans them), their boxes merged into
  one rectangle per line, and the page rendered to PNG with the rectangles drawn over the words
  (``render_page``). A quote that runs over a page break is found across the two pages and
  highlighted on both;
- an HTML original opens rendered safely (``html_page``: structure and emphasis kept, no
  attribute, script, style or embed), a Markdown one rendered from its text (``markdown_page``:
  headings, lists, quotes, tables, code, emphasis; no link, image or raw HTML), any other as
  its text (``text_page``); in each, every character escaped and the verified quotes marked
  where they stand and scrolled to: nothing of the original runs or loads.

Work is bounded: a quote is looked for on its source's page and the two after it (or, with no
page known, on at most ``MAX_PAGES_SEARCHED`` pages and ``MAX_CHARS_READ`` characters), each
page read once; a page is rendered at most ``MAX_PIXELS`` pixels. PDFium is not thread-safe:
every use of it holds one lock.
"""

from __future__ import annotations

import html
import re
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path
from typing import Any

from .cards import document_of
from .errors import IngestError, InputError, NotFoundError
from .ingest.loaders import (
    _ATX_HEADING,
    _CELL_TAGS,
    _CLOSING_HASHES,
    _FENCE,
    _LINE_TAGS,
    _PARAGRAPH_TAGS,
    _closes_fence,
    _decode,
)
from .store.base import Original, Store, TraceRecord, TraceSource
from .text.markup import EMPHASIS, STRUCK, TICK, markup_kinds
from .text.normalize import NormalizedText, normalize
from .text.words import find_words
from .traceview import sent_source, spans_for

MAX_PAGES_SEARCHED = 200
MAX_CHARS_READ = 2_000_000  # a search for a quote reads no more of a document's text
CONTEXT_WORDS = 6
MAX_PIXELS = 6_000_000
DEFAULT_SCALE = 1.5
HIGHLIGHT = (255, 214, 0)  # the marks' yellow
ALPHA = 0.42


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


# -- PDF: the quote on its page -----------------------------------------------------------------


Box = tuple[float, float, float, float]  # left, bottom, right, top, in PDF user space (points)

# PDFium is not thread-safe: the service's routes run in a pool of threads, so every use of it,
# from opening a document to closing it, holds this lock.
_PDFIUM = threading.Lock()


@dataclass(frozen=True, slots=True)
class PageHighlight:
    """Where verified quotes stand on one page: a rectangle per line, in PDF user space (points,
    origin at the bottom left of the page's media box, before its rotation), and the page's
    size as shown (its crop box, rotation applied)."""

    page: int  # 1-based
    width: float
    height: float
    boxes: tuple[Box, ...]


Quote = tuple[str, str]  # the verified quote, and the text of its source just before it


class OriginalError(InputError):
    """An original file that cannot be read or shown (a damaged or unsupported PDF)."""


def pdf_highlights(
    data: bytes, first_page: int | None, quotes: list[str] | list[Quote]
) -> list[PageHighlight]:
    """The pages that hold each of ``quotes`` and where on them, in page order. A quote is a
    string, or (quote, the source's text before it): the text before picks, of a quote that
    occurs twice, the occurrence that was cited. With ``first_page`` known (where the source
    starts) a quote is looked for there and on the two pages after; otherwise on the first
    ``MAX_PAGES_SEARCHED`` pages, within ``MAX_CHARS_READ`` characters. Not found: nothing."""
    with _open_pdf(data) as document:
        pages = _Pages(document)
        chars: dict[int, list[Box]] = {}
        for item in quotes:
            quote, before = (item, "") if isinstance(item, str) else item
            for page, box in _find(pages, first_page, quote, before):
                chars.setdefault(page, []).append(box)
        out = []
        for page in sorted(chars):
            width, height = pages.size(page)
            boxes = _lines(chars[page])
            out.append(PageHighlight(page, width, height, boxes))
        return out


@contextmanager
def _open_pdf(data: bytes) -> Iterator[Any]:
    """The PDF open, under the one lock every use of PDFium holds (it is not thread-safe), and
    closed after."""
    pdfium = _pdfium()
    with _PDFIUM:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise OriginalError(f"the original is not a readable PDF ({exc})") from None
        try:
            yield document
        finally:
            document.close()


class _Pages:
    """A document's pages, each read once (text by character index, and its text page for the
    character boxes); pages that fail to load count as empty."""

    def __init__(self, document: Any) -> None:
        self.document = document
        self.count = len(document)
        self.read: dict[int, tuple[str, Any]] = {}
        self.chars_read = 0

    def text(self, page: int) -> tuple[str, Any]:
        known = self.read.get(page)
        if known is None:
            try:
                textpage = self.document[page - 1].get_textpage()
                raw = _pdfium().raw
                n = textpage.count_chars()
                # one character per character index, so a position is a box (get_text_range
                # may differ from the character list: pypdfium2's documentation says so)
                text = "".join(
                    chr(raw.FPDFText_GetUnicode(textpage.raw, i) or 0xFFFD) for i in range(n)
                )
            except _pdfium().PdfiumError:
                textpage, text = None, ""
            known = self.read[page] = (text, textpage)
            self.chars_read += len(text)
        return known

    def size(self, page: int) -> tuple[float, float]:
        try:
            width, height = self.document[page - 1].get_size()
        except _pdfium().PdfiumError:
            return 0.0, 0.0
        return float(width), float(height)


def _find(pages: _Pages, first_page: int | None, quote: str, before: str) -> list[tuple[int, Box]]:
    """(page, character box) of each character of ``quote``, where it is found first (after
    ``before``, when that is found there too)."""
    needle = normalize(quote)
    if not needle:
        return []
    count = pages.count
    if first_page and 1 <= first_page <= count:
        tried = list(range(first_page, min(count, first_page + 2) + 1))
    else:
        tried = list(range(1, min(count, MAX_PAGES_SEARCHED) + 1))
    context = _context(before)
    for page in tried:
        if pages.chars_read > MAX_CHARS_READ:
            break
        window = [page] + ([page + 1] if page < count else [])  # across a page break too
        for joined in (True, False):  # a line-break hyphen left out, as ingest mostly does; or kept
            found = _PagesView(pages, window, joined).locate(needle, context)
            if found is not None:
                return found
    return []


def _context(before: str) -> str:
    """The last few words of the text before a quote, normalised (to tell two occurrences of
    one quote apart); empty when there is none."""
    words = normalize(before).split()
    return " ".join(words[-CONTEXT_WORDS:])


# How PDFium marks a hyphen it reads as a line-break hyphen: a non-character, no line break.
_SOFT_HYPHENS = "\x02\ufffe\u00ad"  # (by character index PDFium gives U+0002)


class _PagesView:
    """The text of consecutive pages as PDFium reads it, normalised with an offset map (each
    character of the view is one character of a page), a hyphen at a line break between two
    lower-case letters either left out with the break (``joined``: "paren-", "tal" reads
    "parental", as ingest cleans it) or kept without it ("out-of-pocket")."""

    def __init__(self, pages: _Pages, window: list[int], joined: bool) -> None:
        self.where: list[tuple[int, int]] = []  # (page, char index) of each view character
        self.textpages: dict[int, Any] = {}
        parts: list[str] = []
        for page in window:
            text, textpage = pages.text(page)
            self.textpages[page] = textpage
            n = len(text)
            i = 0
            while i < n:
                ch = text[i]
                if (ch == "-" or ch in _SOFT_HYPHENS) and i > 0 and text[i - 1].islower():
                    j = i + 1
                    while j < n and text[j] in "\r\n":
                        j += 1
                    breaks = j > i + 1 or ch in _SOFT_HYPHENS
                    if breaks and j < n and text[j].islower():
                        if not joined:  # the hyphen kept, the break left out
                            parts.append("-")
                            self.where.append((page, i))
                        i = j
                        continue
                parts.append(ch)
                self.where.append((page, i))
                i += 1
            parts.append("\n")
            self.where.append((page, -1))
        self.nt = NormalizedText("".join(parts))

    def locate(self, needle: str, context: str) -> list[tuple[int, Box]] | None:
        span = _locate_after(self.nt, needle, context)
        if span is None:
            return None
        out = []
        for k in range(span[0], span[1]):
            page, index = self.where[k]
            textpage = self.textpages.get(page)
            if index < 0 or textpage is None:
                continue
            left, bottom, right, top = textpage.get_charbox(index)
            if right - left > 0 and top - bottom > 0:  # not a generated space or break
                out.append((page, (float(left), float(bottom), float(right), float(top))))
        return out


def _lines(chars: list[Box]) -> tuple[Box, ...]:
    """Character boxes merged into one rectangle per run on one line (in reading order: a
    character that shares no height with the current rectangle, or stands left of it, starts
    a new one), padded a little so the mark covers ascenders and descenders."""
    rects: list[list[float]] = []
    for left, bottom, right, top in chars:
        last = rects[-1] if rects else None
        same_line = last is not None and bottom < last[3] and top > last[1]
        if last is not None and same_line and left >= last[0] - 1:
            last[0], last[1] = min(last[0], left), min(last[1], bottom)
            last[2], last[3] = max(last[2], right), max(last[3], top)
        else:
            rects.append([left, bottom, right, top])
    pad = 1.5
    return tuple((r[0] - pad, r[1] - pad, r[2] + pad, r[3] + pad) for r in rects)


def render_page(data: bytes, highlight: PageHighlight, scale: float = DEFAULT_SCALE) -> bytes:
    """The page as a PNG, ``scale`` pixels per point (less if it would exceed
    ``MAX_PIXELS``), with the highlight's rectangles blended over it (placed through the
    page's own transform: its crop box and rotation)."""
    pdfium = _pdfium()
    scale = min(scale, (MAX_PIXELS / max(1.0, highlight.width * highlight.height)) ** 0.5)
    with _open_pdf(data) as document:
        try:
            page = document[highlight.page - 1]
            bitmap = page.render(scale=scale, rev_byteorder=True)
            convert = bitmap.get_posconv(page)
            rects = []
            for left, bottom, right, top in highlight.boxes:
                corners = [convert.to_bitmap(x, y) for x in (left, right) for y in (bottom, top)]
                xs, ys = [c[0] for c in corners], [c[1] for c in corners]
                rects.append((min(xs), min(ys), max(xs), max(ys)))
            width, height, stride = bitmap.width, bitmap.height, bitmap.stride
            channels = stride // width if width else 3
            pixels = bytearray(bytes(bitmap.buffer))
        except pdfium.PdfiumError as exc:
            raise OriginalError(
                f"page {highlight.page} of the original cannot be shown ({exc})"
            ) from None
    for x0, y0, x1, y1 in rects:
        x0, x1 = max(0, int(x0)), min(width, int(x1) + 1)
        y0, y1 = max(0, int(y0)), min(height, int(y1) + 1)
        for y in range(y0, y1):
            row = y * stride
            for c, tint in enumerate(HIGHLIGHT):
                start, stop = row + x0 * channels + c, row + x1 * channels + c
                old = pixels[start:stop:channels]
                pixels[start:stop:channels] = bytes(
                    int(v * (1 - ALPHA) + tint * ALPHA) for v in old
                )
    return _png(pixels, width, height, stride, channels)


def _png(pixels: bytearray, width: int, height: int, stride: int, channels: int) -> bytes:
    """An RGB PNG of raw rows (``channels`` bytes a pixel, the first three R, G, B)."""
    raw = bytearray()
    for y in range(height):
        row = pixels[y * stride : y * stride + width * channels]
        if channels != 3:
            rgb = bytearray(width * 3)
            for c in range(3):
                rgb[c::3] = row[c::channels]
            row = rgb
        raw += b"\x00" + row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 6))
        + chunk(b"IEND", b"")
    )


def _pdfium() -> Any:
    try:
        import pypdfium2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise InputError("showing a PDF page needs pypdfium2 (pip install pypdfium2)") from exc
    return pypdfium2


# -- any other original: the text as sent, marked --------------------------------------------------


def text_page(source: TraceSource, spans: list[list[int]], title: str | None = None) -> str:
    """A standalone HTML page of the source's text as sent, every character escaped, each
    verified span in a ``<mark>``, the first one scrolled to; no script, no outside resource."""
    text = source.text
    pieces: list[str] = []
    at = 0
    for n, (start, end) in enumerate(sorted(spans)):
        start, end = max(start, at), min(end, len(text))
        if start >= end:
            continue
        pieces.append(html.escape(text[at:start]))
        anchor = ' id="quote"' if n == 0 else ""
        pieces.append(f"<mark{anchor}>{html.escape(text[start:end])}</mark>")
        at = end
    pieces.append(html.escape(text[at:]))
    return _page(html.escape(title or source.title or source.key or source.id), "".join(pieces))


def _page(name: str, body: str, prose: bool = False) -> str:
    """A standalone page (``name`` and ``body`` already escaped): no script, nothing loaded;
    text kept as it runs (``prose``: laid out by its own markup)."""
    wrap = "" if prose else "white-space:pre-wrap"
    heading = "" if prose else f"<h1>{name}</h1>"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>{name}</title><style>body{{font:16px/1.5 system-ui,sans-serif;max-width:46em;"
        f"margin:2em auto;padding:0 1em;{wrap}}}mark{{background:#ffd600}}</style>"
        f"</head><body>{heading}{body}</body></html>\n"
    )


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


# -- Markdown: the original's text rendered, its quotes marked ------------------------------

MAX_MARKDOWN_CHARS = 1_000_000  # a larger Markdown original is shown as its text
_MD_ITEM = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+")
_MD_QUOTE = re.compile(r" {0,3}>[ \t]?")
_MD_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_MD_TABLE_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?")
_MD_CELL_BAR = re.compile(r"(?<!\\)\|")
_MD_CLOSE = {"p": "</p>", "ul": "</li></ul>", "ol": "</li></ol>", "quote": "</blockquote>"}
_MD_CLOSE |= {"table": "</table>", "pre": "</code></pre>"}


def markdown_page(text: str, spans: list[list[int]], title: str | None = None) -> str:
    """A Markdown document's ``text`` rendered as a standalone HTML page with ``spans``
    (offsets in ``text``) marked, the first scrolled to. What it renders: ATX headings, fenced
    code, lists, block quotes, pipe tables, rules, paragraphs, and inline emphasis, code spans
    and struck text (the markup found the way the verifier reads it, ``markup_kinds``); a
    link shows its text and an image its alt text, never the address; raw HTML is shown as
    text. Every character is escaped; nothing loads or runs. Linear in the text's length."""
    return _page(html.escape(title or "Original"), _Markdown(text, spans).render(), prose=True)


class _Markdown:
    """One pass over the lines of a Markdown text, writing safe HTML as it goes."""

    def __init__(self, text: str, spans: list[list[int]]) -> None:
        self.text = text
        self.kinds = markup_kinds(text) or bytearray(len(text))
        self.marked = bytearray(len(text))
        for a, b in spans:
            a, b = max(0, a), min(len(text), b)
            if a < b:
                self.marked[a:b] = b"\x01" * (b - a)
        self.out: list[str] = []
        self.block: str | None = None
        self.stack: list[str] = []  # the inline tags open (emphasis may run over a line break)
        self.mark_open = False  # (so may a mark)
        self.first_mark = True

    def render(self) -> str:
        fence: str | None = None
        offset = 0
        for line in self.text.split("\n"):
            start, offset = offset, offset + len(line) + 1
            end = start + len(line)
            if fence is not None:
                if _closes_fence(line, fence):
                    fence = None
                    self._close()
                else:  # (the line break before each line but the first)
                    self._inline(start if self.out[-1] == "<pre><code>" else start - 1, end, True)
                continue
            if opening := _FENCE.match(line):
                fence = opening.group(1)
                self._open("pre", "<pre><code>")
                continue
            if not line.strip():
                self._close()
            elif heading := _ATX_HEADING.fullmatch(line):
                self._close()
                level = len(heading.group(1))
                a, b = heading.span(2) if heading.group(2) is not None else (end, end)
                if closing := _CLOSING_HASHES.search(line, a, b):
                    b = closing.start()
                self.out.append(f"<h{level}>")
                self._inline(a, b)
                self._end_inline()
                self.out.append(f"</h{level}>")
            elif _MD_RULE.fullmatch(line):
                self._close()
                self.out.append("<hr>")
            elif item := _MD_ITEM.match(line):
                kind = "ol" if item.group(2)[0].isdigit() else "ul"
                if self.block == kind:
                    self._end_inline()
                    self.out.append("</li><li>")
                else:
                    self._open(kind, f"<{kind}><li>")
                self._inline(start + item.end(), end)
            elif quote := _MD_QUOTE.match(line):
                if self.block == "quote":
                    self._inline(start - 1, start)  # the line break, as a space
                else:
                    self._open("quote", "<blockquote>")
                self._inline(start + quote.end(), end)
            elif line.lstrip().startswith("|"):
                if self.block != "table":
                    self._open("table", "<table>")
                if not _MD_TABLE_RULE.fullmatch(line):
                    self._row(start, line)
            elif self.block in ("p", "ul", "ol", "quote"):  # the paragraph or item goes on
                self._inline(start - 1, end)
            else:
                self._open("p", "<p>")
                self._inline(start, end)
        self._close()
        return "".join(self.out)

    def _open(self, block: str, tag: str) -> None:
        self._close()
        self.block = block
        self.out.append(tag)

    def _close(self) -> None:
        self._end_inline()
        if self.block is not None:
            self.out.append(_MD_CLOSE[self.block])
            self.block = None

    def _row(self, start: int, line: str) -> None:
        bars = [m.start() for m in _MD_CELL_BAR.finditer(line)]
        edges = [-1, *bars, len(line)]
        cells = [(a + 1, b) for a, b in pairwise(edges)]
        if cells and not line[: cells[0][1]].strip():
            cells = cells[1:]  # the row's leading bar
        if cells and not line[cells[-1][0] :].strip():
            cells = cells[:-1]  # and its trailing one
        self.out.append("<tr>")
        for a, b in cells:
            self.out.append("<td>")
            self._inline(start + a, start + b)
            self._end_inline()
            self.out.append("</td>")
        self.out.append("</tr>")

    def _inline(self, start: int, end: int, code: bool = False) -> None:
        """The characters ``[start, end)``: markup shown as it reads, marked spans in
        ``<mark>``; inline tags and a mark stay open to the block's end (``_end_inline``)."""
        text, kinds, out, stack = self.text, self.kinds, self.out, self.stack
        pending: list[str] = []

        def flush() -> None:
            if pending:
                out.append(html.escape("".join(pending)))
                pending.clear()

        def set_mark(on: bool) -> None:
            if on != self.mark_open:
                flush()
                self._set_mark(on)

        def toggle(tag: str) -> None:
            was = self.mark_open
            set_mark(False)
            flush()
            if tag in stack:  # close it, and reopen what stood inside it
                inner = stack[stack.index(tag) + 1 :]
                for t in reversed(stack[stack.index(tag) :]):
                    out.append(f"</{t}>")
                del stack[stack.index(tag) :]
                for t in inner:
                    out.append(f"<{t}>")
                    stack.append(t)
            else:
                out.append(f"<{tag}>")
                stack.append(tag)
            set_mark(was)

        k = max(0, start)
        while k < end:
            kind = 0 if code else kinds[k]
            if kind == 0:
                set_mark(bool(self.marked[k]))
                pending.append(text[k])
                k += 1
                continue
            run = k
            while run < end and kinds[run] == kind:
                run += 1
            if kind == STRUCK and run - k > 4:
                toggle("s")
                for n in range(k + 2, run - 2):
                    set_mark(bool(self.marked[n]))
                    pending.append(text[n])
                toggle("s")
            elif kind == TICK:
                toggle("code")
            elif kind == EMPHASIS:
                if run - k >= 2:
                    toggle("strong")
                if (run - k) % 2:
                    toggle("em")
            # (markup.HIDDEN: a link's address and brackets are not shown)
            k = run
        flush()

    def _set_mark(self, on: bool) -> None:
        if on:
            self.out.append('<mark id="quote">' if self.first_mark else "<mark>")
            self.first_mark = False
        else:
            self.out.append("</mark>")
        self.mark_open = on

    def _end_inline(self) -> None:
        if self.mark_open:
            self._set_mark(False)
        for t in reversed(self.stack):
            self.out.append(f"</{t}>")
        self.stack.clear()


# -- HTML: the original rendered safely, its quotes marked ------------------------------------

# What a rendered original keeps of its markup: structure and emphasis, no attribute at all (so
# no link, image, style or handler); what runs, loads or embeds is dropped with what it holds.
_KEPT_TAGS = frozenset(
    "p div section article main header footer aside nav h1 h2 h3 h4 h5 h6 ul ol li dl dt dd "
    "table thead tbody tfoot tr td th caption blockquote pre code em strong b i u s sub sup "
    "small mark span figure figcaption br hr abbr cite q time address details summary".split()
)
_VOID_TAGS = frozenset({"br", "hr"})
_DROPPED_WITH_CONTENT = frozenset(
    "script style noscript template iframe object title textarea".split()
)
# Where the text breaks, as ingest breaks it (the quote is found in text that reads the same).
_BREAKS = _PARAGRAPH_TAGS | _LINE_TAGS | _CELL_TAGS | {"br"}
MAX_HTML_BYTES = 1_000_000  # a larger HTML original is shown as its text (parsing is slow)


class _SafeHtml(HTMLParser):
    """An HTML document as tokens of safe markup (kept tags, no attributes) and text, the text
    breaking where ingest breaks it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[tuple[str, str]] = []  # ("tag", "<p>"), ("text", "..."), ("gap", "")
        self._dropping: list[str] = []  # the dropped elements open, innermost last

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping:
            if tag in _DROPPED_WITH_CONTENT:
                self._dropping.append(tag)
            return
        if tag in _DROPPED_WITH_CONTENT:
            self._dropping.append(tag)
            return
        if tag in _BREAKS:
            self.tokens.append(("gap", ""))
        if tag in _KEPT_TAGS:
            self.tokens.append(("tag", f"<{tag}>"))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._dropping and tag in _VOID_TAGS:
            self.tokens += [("gap", ""), ("tag", f"<{tag}>")]

    def handle_endtag(self, tag: str) -> None:
        if self._dropping:
            if self._dropping[-1] == tag:
                self._dropping.pop()
            return
        if tag in _KEPT_TAGS and tag not in _VOID_TAGS:
            self.tokens.append(("tag", f"</{tag}>"))
        if tag in _BREAKS:
            self.tokens.append(("gap", ""))

    def handle_data(self, data: str) -> None:
        if not self._dropping and data:
            self.tokens.append(("text", data))


def html_page(data: bytes, quotes: list[Quote], title: str | None = None) -> str | None:
    """An HTML original rendered safely (its structure and emphasis kept, every attribute,
    script, style, frame and embed left out, every text escaped) with ``quotes`` marked where
    they stand in its text (found the way every quote is, the text before each telling two
    occurrences apart), the first scrolled to; None when it is too large
    (``MAX_HTML_BYTES``) or cannot be parsed. A quote not found is not marked."""
    if len(data) > MAX_HTML_BYTES:
        return None
    parser = _SafeHtml()
    try:
        parser.feed(_decode(Path("original.html"), data))
        parser.close()
    except (AssertionError, ValueError, RecursionError, IngestError):
        return None
    tokens = parser.tokens
    # the text the tokens hold, breaks as line breaks, with each character's token and offset
    parts: list[str] = []
    where: list[tuple[int, int]] = []
    for t, (kind, value) in enumerate(tokens):
        if kind == "text":
            parts.append(value)
            where.extend((t, i) for i in range(len(value)))
        elif kind == "gap":
            parts.append("\n")
            where.append((-1, 0))
    nt = NormalizedText("".join(parts))
    marked: dict[int, set[int]] = {}  # token -> the offsets of its characters to mark
    for quote, before in quotes:
        span = _locate_after(nt, normalize(quote), _context(before))
        for k in range(*span) if span is not None else ():
            t, i = where[k]
            if t >= 0 and tokens[t][1].strip():  # (whitespace between table cells: never)
                marked.setdefault(t, set()).add(i)
    body: list[str] = []
    first = True
    for t, (kind, value) in enumerate(tokens):
        if kind == "tag":
            body.append(value)
        elif kind == "text":
            at = 0
            for start, end in _runs(sorted(marked.get(t, ()))):
                anchor = ' id="quote"' if first else ""
                first = False
                body.append(html.escape(value[at:start]))
                body.append(f"<mark{anchor}>{html.escape(value[start:end])}</mark>")
                at = end
            body.append(html.escape(value[at:]))
    return _page(html.escape(title or "Original"), "".join(body), prose=True)


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Sorted offsets as ``[start, end)`` runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for i in offsets:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _locate_after(nt: NormalizedText, needle: str, context: str) -> tuple[int, int] | None:
    """The original span of ``needle`` in ``nt``: right after ``context`` where the two stand
    together (found in the normalised text, on word bounds), else its first occurrence."""
    if not needle:
        return None
    if context:
        for i in find_words(nt.text, f"{context} {needle}"):
            start = i + len(context) + 1
            span = nt.span(start, start + len(needle))
            if span is not None:
                return span
    return nt.locate(needle)


def quotes_of(trace: TraceRecord, source: TraceSource) -> list[Quote]:
    """The verified quotes of a sent source in the served verdict, as they stand in its text,
    each with the text before it (which tells two occurrences of one quote apart)."""
    return [
        (source.text[a:b], source.text[max(0, a - 200) : a]) for a, b in spans_for(trace, source.id)
    ]
