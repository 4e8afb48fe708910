"""Documents for tests: one whose chunks are its paragraphs, exact slices of its text."""

from __future__ import annotations

from quotebound.corpus import Chunk, LoadedDocument


def make_doc(
    name: str, *paragraphs: str, title: str | None = None, updated: str | None = None
) -> tuple[LoadedDocument, list[Chunk]]:
    """A plain-text document of ``paragraphs`` joined by blank lines, one chunk each."""
    text = "\n\n".join(paragraphs)
    chunks, at = [], 0
    for para in paragraphs:
        start = text.index(para, at)
        chunks.append(Chunk(para, start, start + len(para)))
        at = start + len(para)
    document = LoadedDocument(name, text, "text/plain", title=title, updated=updated)
    return document, chunks
