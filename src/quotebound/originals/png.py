"""A PNG encoder for a rendered page: 8-bit RGB rows, no filter, one zlib stream (the standard
library's). That is all a page with its marks needs; Pillow writes the same pixels, but slower
and larger on a rendered page (adaptive row filters), and would be one more compiled dependency
of the base install."""

from __future__ import annotations

import struct
import zlib


def encode_png(pixels: bytearray, width: int, height: int, stride: int, channels: int) -> bytes:
    """An RGB PNG of raw rows (``channels`` bytes a pixel, the first three R, G, B)."""
    raw = bytearray()
    for y in range(height):
        row = pixels[y * stride : y * stride + width * channels]
        if channels != 3:
            rgb = bytearray(width * 3)
            for c in range(3):
                rgb[c::3] = row[c::channels]
            row = rgb
        raw += b"\x00" + row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 6))
        + chunk(b"IEND", b"")
    )
