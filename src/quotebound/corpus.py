"""The corpus data model shared by ingest, the store, retrieval and the packer.

Invariants:
- A document's ``text`` is its *canonical* text: what loaders extracted, with layout artefacts
  (line-break hyphenation, ligatures, stray control characters) cleaned. Every offset anywhere
  (chunks, pages, spans in traces) is into this text, never into the raw file.
- A chunk is an exact slice: ``doc.text[chunk.start:chunk.end] == chunk.text``.
- Chunks are content-addressed: ``chunk.hash`` is the sha256 of its text (UTF-8), and identical
  text is stored once whatever document it came from.
- Document keys are corpus-prefixed (``handbook:policy.pdf``), so two corpora never collide.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


def sha256_text(text: str) -> str:
    """The content address of a text: hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a paginated document: its 1-based number and ``[start, end)`` in the text."""

    number: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and where its section starts in the canonical text."""

    title: str
    start: int
    level: int = 1


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    """A file's canonical text and structure, before chunking."""

    name: str  # the document's name inside its corpus (a relative path such as "hr/policy.pdf")
    text: str
    media_type: str  # "text/plain" | "text/markdown" | "text/html" | "application/pdf"
    title: str | None = None
    pages: tuple[Page, ...] = ()
    sections: tuple[Section, ...] = ()
    updated: str | None = None  # ISO date, from the file's metadata when it has one
    # The file's bytes, exactly as read (what a citation's "open the original" shows); None
    # for text given without a file. Not part of the document's identity (``hash``).
    original: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def hash(self) -> str:
        return sha256_text(self.text)

    def pages_of(self, start: int, end: int) -> tuple[int, ...]:
        """The numbers of the pages that ``[start, end)`` touches (empty when unpaginated)."""
        return tuple(p.number for p in self.pages if p.start < end and start < p.end)

    def section_at(self, offset: int) -> str | None:
        """The title of the innermost section that has started at ``offset``."""
        current = None
        for section in self.sections:
            if section.start <= offset:
                current = section.title
            else:
                break
        return current


@dataclass(frozen=True, slots=True)
class Chunk:
    """A whole-sentence slice of a document's canonical text."""

    text: str
    start: int
    end: int
    pages: tuple[int, ...] = ()
    section: str | None = None
    hash: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", sha256_text(self.text))


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved chunk occurrence, ranked (higher ``score`` is better)."""

    key: str
    version: int
    text: str
    hash: str
    start: int
    end: int
    score: float
    title: str | None = None
    url: str | None = None
    updated: str | None = None
    pages: tuple[int, ...] = ()
    section: str | None = None
    ordinal: int = 0

    @property
    def page(self) -> int | None:
        return self.pages[0] if self.pages else None
