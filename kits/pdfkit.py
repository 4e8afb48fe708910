"""A minimal PDF writer for tests and benchmarks: pages of text lines in Helvetica, one line
per ``Tj``.

Enough for the loaders (pypdf) and the highlighter (PDFium) to read real text with real
character boxes, without a binary fixture in the repository.
"""

from __future__ import annotations

LINE_HEIGHT = 16
TOP = 750
LEFT = 72


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: list[list[str]], title: str = "Test document", rotate: int = 0, crop: str = ""
) -> bytes:
    """A PDF whose page ``n`` shows ``pages[n]``, a line of text each, 12 pt, from the top;
    every page turned by ``rotate`` degrees, and cropped to ``crop`` ("x0 y0 x1 y1") if given."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids: list[int] = []
    pages_id = len(objects) + 1 + 2 * len(pages)  # the Pages object comes after every page
    for lines in pages:
        ops = ["BT", "/F1 12 Tf", f"{LEFT} {TOP} Td", f"{LINE_HEIGHT} TL"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Rotate %d%s >>"
                % (
                    pages_id,
                    content,
                    font,
                    rotate,
                    (b" /CropBox [" + crop.encode() + b"]") if crop else b"",
                )
            )
        )
    refs = " ".join(f"{k} 0 R" for k in kids).encode()
    assert add(b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % len(kids)) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    info = add(b"<< /Title (" + _escape(title).encode("latin-1") + b") >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        info,
        xref,
    )
    return bytes(out)
