"""Ingest: files -> ``LoadedDocument`` (canonical text, pages, sections) -> ``Chunk`` list.

Offsets everywhere are into a document's canonical (cleaned) text, and every chunk is an exact
slice of it; see ``loaders`` and ``chunker`` for the invariants each half keeps.
"""

from __future__ import annotations

from .chunker import chunk_document
from .loaders import SUPPORTED_SUFFIXES, iter_files, load_file

__all__ = ["SUPPORTED_SUFFIXES", "chunk_document", "iter_files", "load_file"]
