"""PDF (``.pdf``): the text layer, page by page, read with pypdf.

Invariants:
- A PDF's canonical text is its cleaned pages joined by ``PAGE_SEPARATOR``; for each page,
  ``text[page.start:page.end]`` is exactly its cleaned text. An empty page adds no separator
  and has ``start == end``.
- A PDF's sections are its headings, found from the fonts of its text layer (see
  ``_PdfHeadings``): a line set larger than the document's body text, or wholly in a bold
  font, that reads as a heading; each starts at the canonical line it was found on. Nothing
  found (or a font that cannot be read) means no sections, never a failed load.
- ``updated`` comes from the file's own metadata (PDF ModDate/CreationDate) or is None.
- pypdf's exceptions are translated here into ``IngestError`` naming the file, and its
  warnings never escape.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path

from pypdf import PasswordType, PdfReader

from ..corpus import LoadedDocument, Page, Section
from ..errors import IngestError
from ..text.sentences import reads_as_heading
from .cleaning import HyphenVotes, collapse_spaces, finish_text, prepare_text

__all__ = ["PAGE_SEPARATOR", "load_pdf"]

PAGE_SEPARATOR = "\n\n"

_PDF_DATE = re.compile(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?")


def load_pdf(path: Path, name: str, data: bytes) -> LoadedDocument:
    """Text layer page by page; pages cleaned one by one, then joined with PAGE_SEPARATOR."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pypdf warns on odd but readable files; not ours to raise
        reader = _open_pdf(path, data)
        headings = _PdfHeadings()
        page_texts = _page_texts(path, reader, headings)
        title, updated = _pdf_metadata(reader)
    prepared = [prepare_text(raw) for raw in page_texts]
    votes = HyphenVotes("\n".join(prepared))  # the whole document's spelling decides
    pages: list[Page] = []
    parts: list[str] = []
    offset = 0
    sections: list[Section] = []
    found = headings.found()
    for number, page_prepared in enumerate(prepared, start=1):
        page_text, placed = _set_apart(finish_text(page_prepared, votes), found[number - 1])
        if page_text and offset:  # a separator only between pages that have text
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        parts.append(page_text)
        pages.append(Page(number=number, start=offset, end=offset + len(page_text)))
        sections.extend(Section(title, offset + at, level) for title, at, level in placed)
        offset += len(page_text)
    text = "".join(parts)
    if not text:
        raise IngestError(f"{path}: PDF has no text layer (scanned images?); run OCR on it first")
    return LoadedDocument(
        name=name,
        text=text,
        media_type="application/pdf",
        title=title,
        pages=tuple(pages),
        sections=tuple(sections),
        updated=updated,
    )


# pypdf raises many kinds of exception on malformed input (its own, ValueError, KeyError, zlib
# and struct errors...), so this boundary catches them all and names the file instead.


