"""HTML (``.html``, ``.htm``): the visible text, block elements as line breaks, is the
canonical text; its ``h1``-``h6`` headings are its sections and its ``<title>`` (else its first
``h1``) its title. The tag sets that break the text (``PARAGRAPH_TAGS``, ``LINE_TAGS``,
``CELL_TAGS``) are public: an HTML original is rendered breaking where ingest breaks (see
``originals.safehtml``), so a quote is found in text that reads the same."""

from __future__ import annotations

from html.parser import HTMLParser

from ..corpus import LoadedDocument, Section
from .cleaning import SPACE_RUN, clean_text, collapse_spaces

__all__ = ["CELL_TAGS", "LINE_TAGS", "PARAGRAPH_TAGS", "load_html"]

_MARK = "\ufdd0"  # a Unicode noncharacter: marks where each heading starts, through cleaning
_SKIPPED = frozenset({"script", "style", "noscript", "template"})
_HEAD_ONLY = frozenset({"title", "meta", "link", "base", "style", "script", "noscript", "template"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
PARAGRAPH_TAGS = frozenset(
    {"p", "pre", "blockquote", "table", "ul", "ol", "dl", "section", "article", "aside"}
    | {"header", "footer", "main", "nav", "figure", "form", "fieldset", "details", "hr"}
    | set(_HEADINGS)
)
LINE_TAGS = frozenset(
    {"div", "li", "tr", "dt", "dd", "caption", "figcaption", "summary", "address", "legend"}
)
CELL_TAGS = frozenset({"td", "th"})


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
        elif tag in CELL_TAGS:
            self._space = True
        elif tag in PARAGRAPH_TAGS or tag in LINE_TAGS:
            if tag in PARAGRAPH_TAGS:
                self.end_heading()  # an unclosed heading ends where the next block starts
            self._break(2 if tag in PARAGRAPH_TAGS else 1)
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
            self.title = self.title or collapse_spaces("".join(self._title_parts)) or None
            self._title_parts = None
        elif tag in PARAGRAPH_TAGS or tag in LINE_TAGS:
            self._break(2 if tag in PARAGRAPH_TAGS else 1)
            self._pre = max(0, self._pre - (tag == "pre"))
            if tag in _HEADINGS:
                self.end_heading()

    def end_heading(self) -> None:
        """Close the open heading; it is recorded iff its mark was written (one per mark)."""
        if self._heading is not None and not self._mark_owed:
            level, parts = self._heading
            self.headings.append((level, collapse_spaces("".join(parts))))
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
        collapsed = SPACE_RUN.sub(" ", data)
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


def load_html(name: str, raw: str) -> LoadedDocument:
    """An HTML file's decoded text ``raw`` as ``name``: its visible text, headings as sections."""
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
