"""Plain text (``.txt``): the cleaned text is the canonical text, with no section."""

from __future__ import annotations

from ..corpus import LoadedDocument
from .cleaning import clean_text

__all__ = ["load_plain_text"]


def load_plain_text(name: str, raw: str) -> LoadedDocument:
    """A plain-text file's decoded text ``raw`` as ``name``; its title its first line when that
    reads as one."""
    clean = clean_text(raw)
    return LoadedDocument(name=name, text=clean, media_type="text/plain", title=_txt_title(clean))


def _txt_title(text: str) -> str | None:
    """A plain-text file's first line, when it reads as a title (short, not a sentence)."""
    first = text.split("\n", 1)[0].strip()
    if first and len(first) <= 80 and first[-1] not in ".!?:;," and "\n" in text:
        return first
    return None
