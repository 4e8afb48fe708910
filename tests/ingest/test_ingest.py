"""Ingest: loaders (txt, md, html, pdf), clean_text, iter_files and the chunker's invariants."""

from __future__ import annotations

import io
import itertools
import time
import warnings
from pathlib import Path

import pypdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kits.fuzzing import scaled
from quotebound.corpus import LoadedDocument, Page, Section
from quotebound.errors import IngestError, InputError
from quotebound.ingest import (
    PAGE_SEPARATOR,
    SUPPORTED_SUFFIXES,
    chunk_document,
    clean_text,
    iter_files,
    load_file,
)
from quotebound.ingest.pdf import _PdfHeadings
from quotebound.text.sentences import sentence_spans

CONTOSO = Path(__file__).resolve().parents[3] / "shared" / "data" / "contoso_hr_benefits" / "pdfs"


Line = str | tuple[str, float, bool]  # a line of text, or (text, size in points, bold)


def make_pdf(pages: list[list[Line]], info: dict[str, str] | None = None) -> bytes:
    """A minimal PDF: one text line per item (Helvetica 12 pt, or the item's own size and
    Helvetica-Bold where it says bold), an optional Info dictionary."""

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    def shown(line: Line) -> str:
        text, size, bold = (line, 12.0, False) if isinstance(line, str) else line
        return f"{max(14, size * 1.25):g} TL /F{2 if bold else 1} {size:g} Tf ({esc(text)}) Tj"

    kids = " ".join(f"{5 + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>",
    ]
    for i, lines in enumerate(pages):
        ops = " T* ".join(shown(line) for line in lines)
        stream = f"BT 72 720 Td {ops} ET" if lines else ""
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {6 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    if info:
        objects.append("<< " + " ".join(f"/{k} ({esc(v)})" for k, v in info.items()) + " >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    info_ref = f" /Info {len(objects)} 0 R" if info else ""
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R{info_ref} >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def encrypt(pdf: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    return path


def assert_chunk_invariants(doc: LoadedDocument, max_chars: int, min_chars: int = 0) -> None:
    """Exact slices, trimmed, in order, no overlap, full coverage, sizes, pages and sections."""
    chunks = chunk_document(doc, max_chars=max_chars, min_chars=min_chars)
    previous_end = 0
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start >= previous_end
        assert doc.text[previous_end : chunk.start].strip() == ""
        assert len(chunk.text) <= max_chars or not any(c.isspace() for c in chunk.text)
        assert chunk.pages == doc.pages_of(chunk.start, chunk.end)
        assert chunk.section == doc.section_at(chunk.start)
        previous_end = chunk.end
    assert doc.text[previous_end:].strip() == ""


# ---------------------------------------------------------------------------- clean_text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("one\r\ntwo\rthree\n", "one\ntwo\nthree"),
        ("an exam-\nple here", "an example here"),
        ("an exam- \n  ple here", "an example here"),
        ("a well-known fact", "a well-known fact"),
        ("job-\n17 done", "job-\n17 done"),
        ("Anti-\nFraud unit", "Anti-\nFraud unit"),
        ("covid-\n19", "covid-\n19"),
        ("un-\n\nrelated", "un-\n\nrelated"),
        ("stay in-\nnetwork; always in-network.", "stay in-network; always in-network."),
        ("co-\ninsurance is coinsurance, not co-insurance; coinsurance", None),
        ("\ufb00 \ufb01 \ufb02 \ufb03 \ufb04 \ufb05 \ufb06", "ff fi fl ffi ffl st st"),
        ("nul\x00 bell\x07 esc\x1b tab\tkept", "nul bell esc tab\tkept"),
        ("page one\x0cpage two", "page one\npage two"),
        ("trailing   \nspaces\t\nnbsp\u00a0\n", "trailing\nspaces\nnbsp"),
        ("a\n\n\n\n\nb\n \n \n\nc", "a\n\nb\n\nc"),
        ("a\n\nb", "a\n\nb"),
        ("\n\n  \n  indented first\nlast\n\n\n", "  indented first\nlast"),
        ("", ""),
        ("\u201cq\u201d &amp; \u2014 \u00e9 \u200b", "\u201cq\u201d &amp; \u2014 \u00e9 \u200b"),
    ],
)
def test_clean_text(raw: str, expected: str | None) -> None:
    if expected is None:  # the document's majority spelling wins: one word here
        expected = "coinsurance is coinsurance, not co-insurance; coinsurance"
    assert clean_text(raw) == expected


@given(st.text(alphabet=st.sampled_from("ab-X7 \t\n\r\x00\x0c\ufb01\u00a0."), max_size=60))
def test_clean_text_is_idempotent_and_clean(raw: str) -> None:
    cleaned = clean_text(raw)
    assert clean_text(cleaned) == cleaned
    assert "\r" not in cleaned and "\x00" not in cleaned and "\ufb01" not in cleaned
    assert "\n\n\n" not in cleaned
    assert not cleaned.startswith("\n") and not cleaned.endswith("\n")
    assert all(line == line.rstrip() for line in cleaned.split("\n"))
    # nothing but layout is removed: the letters and digits survive, in order
    expanded = raw.replace("\ufb01", "fi")
    assert [c for c in cleaned if c.isalnum()] == [c for c in expanded if c.isalnum()]


# ---------------------------------------------------------------------------- txt


def test_txt_utf8_with_bom_and_crlf(tmp_path: Path) -> None:
    path = write(tmp_path / "a.txt", b"\xef\xbb\xbfHello \xe2\x80\x94 world.\r\nSecond line.\r\n")
    doc = load_file(path, "notes/a.txt")
    assert doc.text == "Hello \u2014 world.\nSecond line."
    assert doc.name == "notes/a.txt"
    assert doc.media_type == "text/plain"
    assert (doc.title, doc.pages, doc.sections, doc.updated) == (None, (), (), None)


def test_txt_utf16_with_bom(tmp_path: Path) -> None:
    path = write(tmp_path / "u.txt", "\ufeffWide text.".encode("utf-16-le"))
    assert load_file(path, "u.txt").text == "Wide text."


def test_txt_cp1252_fallback(tmp_path: Path) -> None:
    path = write(tmp_path / "w.txt", "Caf\u00e9 \u201cprice\u201d \u20ac5".encode("cp1252"))
    assert load_file(path, "w.txt").text == "Caf\u00e9 \u201cprice\u201d \u20ac5"


def test_txt_neither_utf8_nor_cp1252(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.txt", b"abc \x81\x8d def \xff")
    with pytest.raises(IngestError, match=r"bad\.txt.*neither UTF-8 nor Windows-1252"):
        load_file(path, "bad.txt")


def test_binary_file_with_text_suffix(tmp_path: Path) -> None:
    path = write(tmp_path / "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    with pytest.raises(IngestError, match=r"image\.txt.*binary") as info:
        load_file(path, "image.txt")
    assert "\n" not in str(info.value)


def test_unreadable_and_unsupported_files(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"missing\.txt.*cannot be read"):
        load_file(tmp_path / "missing.txt", "missing.txt")
    with pytest.raises(IngestError, match=r"sheet\.xlsx.*unsupported"):
        load_file(write(tmp_path / "sheet.xlsx", b"PK"), "sheet.xlsx")
    assert isinstance(IngestError("x"), InputError)


# ---------------------------------------------------------------------------- markdown

MARKDOWN = """\
# Leave Policy

Intro text with a ligature \ufb01le and a broken hyphen-
ated word.

## Parental leave ##

Employees get 16 weeks.

```python
# not a heading
```

#hashtag is not a heading either
### Sick  leave
Ten days.
"""


def test_markdown_sections_and_title(tmp_path: Path) -> None:
    doc = load_file(write(tmp_path / "p.md", MARKDOWN.replace("\n", "\r\n")), "p.md")
    assert doc.media_type == "text/markdown"
    assert doc.title == "Leave Policy"
    assert "file and a broken hyphenated word." in doc.text
    assert doc.text.startswith("# Leave Policy\n\nIntro")  # the markdown itself is the text
    assert [(s.title, s.level) for s in doc.sections] == [
        ("Leave Policy", 1),
        ("Parental leave", 2),
        ("Sick  leave", 3),
    ]
    for section in doc.sections:
        line = doc.text[section.start :].split("\n", 1)[0]
        assert line.startswith("#") and section.title in line
    assert doc.section_at(doc.text.index("16 weeks")) == "Parental leave"
    assert doc.section_at(doc.text.index("not a heading")) == "Parental leave"
    assert doc.section_at(doc.text.index("Ten days")) == "Sick  leave"
    assert clean_text(doc.text) == doc.text


def test_markdown_without_h1_has_no_title(tmp_path: Path) -> None:
    doc = load_file(write(tmp_path / "n.md", "Some text.\n\n## Only H2\n\nMore."), "n.md")
    assert doc.title is None
    assert [s.title for s in doc.sections] == ["Only H2"]


# ---------------------------------------------------------------------------- html

HTML = """<!DOCTYPE html>
<html><head><title>  Benefits
  Guide </title>
<style>p { color: red }</style><script>var x = "<p>not text</p>";</script>
<meta charset="utf-8"></head>
<body>
<noscript>Enable JavaScript</noscript>
<template><p>template text</p></template>
<h1>Benefits &amp; Perks</h1>
<p>First   paragraph
   spans lines &mdash; and has <b>bold</b>, <a href="#">links</a>&nbsp;and&#32;entities.</p>
<div>A div</div><div>another div</div>
<ul><li>one</li><li>two</li></ul>
<h2 id="x">Leave <em>rules</em></h2>
<p>Line one<br>Line two<br/><br/>After a blank</p>
<table><tr><th>Plan</th><td>Cost</td></tr><tr><td>Basic</td><td>$0</td></tr></table>
<pre>  keep   this
    spacing</pre>
<section><article><h3>Deep</h3><p>Nested.</p></article></section>
</body></html>
"""


def test_html_visible_text_blocks_and_sections(tmp_path: Path) -> None:
    doc = load_file(write(tmp_path / "b.html", HTML), "b.html")
    assert doc.media_type == "text/html"
    assert doc.title == "Benefits Guide"
    for hidden in ("color", "var x", "not text", "Enable JavaScript", "template text"):
        assert hidden not in doc.text
    assert doc.text.startswith("Benefits & Perks\n\nFirst paragraph spans lines \u2014 and")
    assert "has bold, links\u00a0and entities." in doc.text
    assert "A div\nanother div" in doc.text
    assert "one\ntwo" in doc.text
    assert "Line one\nLine two\n\nAfter a blank" in doc.text
    assert "Plan Cost\nBasic $0" in doc.text
    assert "  keep   this\n    spacing" in doc.text
    assert [(s.title, s.level) for s in doc.sections] == [
        ("Benefits & Perks", 1),
        ("Leave rules", 2),
        ("Deep", 3),
    ]
    for section in doc.sections:
        assert doc.text[section.start :].startswith(section.title)
    assert doc.section_at(doc.text.index("Line two")) == "Leave rules"
    assert clean_text(doc.text) == doc.text


def test_html_title_falls_back_to_h1_and_unclosed_tags(tmp_path: Path) -> None:
    raw = "<h2>Intro</h2><p>Hi.<h1>Main <i>Title</h1><p>Body text.<h2>Open heading<p>After"
    headless = load_file(write(tmp_path / "h.html", "<title>Tab</title><p>Body.</p>"), "h.html")
    assert (headless.title, headless.text) == ("Tab", "Body.")
    doc = load_file(write(tmp_path / "t.htm", raw), "t.htm")
    assert doc.title == "Main Title"
    assert [s.title for s in doc.sections] == ["Intro", "Main Title", "Open heading"]
    assert doc.text == "Intro\n\nHi.\n\nMain Title\n\nBody text.\n\nOpen heading\n\nAfter"
    for section in doc.sections:
        assert doc.text[section.start :].startswith(section.title)


# ---------------------------------------------------------------------------- pdf

PAGE_1 = ["Leave policy overview.", "Employees accrue leave month-", "ly at a fixed rate."]
PAGE_2 = ["Parental leave is 16 weeks (paid).", "Apply through the portal."]


def test_pdf_pages_offsets_title_and_date(tmp_path: Path) -> None:
    info = {"Title": "HR  Policy", "ModDate": "D:20240131120000Z", "CreationDate": "D:2020"}
    path = write(tmp_path / "p.pdf", make_pdf([PAGE_1, PAGE_2], info))
    doc = load_file(path, "hr/p.pdf")
    page_1 = "Leave policy overview.\nEmployees accrue leave monthly at a fixed rate."
    page_2 = "Parental leave is 16 weeks (paid).\nApply through the portal."
    assert doc.text == page_1 + PAGE_SEPARATOR + page_2
    assert doc.pages == (
        Page(1, 0, len(page_1)),
        Page(2, len(page_1) + 2, len(page_1) + 2 + len(page_2)),
    )
    assert (doc.media_type, doc.title, doc.updated) == (
        "application/pdf",
        "HR Policy",
        "2024-01-31",
    )
    start = doc.text.index("16 weeks")
    assert doc.pages_of(start, start + len("16 weeks")) == (2,)
    assert doc.pages_of(doc.text.index("monthly"), doc.text.index("Apply")) == (1, 2)
    chunks = chunk_document(doc, max_chars=60, min_chars=0)
    assert [(c.text, c.pages) for c in chunks] == [
        ("Leave policy overview.", (1,)),
        ("Employees accrue leave monthly at a fixed rate.", (1,)),
        (page_2, (2,)),
    ]
    assert_chunk_invariants(doc, max_chars=60)


def test_pdf_headings_from_fonts_are_sections_set_apart(tmp_path: Path) -> None:
    running = ("Contoso Handbook", 12.0, True)  # on every page: a running header
    pages: list[list[Line]] = [
        [
            running,
            ("Reimbursement Program for", 20.0, False),  # one title over two lines
            ("Contoso Employees", 20.0, False),
            "Employees accrue leave monthly at a fixed rate.",
            ("Do not share the portal password.", 12.0, True),  # a bold sentence: emphasis
            ("Parental Leave", 12.0, True),
            "Parental leave is 16 weeks (paid).",
            "Cost Savings",  # the body's font, but it reads as a heading between sentences
            "Using the portal saves time for everyone who",
            "Northwind Health",  # title case inside a sentence: no heading
            "members reach.",
        ],
        [running, ("Travel", 16.0, False), "Hotels are capped at 180 EUR per night."],
        [running, "Receipts are uploaded within 45 days."],
    ]
    doc = load_file(write(tmp_path / "h.pdf", make_pdf(pages)), "h.pdf")
    assert [(s.title, s.level) for s in doc.sections] == [
        ("Reimbursement Program for Contoso Employees", 1),
        ("Parental Leave", 3),  # bold at the body's size: the last level
        ("Travel", 2),
    ]
    for section in doc.sections:
        assert doc.text[section.start :].replace("\n", " ").startswith(section.title)
    page_1 = doc.text[doc.pages[0].start : doc.pages[0].end]
    assert page_1 == (
        "Contoso Handbook\n\nReimbursement Program for\nContoso Employees\n\n"
        "Employees accrue leave monthly at a fixed rate.\nDo not share the portal password."
        "\n\nParental Leave\n\nParental leave is 16 weeks (paid).\n\nCost Savings\n\n"
        "Using the portal saves time for everyone who\nNorthwind Health\nmembers reach."
    )
    assert clean_text(doc.text) == doc.text
    sentences = [doc.text[a:b] for a, b in sentence_spans(doc.text)]
    assert "Parental leave is 16 weeks (paid)." in sentences  # no heading runs into it
    assert (
        "Using the portal saves time for everyone who\nNorthwind Health\nmembers reach."
        in sentences
    )
    chunks = chunk_document(doc, max_chars=80, min_chars=0)
    assert {c.section for c in chunks if "16 weeks" in c.text} == {"Parental Leave"}
    assert {c.section for c in chunks if "180 EUR" in c.text} == {"Travel"}
    assert_chunk_invariants(doc, max_chars=80)


def test_pdf_without_heading_fonts_has_no_sections(tmp_path: Path) -> None:
    doc = load_file(write(tmp_path / "p.pdf", make_pdf([PAGE_1, PAGE_2])), "p.pdf")
    assert doc.sections == ()
    # a font the visitor cannot read stops the heading search, never the text
    headings = _PdfHeadings()
    headings.start_page()
    headings.visit("Leave", [1, 0, 0, 1, 0, 0], [1, 0, 0, float("nan"), 0, 0], None, 12)
    headings.visit("Parental Leave", [1, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 9], None, 20)
    for y in (30, 20, 10):  # body text after it: the heading would stand out, but for the font
        headings.visit("Leave is paid in full.", [1, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, y], None, 12)
    assert headings.found() == [[]]


def test_pdf_emphasised_paragraphs_and_alternating_headers_are_no_sections(tmp_path: Path) -> None:
    notice = [  # a bold notice over four lines: emphasis, not four headings
        ("Employees who do not submit receipts within forty", 12.0, True),
        ("five days of travel forfeit the right to any", 12.0, True),
        ("reimbursement of the costs of that trip in", 12.0, True),
        ("full and in part.", 12.0, True),
    ]
    pages: list[list[Line]] = []
    for n in range(6):  # even pages and odd pages each carry their own running header
        header = ("Contoso Handbook", 18.0, False) if n % 2 else ("Employee Benefits", 18.0, False)
        body = [("Travel", 14.0, False), "Hotels are capped at 180 EUR."] if n == 2 else []
        pages.append([header, *body, "Receipts are uploaded within 45 days."])
    pages[0] += notice
    doc = load_file(write(tmp_path / "n.pdf", make_pdf(pages)), "n.pdf")
    assert [(s.title, s.level) for s in doc.sections] == [("Travel", 1)]  # level 1 of those kept
    assert "forty\nfive days of travel forfeit the right to any\nreimbursement" in doc.text


def test_pdf_empty_pages_and_creation_date(tmp_path: Path) -> None:
    path = write(tmp_path / "e.pdf", make_pdf([[], ["Only text."], []], {"CreationDate": "D:2021"}))
    doc = load_file(path, "e.pdf")
    assert doc.text == "Only text."
    assert doc.pages == (Page(1, 0, 0), Page(2, 0, 10), Page(3, 10, 10))
    assert (doc.title, doc.updated) == (None, "2021-01-01")
    assert chunk_document(doc)[0].pages == (2,)


def test_pdf_without_text_layer(tmp_path: Path) -> None:
    path = write(tmp_path / "scan.pdf", make_pdf([[], []]))
    with pytest.raises(IngestError, match=r"scan\.pdf: PDF has no text layer"):
        load_file(path, "scan.pdf")


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\nthis is not really a pdf\n", b"", make_pdf([PAGE_1])[:150], b"\x00\xff" * 64],
    ids=["garbage", "empty", "truncated", "binary"],
)
def test_corrupt_pdf(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path / "broken.pdf", data)
    with pytest.raises(IngestError, match=r"broken\.pdf") as info:
        load_file(path, "broken.pdf")
    assert "\n" not in str(info.value)


def test_encrypted_pdf(tmp_path: Path) -> None:
    locked = write(tmp_path / "locked.pdf", encrypt(make_pdf([PAGE_2]), user_password="secret"))
    with pytest.raises(IngestError, match=r"locked\.pdf: PDF is encrypted"):
        load_file(locked, "locked.pdf")
    # an owner password alone (empty user password) does not stop reading
    opened = write(tmp_path / "owner.pdf", encrypt(make_pdf([PAGE_2]), user_password=""))
    assert "16 weeks" in load_file(opened, "owner.pdf").text


def test_pdf_warnings_do_not_escape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def noisy(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        warnings.warn("odd PDF", UserWarning, stacklevel=2)
        return "Text despite warnings."

    monkeypatch.setattr(pypdf.PageObject, "extract_text", noisy)
    path = write(tmp_path / "n.pdf", make_pdf([PAGE_1]))
    assert load_file(path, "n.pdf").text == "Text despite warnings."  # filterwarnings=error


def test_pdf_page_that_fails_to_extract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        raise KeyError("/Font")

    monkeypatch.setattr(pypdf.PageObject, "extract_text", broken)
    path = write(tmp_path / "k.pdf", make_pdf([PAGE_1]))
    with pytest.raises(IngestError, match=r"k\.pdf: cannot extract the text of page 1 \(KeyError"):
        load_file(path, "k.pdf")


# ---------------------------------------------------------------------------- iter_files


def test_iter_files(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for rel in ("b.md", "a.txt", "sub/z.PDF", "sub/deep/c.html", "sub/x.htm", "A.txt"):
        write(root / rel, "x")
    for rel in (".hidden.txt", ".git/config.txt", "sub/.cache/d.md", "notes.docx", "sub/y"):
        write(root / rel, "x")
    single = write(tmp_path / "elsewhere" / "one.md", "x")
    write(tmp_path / "elsewhere" / "skip.csv", "x")
    found = list(iter_files([root, single, tmp_path / "elsewhere" / "skip.csv"]))
    assert [name for _, name in found] == [
        "A.txt",
        "a.txt",
        "b.md",
        "sub/deep/c.html",
        "sub/x.htm",
        "sub/z.PDF",
        "one.md",
    ]
    assert all(path.is_file() for path, _ in found)
    assert found[3][0] == root / "sub" / "deep" / "c.html"
    assert sorted(SUPPORTED_SUFFIXES) == [".htm", ".html", ".md", ".pdf", ".txt"]
    with pytest.raises(IngestError, match="nowhere"):
        list(iter_files([tmp_path / "nowhere"]))


# ---------------------------------------------------------------------------- chunker


def test_sentences_are_not_split_at_abbreviations_or_decimals() -> None:
    text = (
        "Use e.g. the U.S. office. Dr. Smith pays 2.5 days. Ask for No. 3 now! "
        "Is it done? Yes. The answer is no. Then J. R. Doe left (see p. 4). "
        '"Quoted end." Next one... ok then. Last'
    )
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert sentences == [
        "Use e.g. the U.S. office.",
        "Dr. Smith pays 2.5 days.",
        "Ask for No. 3 now!",
        "Is it done?",
        "Yes.",
        "The answer is no.",
        "Then J. R. Doe left (see p. 4).",
        '"Quoted end."',
        "Next one... ok then.",
        "Last",
    ]


def test_chunks_keep_sentences_whole_and_prefer_paragraphs() -> None:
    first = "Alpha one is here. Alpha two is here."
    second = "Beta one is here. Beta two is here. Beta three."
    text = f"{first}\n\n{second}"
    doc = LoadedDocument(name="d", text=text, media_type="text/plain")
    chunks = chunk_document(doc, max_chars=70, min_chars=20)
    assert [c.text for c in chunks] == [first, second]  # not "... Beta one is here." first
    chunks = chunk_document(doc, max_chars=40, min_chars=0)
    assert [c.text for c in chunks] == [
        "Alpha one is here. Alpha two is here.",
        "Beta one is here. Beta two is here.",
        "Beta three.",
    ]
    assert chunk_document(doc) == [chunk_document(doc)[0]]  # defaults: one chunk
    assert chunk_document(doc)[0].text == text


def test_long_sentences_split_at_line_breaks_then_whitespace_never_mid_word() -> None:
    words = " ".join(f"word{i:03d}" for i in range(40))  # one 319-character sentence
    listing = "\n".join(f"- item {i}" for i in range(12))
    huge = "x" * 150
    text = f"{words}.\n\n{listing}\n\nA {huge} b."
    doc = LoadedDocument(name="d", text=text, media_type="text/plain")
    chunks = chunk_document(doc, max_chars=100, min_chars=0)
    assert_chunk_invariants(doc, max_chars=100)
    for chunk in chunks:
        assert doc.text[chunk.start - 1 : chunk.start].strip() == ""  # starts at a word
        assert doc.text[chunk.end : chunk.end + 1].strip() == ""  # ends at a word
    listing_chunks = [c.text for c in chunks if "item" in c.text]
    assert all(c.startswith("- item") and c.endswith(tuple("0123456789")) for c in listing_chunks)
    assert huge in [c.text for c in chunks]


def test_sections_are_chunk_boundaries_and_bare_headings_join_the_next() -> None:
    text = "# Title\n\n## Leave\n\nLeave is 16 weeks.\n\n## Sick\n\nSick leave is 10 days."
    sections = (
        Section("Title", text.index("# Title"), 1),
        Section("Leave", text.index("## Leave"), 2),
        Section("Sick", text.index("## Sick"), 2),
    )
    doc = LoadedDocument(name="d", text=text, media_type="text/markdown", sections=sections)
    chunks = chunk_document(doc, max_chars=1200, min_chars=10)
    assert [(c.text, c.section) for c in chunks] == [
        ("# Title\n\n## Leave\n\nLeave is 16 weeks.", "Title"),
        ("## Sick\n\nSick leave is 10 days.", "Sick"),
    ]


def test_short_tail_borrows_from_the_chunk_before() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(7))  # 7 x 26 chars
    doc = LoadedDocument(name="d", text=text, media_type="text/plain")
    sizes = [len(c.text) for c in chunk_document(doc, max_chars=140, min_chars=50)]
    assert sizes == [134, 53]  # greedy: 5 + 2 sentences, the tail is long enough
    sizes = [len(c.text) for c in chunk_document(doc, max_chars=140, min_chars=60)]
    assert sizes == [107, 80]  # the tail borrows one sentence
    assert all(size >= 60 for size in sizes)


def test_bad_chunk_sizes() -> None:
    doc = LoadedDocument(name="d", text="x", media_type="text/plain")
    with pytest.raises(InputError, match="min_chars"):
        chunk_document(doc, max_chars=10, min_chars=20)
    with pytest.raises(InputError):
        chunk_document(doc, max_chars=0, min_chars=0)
    assert chunk_document(LoadedDocument(name="e", text="", media_type="text/plain")) == []


_WORDS = st.sampled_from(
    [
        *("leave", "weeks", "e.g.", "Dr.", "U.S.", "2.5", "No. 3", "16", "well-known", "café"),
        *("x" * 45, "The", "Employees", "(paid)", '"quoted"', "\u00a0", "a"),
    ]
)
_SENTENCE = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(_WORDS, min_size=1, max_size=25),
    st.sampled_from([".", "!", "?", "", ".)", ".\u201d"]),
)
_PARAGRAPH = st.builds(
    lambda sentences, sep: sep.join(sentences),
    st.lists(_SENTENCE, min_size=1, max_size=6),
    st.sampled_from([" ", "  ", "\n", " \n "]),
)


@st.composite
def documents(draw: st.DrawFn) -> LoadedDocument:
    """Paragraphs, some of them markdown headings recorded as sections, some pages."""
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    for paragraph in draw(st.lists(_PARAGRAPH, min_size=1, max_size=10)):
        if parts:
            separator = draw(st.sampled_from(["\n\n", "\n\n\n", "\n \n", "\n"]))
            parts.append(separator)
            offset += len(separator)
        if draw(st.booleans()) and draw(st.booleans()):
            heading = f"## H{len(sections)}"
            sections.append(Section(heading[3:], offset, 2))
            parts.append(heading + "\n\n")
            offset += len(heading) + 2
        parts.append(paragraph)
        offset += len(paragraph)
    text = "".join(parts)
    cut = draw(st.integers(0, len(text)))
    pages = (Page(1, 0, cut), Page(2, cut, len(text))) if draw(st.booleans()) else ()
    return LoadedDocument(
        name="gen", text=text, media_type="text/markdown", sections=tuple(sections), pages=pages
    )


@settings(max_examples=scaled(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(20, 400), st.integers(0, 400))
def test_chunk_invariants_property(doc: LoadedDocument, max_chars: int, min_chars: int) -> None:
    min_chars = min(min_chars, max_chars)
    assert_chunk_invariants(doc, max_chars, min_chars)
    chunks = chunk_document(doc, max_chars=max_chars, min_chars=min_chars)
    starts = sorted(s.start for s in doc.sections)
    bounds = [0, *starts, len(doc.text)]  # generated headings always start a line
    sentences = [
        span for a, b in itertools.pairwise(bounds) for span in sentence_spans(doc.text, a, b)
    ]
    for chunk in chunks:
        for a, b in sentences:  # a chunk end cuts no sentence unless it is over-long
            assert not (a < chunk.end < b) or b - a > max_chars
        for k, start in enumerate(starts):  # a section start inside: only after a bare heading
            if chunk.start < start < chunk.end:
                before = doc.text[starts[k - 1] if k else 0 : start].strip()
                assert "\n" not in before and len(before) < min_chars


# ---------------------------------------------------------------------------- real PDFs


@pytest.mark.skipif(not CONTOSO.is_dir(), reason="shared Contoso PDFs are not available")
def test_contoso_employee_handbook() -> None:
    path = CONTOSO / "employee_handbook.pdf"
    started = time.perf_counter()
    doc = load_file(path, "employee_handbook.pdf")
    chunks = chunk_document(doc)
    assert time.perf_counter() - started < 10
    assert len(doc.pages) == len(pypdf.PdfReader(path).pages) == 11
    assert all(page.end > page.start for page in doc.pages)  # every page has text
    assert doc.updated == "2023-03-06"
    assert clean_text(doc.text) == doc.text
    assert_chunk_invariants(doc, max_chars=1200)
    assert any(max(c.pages) > 1 for c in chunks)
    assert all(len(c.pages) >= 1 for c in chunks)


@pytest.mark.skipif(not CONTOSO.is_dir(), reason="shared Contoso PDFs are not available")
def test_contoso_line_break_hyphens_follow_the_document() -> None:
    doc = load_file(CONTOSO / "Northwind_Standard_Benefits_Details.pdf", "northwind.pdf")
    assert "innetwork" not in doc.text and "in-network" in doc.text
    assert_chunk_invariants(doc, max_chars=1200, min_chars=200)


@pytest.mark.skipif(not CONTOSO.is_dir(), reason="shared Contoso PDFs are not available")
def test_contoso_headings_are_sections() -> None:
    doc = load_file(CONTOSO / "Northwind_Standard_Benefits_Details.pdf", "northwind.pdf")
    titles = {s.title: s.level for s in doc.sections}
    assert titles["Balance Billing Protection"] > titles["HOW PROVIDERS AFFECT YOUR COSTS"] > 1
    assert "Northwind Health Standard Plan" in titles  # the canonical text's spaces
    at = doc.text.index("we understand that medical costs can be intimidating")
    assert doc.section_at(at) == "Balance Billing Protection"
    sentence = next(doc.text[a:b] for a, b in sentence_spans(doc.text) if a <= at < b)
    assert sentence.startswith("At Contoso, we understand")  # no heading glued on
    assert clean_text(doc.text) == doc.text


def test_chunks_break_at_page_starts_where_a_sentence_ends() -> None:
    first = "Mileage is claimed monthly. " * 3 + "Receipts are kept."
    second = "Mileage is reimbursed at 58 cents per mile."
    text = f"{first}\n\n{second}"
    at = len(first) + 2
    doc = LoadedDocument(
        "p.pdf", text, "application/pdf", pages=(Page(1, 0, len(first)), Page(2, at, len(text)))
    )
    chunks = chunk_document(doc, max_chars=1200, min_chars=10)
    assert [c.pages for c in chunks] == [(1,), (2,)]
    assert chunks[1].text == second


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Contractor FAQ\n\nContractors are not eligible.", "Contractor FAQ"),
        ("Contractors are not eligible.\n\nMore.", None),  # a sentence, not a title
        ("Only one line", None),
    ],
)
def test_plain_text_title_is_its_first_line_when_it_reads_as_one(
    tmp_path: Path, text: str, title: str | None
) -> None:
    path = tmp_path / "f.txt"
    path.write_text(text, encoding="utf-8")
    assert load_file(path, "f.txt").title == title
