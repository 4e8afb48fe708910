"""An HTML original rendered safely, its verified quotes marked where they stand: its structure
and emphasis kept, every attribute, script, style, frame and embed left out, every text escaped.
The text breaks where ingest breaks it (the block tags of ``ingest.html``), so a quote is found
in text that reads as the one it was verified against."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

from ..errors import IngestError
from ..ingest.decoding import decode_bytes
from ..ingest.html import CELL_TAGS, LINE_TAGS, PARAGRAPH_TAGS
from ..text.normalize import NormalizedText, normalize
from .page import standalone_page
from .quotes import Quote, context_of, locate_after

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
_BREAKS = PARAGRAPH_TAGS | LINE_TAGS | CELL_TAGS | {"br"}
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
        parser.feed(decode_bytes(Path("original.html"), data))
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
        span = locate_after(nt, normalize(quote), context_of(before))
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
    return standalone_page(html.escape(title or "Original"), "".join(body), prose=True)


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Sorted offsets as ``[start, end)`` runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for i in offsets:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs
