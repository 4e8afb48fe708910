"""A Markdown original rendered from its text, its verified quotes marked where they stand:
one pass over its lines, the markup read the way ingest and the verifier read it (the block
patterns of ``ingest.markdown``, the inline markup of ``text.markup``), so a span of the text is
marked exactly where it is. Every character is escaped; a link shows its text and an image its
alt text, never the address; raw HTML is shown as text. Linear in the text's length."""

from __future__ import annotations

import html
import re
from itertools import pairwise

from ..ingest.markdown import ATX_HEADING, CLOSING_HASHES, FENCE, closes_fence
from ..text.markup import EMPHASIS, STRUCK, TICK, markup_kinds
from .page import standalone_page

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
    return standalone_page(
        html.escape(title or "Original"), _Markdown(text, spans).render(), prose=True
    )


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
                if closes_fence(line, fence):
                    fence = None
                    self._close()
                else:  # (the line break before each line but the first)
                    self._inline(start if self.out[-1] == "<pre><code>" else start - 1, end, True)
                continue
            if opening := FENCE.match(line):
                fence = opening.group(1)
                self._open("pre", "<pre><code>")
                continue
            if not line.strip():
                self._close()
            elif heading := ATX_HEADING.fullmatch(line):
                self._close()
                level = len(heading.group(1))
                a, b = heading.span(2) if heading.group(2) is not None else (end, end)
                if closing := CLOSING_HASHES.search(line, a, b):
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
