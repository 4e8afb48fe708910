"""Files: which files ingest reads (``iter_files``) and reading one (``load_file``), by its
suffix, with the loader of its type (``plaintext``, ``markdown``, ``html``, ``pdf``).

Invariants:
- Every loader's canonical text is ``clean_text`` output (see ``cleaning``), and every offset
  (``Page``, ``Section``) is into that cleaned text, computed after cleaning.
- ``LoadedDocument.original`` is the file's bytes as read; ``updated`` is the file's own
  metadata or None: the file's mtime is the caller's business.
- A file that cannot be read, decoded or extracted raises ``IngestError`` with one line that
  names the file.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..corpus import LoadedDocument
from ..errors import IngestError
from .decoding import decode_bytes
from .html import load_html
from .markdown import load_markdown
from .pdf import load_pdf
from .plaintext import load_plain_text

__all__ = ["SUPPORTED_SUFFIXES", "iter_files", "load_file"]

SUPPORTED_SUFFIXES: frozenset[str] = frozenset({".txt", ".md", ".html", ".htm", ".pdf"})


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
        return load_pdf(path, name, data)
    text = decode_bytes(path, data)
    if suffix == ".md":
        return load_markdown(name, text)
    if suffix in (".html", ".htm"):
        return load_html(name, text)
    return load_plain_text(name, text)
