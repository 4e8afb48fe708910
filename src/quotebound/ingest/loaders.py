"""Loaders: one file on disk -> one ``LoadedDocument`` (canonical text, pages, sections).

Invariants:
- Every loader's canonical text is ``clean_text`` output, and ``clean_text`` is idempotent, so
  ``clean_text(doc.text) == doc.text``: ``\\n`` newlines only, no trailing whitespace on a
  line, no C0 control character but ``\\n`` and ``\\t``, no ligature characters, no line
  break right after a hyphen between two lowercase letters (the word or the line is joined),
  never two blank lines in a row, no leading or trailing blank line. What the verifier's
  normaliser folds (entities, case, dashes, quotes, whitespace runs, invisible format
  characters) is left alone here.
- Every offset (``Page``, ``Section``) is into that cleaned text, computed after cleaning.
- A PDF's canonical text is its cleaned pages joined by ``PAGE_SEPARATOR``; for each page,
  ``text[page.start:page.end]`` is exactly its cleaned text. An empty page adds no separator
  and has ``start == end``.
- A PDF's sections are its headings, found from the fonts of its text layer (see
  ``_PdfHeadings``): a line set larger than the document's body text, or wholly in a bold
  font, that reads as a heading; each starts at the canonical line it was found on. Nothing
  found (or a font that cannot be read) means no sections, never a failed load.
- ``updated`` comes from the file's own metadata (PDF ModDate/CreationDate) or is None; the
  file's mtime is the caller's business.
- A file that cannot be read, decoded or extracted raises ``IngestError`` with one line that
  names the file. pypdf's exceptions are translated here, and its warnings never escape.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as dt
import itertools
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

from pypdf import PasswordType, PdfReader

from ..corpus import LoadedDocument, Page, Section
from ..errors import IngestError
from ..text.sentences import reads_as_heading

__all__ = ["PAGE_SEPARATOR", "SUPPORTED_SUFFIXES", "clean_text", "iter_files", "load_file"]

PAGE_SEPARATOR = "\n\n"
SUPPORTED_SUFFIXES: frozenset[str] = frozenset({".txt", ".md", ".html", ".htm", ".pdf"})

# ---------------------------------------------------------------------------- clean_text

_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
# C0 controls are dropped, except tab and newline; vertical tab and form feed are line (page)
# breaks, so they become newlines rather than gluing the words on either side together.
_CLEAN_TABLE = str.maketrans(
    {
        **{chr(c): None for c in range(0x20) if c not in (0x09, 0x0A)},
        "\x0b": "\n",
        "\x0c": "\n",
        **_LIGATURES,
    }
)
_TRAILING_SPACE = re.compile(r"[^\S\n]+(?=\n|\Z)")
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n[^\S\n]*(?=[^\W\d_])")
_BLANK_LINES = re.compile(r"\n{3,}")
_WORD = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")


def clean_text(text: str) -> str:
    """Remove layout artefacts from extracted text; see the module docstring for the result.

    A hyphen at a line break between two lowercase letters is hyphenation: ``"exam-\\nple"``
    becomes ``"example"``. The text itself can overrule that: when it writes the compound with
    a hyphen on one line more often than as one word, the hyphen is real and only the line
    break goes (``"in-\\nnetwork"`` -> ``"in-network"`` beside another ``"in-network"``; word
    processors break lines at hyphens and never split words). Other hyphens stay as they are:
    ``"well-known"``, ``"Anti-\\nFraud"``, ``"job-\\n17"``.
    """
    prepared = _prepare(text)
    return _finish(prepared, _HyphenVotes(prepared))


def _prepare(text: str) -> str:
    """Newlines, control characters, ligatures and trailing whitespace."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_CLEAN_TABLE)
    return _TRAILING_SPACE.sub("", text)


def _finish(prepared: str, votes: _HyphenVotes) -> str:
    """Line-break hyphens (as ``votes`` decide), blank lines, leading and trailing newlines."""
    text = _LINE_HYPHEN.sub(votes.replace, prepared)
    return _BLANK_LINES.sub("\n\n", text).strip("\n")


class _HyphenVotes:
    """Decides line-break hyphens from a text's own spelling, counted once and only if needed."""

    def __init__(self, vocabulary: str) -> None:
        self._vocabulary = vocabulary
        self._counts: tuple[Counter[tuple[str, str]], Counter[str]] | None = None

    def replace(self, match: re.Match[str]) -> str:
        text, start, end = match.string, match.start(), match.end()
        if not (text[start - 1].islower() and text[end].islower()):
            return match.group()
        left = start - 1
        while left > 0 and text[left - 1].isalpha():
            left -= 1
        right = end
        while right < len(text) and text[right].isalpha():
            right += 1
        return "-" if self._hyphen_is_real(text[left:start], text[end:right]) else ""

    def _hyphen_is_real(self, left: str, right: str) -> bool:
        if self._counts is None:
            pairs: Counter[tuple[str, str]] = Counter()
            for compound in _COMPOUND.findall(self._vocabulary):
                parts = compound.lower().split("-")
                pairs.update(itertools.pairwise(parts))
            words = Counter(w.lower() for w in _WORD.findall(self._vocabulary))
            self._counts = (pairs, words)
        pairs, words = self._counts
        left, right = left.lower(), right.lower()
        return pairs[left, right] > words[left + right]


