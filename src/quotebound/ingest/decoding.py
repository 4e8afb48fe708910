"""Decoding: a text file's bytes -> its text, the one way ingest (and the originals) read it."""

from __future__ import annotations

import codecs
from pathlib import Path

from ..errors import IngestError

__all__ = ["decode_bytes"]


def decode_bytes(path: Path, data: bytes) -> str:
    """UTF-8 (BOM or not), UTF-16 with a BOM, else Windows-1252 if every byte is defined."""
    try:
        if data.startswith(codecs.BOM_UTF8):
            return data[len(codecs.BOM_UTF8) :].decode("utf-8")
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
    except UnicodeDecodeError as exc:
        reason = f"{path}: its byte order mark says Unicode but it is not ({exc.reason})"
        raise IngestError(reason) from exc
    if b"\x00" in data:
        raise IngestError(f"{path}: looks like a binary file (it contains NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:  # Python's cp1252 codec rejects the five undefined bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D)
        return data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: is neither UTF-8 nor Windows-1252 text; convert it to UTF-8"
        ) from exc
