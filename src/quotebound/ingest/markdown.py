"""Markdown (``.md``): the cleaned source is the canonical text; its ATX headings outside
code fences are its sections. The block patterns (``ATX_HEADING``, ``CLOSING_HASHES``,
``FENCE``, ``closes_fence``) are public: a Markdown original is rendered reading them (see
``originals.markdown``), so both read a document's lines the same way."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..corpus import LoadedDocument, Section
from .cleaning import clean_text

__all__ = ["ATX_HEADING", "CLOSING_HASHES", "FENCE", "closes_fence", "load_markdown"]

ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*")
CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def load_markdown(name: str, raw: str) -> LoadedDocument:
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
            if closes_fence(line, fence):
                fence = None
            continue
        if opening := FENCE.match(line):
            fence = opening.group(1)
            continue
        heading = ATX_HEADING.fullmatch(line)
        if heading is None or heading.group(2) is None:
            continue
        title = CLOSING_HASHES.sub("", heading.group(2)).strip()
        if title:
            yield Section(title=title, start=line_start, level=len(heading.group(1)))


def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes the code fence that ``fence`` (its backticks or tildes) opened."""
    body = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(body) >= len(fence) and set(body) == {fence[0]}
