"""Ingest: files -> ``LoadedDocument`` (canonical text, pages, sections) -> ``Chunk`` list.

Offsets everywhere are into a document's canonical (cleaned) text, and every chunk is an exact
slice of it; see ``files`` and ``chunker`` for the invariants each half keeps.

    files      which files are read (``iter_files``), and one read by its type (``load_file``)
    decoding   a text file's bytes -> its text
    cleaning   extracted text -> canonical text (``clean_text``)
    plaintext  ``.txt``
    markdown   ``.md`` (its block patterns shared with ``originals.markdown``)
    html       ``.html``, ``.htm`` (its block tags shared with ``originals.safehtml``)
    pdf        ``.pdf``, its text layer and the headings its fonts mark
    chunker    a ``LoadedDocument`` -> its ``Chunk`` list
"""

from __future__ import annotations

from .chunker import chunk_document
from .cleaning import clean_text
from .files import SUPPORTED_SUFFIXES, iter_files, load_file
from .pdf import PAGE_SEPARATOR

__all__ = [
    "PAGE_SEPARATOR",
    "SUPPORTED_SUFFIXES",
    "chunk_document",
    "clean_text",
    "iter_files",
    "load_file",
]