def _open_pdf(path: Path, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(BytesIO(data))
        encrypted = reader.is_encrypted
    except Exception as exc:
        raise IngestError(f"{path}: not a readable PDF ({_reason(exc)})") from exc
    if encrypted:
        try:
            unlocked = reader.decrypt("") != PasswordType.NOT_DECRYPTED
        except Exception as exc:
            raise IngestError(
                f"{path}: PDF is encrypted and cannot be opened ({_reason(exc)})"
            ) from exc
        if not unlocked:
            raise IngestError(f"{path}: PDF is encrypted with a password; decrypt it first")
    return reader


def _page_texts(path: Path, reader: PdfReader, headings: _PdfHeadings) -> list[str]:
    texts: list[str] = []
    try:
        for page in reader.pages:
            headings.start_page()
            texts.append(page.extract_text(visitor_text=headings.visit))
    except Exception as exc:
        where = f"page {len(texts) + 1}"
        raise IngestError(f"{path}: cannot extract the text of {where} ({_reason(exc)})") from exc
    return texts


# A heading: at most this many characters and words, over at most this many lines (a longer
# line is a sentence set large, not a heading); a page keeps at most _PAGE_HEADINGS of them.
_HEADING_CHARS = 150
_HEADING_WORDS = 16
_HEADING_LINES = 3
_PAGE_HEADINGS = 64
_PAGE_LINES = 5000  # a page with more lines is searched for no heading (the work stays bounded)
_BOLD_FONT = re.compile(r"bold|black|heavy|demi|semibold", re.IGNORECASE)
_NOT_A_HEADING_END = re.compile(r"[.,;]$")  # a bold or large sentence is emphasis
_KEY_DROP = re.compile(r"[\W_]+")


def _heading_key(text: str) -> str:
    """What a heading and a canonical line are compared on: letters and digits, folded."""
    return _KEY_DROP.sub("", text).casefold()


@dataclasses.dataclass(slots=True)
class _Line:
    """One visual line of a page's text layer: its baseline, text and fonts."""

    y: float
    parts: list[str]
    size: float  # the largest glyph size on the line, in points
    smallest: float
    bold: bool  # every run on it is in a bold font


class _PdfHeadings:
    """Collects a PDF's lines with their fonts while pypdf extracts the text (one pass), then
    finds the headings: lines set at least a point larger than the body text (the size most of
    the document's characters have) or wholly in a bold font, short, with a letter, not ending
    as a sentence does. Consecutive heading lines in one style are one heading (at most
    ``_HEADING_LINES``; a longer run is an emphasised paragraph); a heading on a third of the
    pages or more (three at least) is a running header, not a section. Levels follow size, over
    the headings kept: the largest is level 1, bold body-size headings the last level. Each
    heading is placed at the canonical line (or run of lines) that reads the same, letters and
    digits compared; one that no line matches is left out. A font that cannot be read stops
    the search for the whole document (no sections) and never the text extraction."""

    def __init__(self) -> None:
        self._pages: list[list[_Line]] = []
        self._sizes: Counter[float] = Counter()
        self._broken = False

    def start_page(self) -> None:
        self._pages.append([])

    def visit(
        self, text: str, cm: Sequence[float], tm: Sequence[float], font: object, size: float
    ) -> None:
        if self._broken or not text.strip():
            return
        try:
            # the glyphs' height: the font size through the text and the current matrices
            scale = math.hypot(tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3])
            points = round(float(size) * (scale or 1.0) * 2) / 2
            y = round(tm[4] * cm[1] + tm[5] * cm[3] + cm[5], 1)
            name = str(font.get("/BaseFont", "")) if isinstance(font, dict) else ""
        except Exception:  # a matrix or font pypdf could not make sense of
            self._broken = True
            return
        if not math.isfinite(points) or not math.isfinite(y):
            self._broken = True
            return
        bold = bool(_BOLD_FONT.search(name))
        self._sizes[points] += len(text.strip())
        lines = self._pages[-1]
        if lines and lines[-1].y == y:
            line = lines[-1]
            line.parts.append(text)
            line.size, line.smallest = max(line.size, points), min(line.smallest, points)
            line.bold = line.bold and bold
        else:
            lines.append(_Line(y, [text], points, points, bold))

    def found(self) -> list[list[tuple[str, int]]]:
        """Each page's headings in order, as (text, level); empty lists when none were found."""
        pages = self._pages
        if self._broken or not self._sizes:
            return [[] for _ in pages]
        body = self._sizes.most_common(1)[0][0]
        found = [self._page_headings(lines, body) for lines in pages]
        on_pages = Counter(key for page in found for key in {_heading_key(t) for t, _ in page})
        # a running header: on a third of the pages or more (even or odd pages alone), 3 at least
        running = {k for k, n in on_pages.items() if n >= 3 and n >= len(pages) / 3}
        kept = [[(t, s) for t, s in page if _heading_key(t) not in running] for page in found]
        styles = sorted({style for page in kept for _, style in page}, reverse=True)
        level = {style: i for i, style in enumerate(styles, start=1)}
        return [[(t, level[s]) for t, s in page] for page in kept]

    @staticmethod
    def _page_headings(lines: list[_Line], body: float) -> list[tuple[str, float]]:
        """A page's headings in order: (text, style), the style the size (bold at body size is
        just under it, so it sorts below every larger size). Consecutive lines in one heading
        style are one run: a heading when it has at most ``_HEADING_LINES`` lines and reads as
        one together; a longer run, or one that a line ending as a sentence ends, is an
        emphasised paragraph and none of its lines is a heading."""
        headings: list[tuple[str, float]] = []
        run: list[str] = []
        run_style: float | None = None
        for line in [*lines, None]:
            style: float | None = None
            words = ""
            if line is not None:
                words = " ".join("".join(line.parts).split())
                if line.smallest >= body + 1:
                    style = line.size
                elif line.bold:
                    style = body - 0.25
            if run and style != run_style:
                joined = " ".join(run)
                if run_style is not None and len(run) <= _HEADING_LINES and _heading_shaped(joined):
                    headings.append((joined, run_style))
                    if len(headings) == _PAGE_HEADINGS:
                        break
                run = []
            if style is not None and words:
                run.append(words)
                run_style = style
                if _NOT_A_HEADING_END.search(words):  # an emphasised sentence ends here
                    run = []
        return headings