# ---------------------------------------------------------------------------- files


def iter_files(paths: Sequence[Path]) -> Iterator[tuple[Path, str]]:
    """Yield ``(path, name)`` for each supported file under ``paths``, folders recursively.

    A folder is walked in sorted order, skipping hidden files and folders (names starting with
    ``.``); each file's name is its path relative to that folder, with ``/`` separators. A file
    argument is named by its basename. Files with unsupported suffixes are skipped.
    """
    for path in paths:
        if path.is_dir():
            yield from _walk(path)
        elif path.is_file():
            if path.suffix.lower() in SUPPORTED_SUFFIXES:
                yield path, path.name
        else:
            raise IngestError(f"{path}: no such file or folder")


def _walk(root: Path) -> Iterator[tuple[Path, str]]:
    found: list[tuple[tuple[str, ...], Path]] = []
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for filename in filenames:
            if filename.startswith(".") or Path(filename).suffix.lower() not in SUPPORTED_SUFFIXES:
                continue
            path = Path(folder, filename)
            found.append((path.relative_to(root).parts, path))
    for parts, path in sorted(found):
        yield path, "/".join(parts)


def load_file(path: Path, name: str) -> LoadedDocument:
    """Load one supported file as ``name``; ``IngestError`` if it cannot be read or extracted."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise IngestError(f"{path}: unsupported file type {suffix or '(none)'}; use {supported}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    try:
        return dataclasses.replace(_load(path, name, suffix, data), original=data)
    except IngestError:
        raise
    except (AssertionError, ValueError, RecursionError, UnicodeError) as exc:
        # a parser gave up on malformed content (html.parser asserts on "<![foo]>")
        raise IngestError(f"{path}: malformed {suffix[1:]} ({type(exc).__name__}: {exc})") from exc


def _load(path: Path, name: str, suffix: str, data: bytes) -> LoadedDocument:
    if suffix == ".pdf":
        return _load_pdf(path, name, data)
    text = _decode(path, data)
    if suffix == ".md":
        return _load_markdown(name, text)
    if suffix in (".html", ".htm"):
        return _load_html(name, text)
    clean = clean_text(text)
    return LoadedDocument(name=name, text=clean, media_type="text/plain", title=_txt_title(clean))


def _txt_title(text: str) -> str | None:
    """A plain-text file's first line, when it reads as a title (short, not a sentence)."""
    first = text.split("\n", 1)[0].strip()
    if first and len(first) <= 80 and first[-1] not in ".!?:;," and "\n" in text:
        return first
    return None


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 (BOM or not), UTF-16 with a BOM, else Windows-1252 if every byte is defined."""
    try:
        if data.startswith(codecs.BOM_UTF8):
            return data[len(codecs.BOM_UTF8) :].decode("utf-8")
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
    except UnicodeDecodeError as exc:
        reason = f"{path}: its byte order mark says Unicode but it is not ({exc.reason})"
        raise IngestError(reason) from exc
    if b"\x00" in data:
        raise IngestError(f"{path}: looks like a binary file (it contains NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:  # Python's cp1252 codec rejects the five undefined bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D)
        return data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: is neither UTF-8 nor Windows-1252 text; convert it to UTF-8"
        ) from exc


# ---------------------------------------------------------------------------- markdown

_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _load_markdown(name: str, raw: str) -> LoadedDocument:
    """The markdown source is the canonical text; ATX headings outside code fences are sections."""
    text = clean_text(raw)
    sections = tuple(_markdown_sections(text))
    title = next((s.title for s in sections if s.level == 1), None)
    return LoadedDocument(
        name=name, text=text, media_type="text/markdown", title=title, sections=sections
    )


def _markdown_sections(text: str) -> Iterator[Section]:
    fence: str | None = None
    offset = 0
    for line in text.split("\n"):
        line_start, offset = offset, offset + len(line) + 1
        if fence is not None:
            if _closes_fence(line, fence):
                fence = None
            continue
        if opening := _FENCE.match(line):
            fence = opening.group(1)
            continue
        heading = _ATX_HEADING.fullmatch(line)
        if heading is None or heading.group(2) is None:
            continue
        title = _CLOSING_HASHES.sub("", heading.group(2)).strip()
        if title:
            yield Section(title=title, start=line_start, level=len(heading.group(1)))


def _closes_fence(line: str, fence: str) -> bool:
    body = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(body) >= len(fence) and set(body) == {fence[0]}


# ---------------------------------------------------------------------------- html

_MARK = "\ufdd0"  # a Unicode noncharacter: marks where each heading starts, through cleaning
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
_SKIPPED = frozenset({"script", "style", "noscript", "template"})
_HEAD_ONLY = frozenset({"title", "meta", "link", "base", "style", "script", "noscript", "template"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_PARAGRAPH_TAGS = frozenset(
    {"p", "pre", "blockquote", "table", "ul", "ol", "dl", "section", "article", "aside"}
    | {"header", "footer", "main", "nav", "figure", "form", "fieldset", "details", "hr"}
    | set(_HEADINGS)
)
_LINE_TAGS = frozenset(
    {"div", "li", "tr", "dt", "dd", "caption", "figcaption", "summary", "address", "legend"}
)
_CELL_TAGS = frozenset({"td", "th"})


class _HtmlText(HTMLParser):
    """Visible text of an HTML document, block elements as line breaks, headings marked."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.headings: list[tuple[int, str]] = []  # (level, title), one per _MARK in out
        self.title: str | None = None
        self._breaks = 0  # newlines owed before the next text
        self._space = False  # a space owed before the next text (same line)
        self._line_start = True
        self._skip = 0
        self._in_head = False
        self._pre = 0
        self._title_parts: list[str] | None = None
        self._heading: tuple[int, list[str]] | None = None
        self._mark_owed = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._in_head and (tag == "body" or tag not in _HEAD_ONLY):
            self._in_head = False
        if tag == "head":
            self._in_head = True
        elif tag in _SKIPPED:
            self._skip += 1
        elif tag == "title":
            self._title_parts = []
        elif tag == "br":
            self._breaks += 1
        elif tag in _CELL_TAGS:
            self._space = True
        elif tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS:
            if tag in _PARAGRAPH_TAGS:
                self.end_heading()  # an unclosed heading ends where the next block starts
            self._break(2 if tag in _PARAGRAPH_TAGS else 1)
            self._pre += tag == "pre"
            if tag in _HEADINGS:
                self._heading = (_HEADINGS[tag], [])
                self._mark_owed = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._in_head = False
        elif tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "title" and self._title_parts is not None:
            self.title = self.title or _collapse("".join(self._title_parts)) or None
            self._title_parts = None
        elif tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS:
            self._break(2 if tag in _PARAGRAPH_TAGS else 1)
            self._pre = max(0, self._pre - (tag == "pre"))
            if tag in _HEADINGS:
                self.end_heading()

    def end_heading(self) -> None:
        """Close the open heading; it is recorded iff its mark was written (one per mark)."""
        if self._heading is not None and not self._mark_owed:
            level, parts = self._heading
            self.headings.append((level, _collapse("".join(parts))))
        self._heading, self._mark_owed = None, False

    def handle_data(self, data: str) -> None:
        data = data.replace(_MARK, "")
        if self._title_parts is not None:  # a title is metadata, never visible text
            self._title_parts.append(data)
            return
        if self._skip or self._in_head or not data:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        if self._pre:
            self._write(data)
            return
        collapsed = _HTML_SPACE.sub(" ", data)
        if collapsed.startswith(" "):
            self._space = True
        if stripped := collapsed.strip(" "):
            self._write(stripped)
            self._space = collapsed.endswith(" ")

    def _break(self, newlines: int) -> None:
        self._breaks = max(self._breaks, newlines)

    def _write(self, text: str) -> None:
        if self._breaks and self.out:
            self.out.append("\n" * self._breaks)
            self._line_start = True
        elif self._space and not self._line_start:
            self.out.append(" ")
        self._breaks, self._space = 0, False
        if self._mark_owed:
            self.out.append(_MARK)
            self._mark_owed = False
        self.out.append(text)
        self._line_start = text.endswith("\n")


