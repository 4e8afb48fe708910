"""A PDF original: where a verified quote stands on its pages, and a page rendered with it
marked.

The quote's characters are found in the page's own text (PDFium's, with the offset map of the
normaliser, line-break hyphens taken out the way ingest cleans them), their boxes merged into one
rectangle per line (``pdf_highlights``), and the page rendered to PNG with the rectangles drawn
over the words (``render_page``). A quote that runs over a page break is found across the two
pages and highlighted on both.

Work is bounded: a quote is looked for on its source's page and the two after it (or, with no
page known, on at most ``MAX_PAGES_SEARCHED`` pages and ``MAX_CHARS_READ`` characters), each
page read once; a page is rendered at most ``MAX_PIXELS`` pixels. PDFium is not thread-safe:
every use of it holds one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..text.normalize import NormalizedText, normalize
from .png import encode_png
from .quotes import Quote, context_of, locate_after

MAX_PAGES_SEARCHED = 200
MAX_CHARS_READ = 2_000_000  # a search for a quote reads no more of a document's text
MAX_PIXELS = 6_000_000
DEFAULT_SCALE = 1.5
HIGHLIGHT = (255, 214, 0)  # the marks' yellow
ALPHA = 0.42

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
    context = context_of(before)
    for page in tried:
        if pages.chars_read > MAX_CHARS_READ:
            break
        window = [page] + ([page + 1] if page < count else [])  # across a page break too
        for joined in (True, False):  # a line-break hyphen left out, as ingest mostly does; or kept
            found = _PagesView(pages, window, joined).locate(needle, context)
            if found is not None:
                return found
    return []


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
        span = locate_after(self.nt, needle, context)
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
    return encode_png(pixels, width, height, stride, channels)


def _pdfium() -> Any:
    try:
        import pypdfium2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise InputError("showing a PDF page needs pypdfium2 (pip install pypdfium2)") from exc
    return pypdfium2