def _heading_shaped(words: str) -> bool:
    """A line (or run) the font marks out, short enough and unended enough to be a heading."""
    return (
        0 < len(words) <= _HEADING_CHARS
        and len(words.split()) <= _HEADING_WORDS
        and any(c.isalpha() for c in words)
        and not _NOT_A_HEADING_END.search(words)
    )


_ENDS_SENTENCE = re.compile(r"[.!?][\"')\]\u2019\u201d]*$")  # not ":", a list follows
_STARTS_SENTENCE = re.compile(r"[^\W_]|[\"'(\[\u2018\u201c\u2022\u25aa\u2013-]")


def _title_line(lines: list[str], index: int, after_heading: bool) -> bool:
    """Whether ``lines[index]`` is a heading set in the body's font: a whole line that reads
    as a title (``reads_as_heading``), between a line that ends a sentence (or a heading, or
    nothing) and one that starts one. A line wrapped inside a sentence never qualifies: the
    line before it ends no sentence."""
    line = lines[index]
    if not reads_as_heading(line, alone=True):
        return False
    before = lines[index - 1] if index else ""
    after = lines[index + 1] if index + 1 < len(lines) else ""
    opens = bool(after) and bool(_STARTS_SENTENCE.match(after)) and not after[0].islower()
    return opens and (not before or after_heading or bool(_ENDS_SENTENCE.search(before)))


def _set_apart(
    text: str, headings: list[tuple[str, int]]
) -> tuple[str, list[tuple[str, int, int]]]:
    """A page's text with each heading set apart as a paragraph of its own (a blank line before
    and after it, so no sentence runs into or out of a heading), and the font's headings placed:
    (title, offset into the returned text, level). A heading is placed at the first line (or
    run of lines) after the last one placed whose letters and digits are its own, and its title
    is that canonical text (the text layer's runs can lack the spaces between them). A line
    that reads as a heading without a font to say so (``_title_line``) is set apart too, but
    starts no section: the font is the evidence a section needs."""
    lines = text.split("\n")
    if len(lines) > _PAGE_LINES:  # a page of that many lines is not prose: left as it is
        return text, []
    keys = [_heading_key(line) for line in lines]
    spans: list[tuple[str, int, int, int]] = []  # title, first line, last line, level
    cursor = 0
    for title, level in headings:
        want = _heading_key(title)
        for first in range(cursor, len(keys)):
            if not keys[first] or not want.startswith(keys[first]):
                continue
            joined, last = keys[first], first
            while len(joined) < len(want) and last + 1 < min(first + _HEADING_LINES, len(keys)):
                last += 1
                joined += keys[last]
            if joined == want:
                spans.append((title, first, last, level))
                cursor = last + 1
                break
    blocks = [(first, last) for _, first, last, _ in spans]
    firsts = {first for first, _ in blocks}
    inside = {i for first, last in blocks for i in range(first + 1, last + 1)}
    heading = False  # the line before is a heading (a font's or a title line)
    for index in range(len(lines)):
        if index in inside:
            continue
        if index in firsts:
            heading = True
        elif _title_line(lines, index, heading):
            blocks.append((index, index))
            heading = True
        else:
            heading = False
    apart = {first for first, _ in blocks if first > 0 and lines[first - 1]}
    apart |= {last + 1 for _, last in blocks if last + 1 < len(lines) and lines[last + 1]}
    out: list[str] = []
    starts: list[int] = []
    offset = 0
    for index, line in enumerate(lines):
        if index in apart:  # a blank line before this one
            out.append("")
            offset += 1
        starts.append(offset)
        out.append(line)
        offset += len(line) + 1
    placed = [(" ".join(lines[a : b + 1]), starts[a], level) for _, a, b, level in spans]
    return "\n".join(out), placed


def _pdf_metadata(reader: PdfReader) -> tuple[str | None, str | None]:
    """Title and ISO date from the document information; broken metadata is ignored."""
    try:
        info = reader.metadata
        if info is None:
            return None, None
        title = collapse_spaces(info.title or "") or None
        raw_dates = (info.modification_date_raw, info.creation_date_raw)
    except Exception:
        return None, None
    dates = (_pdf_date(raw) for raw in raw_dates if raw)
    return title, next((d for d in dates if d), None)


def _pdf_date(value: str) -> str | None:
    """``D:YYYYMMDDHHmmSS...`` as ``YYYY-MM-DD`` (missing month/day default to 01, as in PDF)."""
    match = _PDF_DATE.match(str(value).strip())
    if match is None:
        return None
    year, month, day = (int(part or 1) for part in match.groups())
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def _reason(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}"[:200] if message else type(exc).__name__