def _collapse(text: str) -> str:
    return _HTML_SPACE.sub(" ", text).strip()


def _load_html(name: str, raw: str) -> LoadedDocument:
    parser = _HtmlText()
    parser.feed(raw)
    parser.close()
    parser.end_heading()
    pieces = clean_text("".join(parser.out)).split(_MARK)
    text = "".join(pieces)
    sections: list[Section] = []
    offset = len(pieces[0])
    for (level, title), piece in zip(parser.headings, pieces[1:], strict=True):
        if title:
            sections.append(Section(title=title, start=offset, level=level))
        offset += len(piece)
    h1 = next((s.title for s in sections if s.level == 1), None)
    return LoadedDocument(
        name=name,
        text=text,
        media_type="text/html",
        title=parser.title or h1,
        sections=tuple(sections),
    )


# ---------------------------------------------------------------------------- pdf

_PDF_DATE = re.compile(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?")


def _load_pdf(path: Path, name: str, data: bytes) -> LoadedDocument:
    """Text layer page by page; pages cleaned one by one, then joined with PAGE_SEPARATOR."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pypdf warns on odd but readable files; not ours to raise
        reader = _open_pdf(path, data)
        headings = _PdfHeadings()
        page_texts = _page_texts(path, reader, headings)
        title, updated = _pdf_metadata(reader)
    prepared = [_prepare(raw) for raw in page_texts]
    votes = _HyphenVotes("\n".join(prepared))  # the whole document's spelling decides
    pages: list[Page] = []
    parts: list[str] = []
    offset = 0
    sections: list[Section] = []
    found = headings.found()
    for number, page_prepared in enumerate(prepared, start=1):
        page_text, placed = _set_apart(_finish(page_prepared, votes), found[number - 1])
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
        title = _collapse(info.title or "") or None
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
