"""Originals: kept at ingest, opened from a trace, a PDF's page shown with the quote on it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kits.pdfkit import make_pdf
from kits.serverkit import call
from quotebound.cli import cli
from quotebound.errors import NotFoundError, StoreError
from quotebound.ingest import chunk_document, load_file
from quotebound.originals import OriginalError, original_of, pdf_highlights, render_page, text_page
from quotebound.pipeline import AskOptions, ask
from quotebound.providers.scripted import ScriptedProvider
from quotebound.server import ServerConfig, create_app
from quotebound.store import Store, TraceSource, open_store

CONTOSO = Path(__file__).resolve().parents[3] / "shared" / "data" / "contoso_hr_benefits" / "pdfs"
HOTEL = "Hotel stays are capped at 180 EUR per night in tier 1 cities and"
HOTEL_REST = "140 EUR per night elsewhere. Receipts must be uploaded within"
PAGES = [
    ["Travel policy", "Employees may book economy class for flights under six hours.", HOTEL],
    [HOTEL_REST, "45 days of the purchase, and a manager approves each claim."],
]
ACROSS = f"{HOTEL} 140 EUR per night elsewhere."


def _ingest(store: Store, path: Path, name: str, corpus: str = "travel", keep: bool = True) -> None:
    doc = load_file(path, name)
    store.ingest(corpus, doc, chunk_document(doc), keep_original=keep)


def _cited(
    store: Store, question: str, holding: str, text: str, quote: str, owner: str | None = None
) -> tuple[Any, str]:
    """An answer to ``question`` by a scripted model whose one claim ``text`` quotes ``quote``
    from the sent source holding ``holding``; (the answer, that source's id)."""
    probe = ScriptedProvider(["{}"])
    ask(question, store, probe, AskOptions(entailment=None))
    sid = next(s.id for s in probe.requests[0].working_set if holding in s.text)
    claim = {"text": text, "citations": [{"source": sid, "quote": quote}]}
    model = ScriptedProvider([json.dumps({"answerable": True, "claims": [claim]})])
    return ask(question, store, model, AskOptions(entailment=None, owner=owner)), sid


@pytest.fixture
def travel_pdf(tmp_path: Path) -> Path:
    path = tmp_path / "travel.pdf"
    path.write_bytes(make_pdf(PAGES, title="Travel policy"))
    return path


# -- kept at ingest --------------------------------------------------------------------------------


def test_an_original_is_kept_once_per_file_and_per_version(
    store: Store, tmp_path: Path, travel_pdf: Path
) -> None:
    _ingest(store, travel_pdf, "travel.pdf")
    _ingest(store, travel_pdf, "copy.pdf", corpus="other")  # the same bytes under another name
    first = store.original("travel:travel.pdf", 1)
    copy = store.original("other:copy.pdf", 1)
    assert first is not None and copy is not None
    assert first.hash == copy.hash and first.data == travel_pdf.read_bytes()
    assert first.media_type == "application/pdf"
    # a new version keeps its own original; the old one still opens as it was
    old = travel_pdf.read_bytes()
    travel_pdf.write_bytes(make_pdf([["Travel policy", "Flights are booked in economy class."]]))
    _ingest(store, travel_pdf, "travel.pdf")
    new = store.original("travel:travel.pdf", 2)
    assert new is not None and new.data == travel_pdf.read_bytes()
    assert store.original("travel:travel.pdf", 1).data == old  # type: ignore[union-attr]
    assert store.original("travel:nothing.pdf", 1) is None


def test_no_originals_keeps_none_until_asked(store: Store, travel_pdf: Path) -> None:
    _ingest(store, travel_pdf, "travel.pdf", keep=False)
    assert store.original("travel:travel.pdf", 1) is None
    _ingest(store, travel_pdf, "travel.pdf")  # unchanged text: kept now, the same version
    kept = store.original("travel:travel.pdf", 1)
    assert kept is not None and kept.data == travel_pdf.read_bytes()


def test_a_damaged_original_is_never_served(tmp_path: Path, travel_pdf: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        _ingest(store, travel_pdf, "travel.pdf")
    with sqlite3.connect(tmp_path / "qb.db") as raw:
        raw.execute("UPDATE originals SET data = ?", (b"%PDF-1.4 tampered",))
    with open_store(url) as store, pytest.raises(StoreError, match="does not match its hash"):
        store.original("travel:travel.pdf", 1)


# -- the quote on its page -------------------------------------------------------------------------


def _char_boxes(pdf: bytes, page: int, text: str) -> list[tuple[float, float, float, float]]:
    """PDFium's boxes of the characters of ``text`` on ``page`` (found in the page's text)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    textpage = document[page - 1].get_textpage()
    chars = [
        pypdfium2.raw.FPDFText_GetUnicode(textpage.raw, i) for i in range(textpage.count_chars())
    ]
    at = "".join(chr(c) for c in chars).index(text)  # by character index, as the highlighter reads
    boxes = [textpage.get_charbox(i) for i in range(at, at + len(text))]
    document.close()
    return [b for b in boxes if b[2] > b[0]]


def _inside(box: tuple[float, ...], rects: tuple[tuple[float, ...], ...]) -> bool:
    return any(
        r[0] <= box[0] and box[2] <= r[2] and r[1] <= box[1] and box[3] <= r[3] for r in rects
    )


def test_the_highlight_covers_exactly_the_quoted_characters(travel_pdf: Path) -> None:
    pdf = travel_pdf.read_bytes()
    quote = "book economy class for flights under six hours"
    [page] = pdf_highlights(pdf, 1, [quote])
    assert page.page == 1 and (page.width, page.height) == (612, 792)
    assert all(_inside(box, page.boxes) for box in _char_boxes(pdf, 1, quote))
    before = _char_boxes(pdf, 1, "Employees may")
    assert not any(_inside(box, page.boxes) for box in before)  # words outside the quote stay bare
    assert len(page.boxes) == 1  # one line, one rectangle


def test_a_quote_across_a_page_break_highlights_both_pages(travel_pdf: Path) -> None:
    pdf = travel_pdf.read_bytes()
    first, second = pdf_highlights(pdf, 1, [ACROSS])
    assert (first.page, second.page) == (1, 2)
    assert all(_inside(box, first.boxes) for box in _char_boxes(pdf, 1, HOTEL))
    assert all(
        _inside(box, second.boxes) for box in _char_boxes(pdf, 2, "140 EUR per night elsewhere.")
    )
    assert not any(_inside(box, second.boxes) for box in _char_boxes(pdf, 2, "Receipts must"))
    png = render_page(pdf, second)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000


def test_a_quote_not_on_the_pages_highlights_nothing(travel_pdf: Path) -> None:
    assert (
        pdf_highlights(travel_pdf.read_bytes(), 1, ["Business class is booked for all flights"])
        == []
    )


@pytest.mark.skipif(not CONTOSO.is_dir(), reason="shared Contoso PDFs are not available")
def test_on_a_real_pdf_the_marks_sit_on_the_quoted_words() -> None:
    pdf = (CONTOSO / "Northwind_Standard_Benefits_Details.pdf").read_bytes()
    quote = (
        "This limit applies to certain covered services and includes deductibles, "
        "coinsurance, and copayments."
    )
    [page] = pdf_highlights(pdf, 14, [quote])
    assert page.page == 14 and len(page.boxes) == 2  # the two lines it is set on
    import pypdfium2

    textpage = pypdfium2.PdfDocument(pdf)[13].get_textpage()
    text = textpage.get_text_range()
    start = text.index("This limit applies")
    for i in (start, start + 5, text.index("copayments.") + 9):
        assert _inside(textpage.get_charbox(i), page.boxes)
    assert not _inside(textpage.get_charbox(text.index("large medical bills")), page.boxes)


# -- from a trace: the route, the ACL, the CLI -----------------------------------------------------


@pytest.fixture
def answered(tmp_path: Path, travel_pdf: Path) -> tuple[str, str, str, str]:
    """A store with the travel PDF, an answer citing its hotel cap across the page break, and
    the key that owns it and one that does not: (url, trace id, owner key, other key)."""
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        _ingest(store, travel_pdf, "travel.pdf")
        owner_key, owner = store.create_key(name="owner")
        owner_id = owner_key.id
        _, other = store.create_key(name="other")
        answer, sid = _cited(
            store,
            "What is the hotel cap?",
            "180 EUR",
            "Hotels are capped at 180 EUR a night in tier 1 cities and 140 EUR elsewhere.",
            ACROSS,
            owner_id,
        )
        assert answer.status == "grounded", answer.to_dict()
    return url, answer.trace_id or "", owner, other, sid  # type: ignore[return-value]


def test_a_trace_opens_the_original_it_was_written_from(
    answered: tuple[str, ...], travel_pdf: Path
) -> None:
    url, trace_id, *_, sid = answered
    kept = travel_pdf.read_bytes()
    travel_pdf.write_bytes(make_pdf([["Travel policy", "Flights are booked in economy class."]]))
    with open_store(url) as store:
        _ingest(store, travel_pdf, "travel.pdf")  # the file changed since: a new version
        trace = store.get_trace(trace_id)
        _, original = original_of(store, trace, sid)
        assert original.data == kept  # as it was when the answer was written
        with pytest.raises(NotFoundError, match="was not sent"):
            original_of(store, trace, "S99")


def test_the_service_serves_the_original_and_its_page_to_the_owner_only(
    answered: tuple[str, ...],
) -> None:
    url, trace_id, owner, other, sid = answered
    app = create_app(ServerConfig(store_url=url))
    base = f"/v1/traces/{trace_id}/sources/{sid}"
    got = call(app, "GET", f"{base}/original", owner)
    assert got.status_code == 200 and got.headers["content-type"] == "application/pdf"
    assert got.content.startswith(b"%PDF") and got.headers["x-content-type-options"] == "nosniff"
    marks = call(app, "GET", f"{base}/highlights", owner).json()
    assert [p["page"] for p in marks["pages"]] == [1, 2]
    png = call(app, "GET", f"{base}/page.png?page=2", owner)
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    for path in ("original", "highlights", "page.png"):
        assert call(app, "GET", f"{base}/{path}", other).status_code == 404  # not theirs
        assert call(app, "GET", f"{base}/{path}").status_code == 401
    assert call(app, "GET", f"/v1/traces/{trace_id}/sources/S99/original", owner).status_code == 404
    assert call(app, "GET", f"{base}/page.png?page=7", owner).status_code == 404


def test_a_hostile_html_original_is_served_in_a_sandbox(tmp_path: Path) -> None:
    page = tmp_path / "notes.html"
    page.write_text(
        "<html><body><p>The vendor portal migration finishes in week 12 of the plan.</p>"
        "<script>window.__pwned = 1</script></body></html>",
        encoding="utf-8",
    )
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        _ingest(store, page, "notes.html", corpus="web")
        owner_key, owner = store.create_key(name="owner")
        owner_id = owner_key.id
        answer, sid = _cited(
            store,
            "When does the migration finish?",
            "week 12",
            "The migration finishes in week 12.",
            "The vendor portal migration finishes in week 12",
            owner_id,
        )
    got = call(
        create_app(ServerConfig(store_url=url)),
        "GET",
        f"/v1/traces/{answer.trace_id}/sources/{sid}/original",
        owner,
    )
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    assert got.headers["content-security-policy"].startswith("sandbox")
    assert b"<script>" in got.content  # served as it was, and nothing in it runs


def test_quotebound_open_writes_the_highlighted_pages(
    answered: tuple[str, ...], tmp_path: Path
) -> None:
    url, trace_id, *_, sid = answered
    out = tmp_path / "hotel"
    result = CliRunner().invoke(
        cli, ["open", trace_id, "--citation", sid, "--out", str(out), "--store", url, "--json"]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)
    assert written["original"] == "application/pdf"
    assert [(Path(f["path"]).name, f["page"]) for f in written["files"]] == [
        ("hotel.png", 1),
        ("hotel-p2.png", 2),
    ]
    assert (tmp_path / "hotel.png").read_bytes().startswith(b"\x89PNG")
    assert all(f["boxes"] for f in written["files"])


def test_without_an_original_open_writes_the_text_as_sent(tmp_path: Path, travel_pdf: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        _ingest(store, travel_pdf, "travel.pdf", keep=False)
        quote = "Hotel stays are capped at 180 EUR per night"
        answer, sid = _cited(store, "What is the hotel cap?", "180 EUR", f"{quote}.", quote)
        with pytest.raises(NotFoundError, match="no original was kept"):
            original_of(store, store.get_trace(answer.trace_id or ""), sid)
    out = tmp_path / "hotel"
    result = CliRunner().invoke(
        cli, ["open", answer.trace_id or "", "--citation", sid, "--out", str(out), "--store", url]
    )
    assert result.exit_code == 0, result.output
    page = (tmp_path / "hotel.html").read_text(encoding="utf-8")
    assert '<mark id="quote">Hotel stays are capped at 180 EUR per night</mark>' in page


def test_the_text_page_escapes_everything() -> None:
    source = TraceSource("S1", "Notes <script>alert(1)</script> & the plan ends in week 12.")
    page = text_page(source, [[32, 60]])
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert '<mark id="quote">&amp; the plan ends in week 12.</mark>' in page
    assert "default-src 'none'" in page


def test_a_word_hyphenated_at_a_line_break_is_marked_on_both_lines(tmp_path: Path) -> None:
    lines = [
        "Employees are entitled to sixteen weeks of paid paren-",
        "tal leave unless local law provides more.",
    ]
    pdf = make_pdf([lines])
    path = tmp_path / "leave.pdf"
    path.write_bytes(pdf)
    doc = load_file(path, "leave.pdf")
    assert "paid parental leave" in doc.text  # ingest joined the word
    [page] = pdf_highlights(pdf, 1, ["sixteen weeks of paid parental leave unless local law"])
    assert len(page.boxes) == 2
    assert all(_inside(b, page.boxes) for b in _char_boxes(pdf, 1, "sixteen weeks of paid paren"))
    assert all(_inside(b, page.boxes) for b in _char_boxes(pdf, 1, "tal leave unless local law"))
    assert not any(_inside(b, page.boxes) for b in _char_boxes(pdf, 1, "provides more"))


# -- what a cold review found --------------------------------------------------------------------


def _yellow(png_path: Path) -> int:
    """How many pixels of a PNG written by render_page are the highlight's yellow."""
    import zlib as _z

    data = png_path.read_bytes()
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat, at = b"", 8
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        if kind == b"IDAT":
            idat += data[at + 8 : at + 8 + size]
        at += 12 + size
    raw = _z.decompress(idat)
    count, stride = 0, 1 + 3 * width
    for y in range(height):
        row = raw[y * stride + 1 : (y + 1) * stride]
        count += sum(
            1
            for x in range(0, len(row), 3)
            if row[x] > 240 and row[x + 1] > 200 and row[x + 2] < 160
        )
    return count


@pytest.mark.parametrize(("rotate", "crop"), [(0, ""), (90, ""), (0, "40 300 560 792")])
def test_the_marks_are_drawn_on_the_words_whatever_the_pages_rotation_and_crop(
    rotate: int, crop: str, tmp_path: Path
) -> None:
    pdf = make_pdf([PAGES[0]], rotate=rotate, crop=crop)
    [page] = pdf_highlights(pdf, 1, ["book economy class for flights under six hours"])
    path = tmp_path / "page.png"
    path.write_bytes(render_page(pdf, page))
    assert _yellow(path) > 1000  # the mark is inside the picture, over the words


def test_of_a_quote_that_occurs_twice_the_cited_one_is_marked() -> None:
    lines = [
        "Receipts are kept for audit.",
        "Claims need a receipt.",
        "Meals are capped by city.",
        "Receipts are kept for audit.",
    ]
    pdf = make_pdf([lines])
    text = "\n".join(lines)
    second = text.rindex("Receipts are kept for audit.")
    [page] = pdf_highlights(pdf, 1, [("Receipts are kept for audit.", text[:second])])
    [box] = page.boxes
    assert box[1] < 750 - 2 * 16  # the fourth line, not the first
    [first] = pdf_highlights(pdf, 1, [("Receipts are kept for audit.", "")]).pop().boxes
    assert first[1] > 740


def test_pdfium_is_used_by_one_thread_at_a_time(travel_pdf: Path) -> None:
    import threading

    pdf, errors = travel_pdf.read_bytes(), []

    def work() -> None:
        try:
            for _ in range(8):
                for page in pdf_highlights(pdf, 1, [ACROSS]):
                    render_page(pdf, page)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []  # (without the lock the process crashes outright)


def test_a_damaged_pdf_is_a_clear_error_never_a_traceback(tmp_path: Path) -> None:
    pdf = make_pdf([PAGES[0]]).replace(b"/Count 1", b"/Count 3")  # says 3 pages, has one
    found = pdf_highlights(pdf, 1, ["book economy class for flights under six hours"])
    assert [p.page for p in found] == [1]  # the page that loads still shows its quote
    assert pdf_highlights(pdf, None, ["a quote that is on no page at all"]) == []
    with pytest.raises(OriginalError, match="not a readable PDF"):
        pdf_highlights(b"%PDF-1.4 not really", 1, ["x"])


def test_the_whole_file_only_to_whoever_may_read_the_document_now(
    answered: tuple[str, ...], travel_pdf: Path
) -> None:
    url, trace_id, owner, _, sid = answered
    with open_store(url) as store:  # restricted since the answer: its chunks stay in the trace
        doc = load_file(travel_pdf, "travel.pdf")
        store.ingest("travel", doc, chunk_document(doc), acl=["finance"])
    app = create_app(ServerConfig(store_url=url))
    base = f"/v1/traces/{trace_id}/sources/{sid}"
    assert call(app, "GET", base, owner).status_code == 200  # the text as sent: still theirs
    for path in ("original", "highlights", "page.png"):
        assert call(app, "GET", f"{base}/{path}", owner).status_code == 404
    got = call(app, "GET", f"{base}/original", owner)
    assert got.headers["cache-control"] == "no-store"


def test_the_store_check_sees_a_damaged_or_missing_original(
    tmp_path: Path, travel_pdf: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        _ingest(store, travel_pdf, "travel.pdf")
        assert store.check().ok  # type: ignore[attr-defined]
    with sqlite3.connect(tmp_path / "qb.db") as raw:
        raw.execute("UPDATE originals SET data = ?", (b"%PDF-1.4 tampered",))
    with open_store(url) as store:
        report = store.check()  # type: ignore[attr-defined]
        assert not report.ok and any("originals" in p for p in map(str, report.problems))
    with sqlite3.connect(tmp_path / "qb.db") as raw:
        raw.execute("DELETE FROM originals")
    with open_store(url) as store:
        report = store.check()  # type: ignore[attr-defined]
        assert any("original file is missing" in str(p) for p in report.problems)
        with pytest.raises(StoreError, match="missing from the store"):
            store.original("travel:travel.pdf", 1)


def test_the_whole_document_opens_at_the_version_sent_with_the_quote_marked(tmp_path: Path) -> None:
    from kits.corpuskit import make_doc
    from quotebound.originals import document_page

    intro = "The leave policy applies to every employee of Northwind Traders in every country."
    leave = (
        "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
    )
    outro = "Questions about <b>leave</b> go to the HR team, who answer within five days."
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        store.ingest("hr", *make_doc("leave.txt", intro, leave, outro))
        owner_key, owner = store.create_key(name="owner")
        answer, sid = _cited(
            store,
            "How long is parental leave?",
            "16 weeks",
            "Employees get 16 weeks of paid parental leave.",
            "entitled to 16 weeks of paid parental leave",
            owner_key.id,
        )
        trace = store.get_trace(answer.trace_id or "")
        page = document_page(store, trace, sid)
        store.ingest("hr", *make_doc("leave.txt", intro, leave.replace("16", "18"), outro))  # v2
        assert document_page(store, trace, sid) == page  # still the version that was sent
    assert (
        intro in page
        and '<mark id="quote">entitled to 16 weeks of paid parental leave</mark>' in page
    )
    assert "&lt;b&gt;leave&lt;/b&gt;" in page  # escaped, never markup
    got = call(
        create_app(ServerConfig(store_url=url)),
        "GET",
        f"/v1/traces/{answer.trace_id}/sources/{sid}/document",
        owner,
    )
    assert got.status_code == 200 and got.text == page
    assert got.headers["content-security-policy"].startswith("sandbox")
    with open_store(url) as store:  # restricted since: the caller keeps the text as sent only
        store.ingest(
            "hr", *make_doc("leave.txt", intro, leave.replace("16", "18"), outro), acl=["hr"]
        )
    got = call(
        create_app(ServerConfig(store_url=url)),
        "GET",
        f"/v1/traces/{answer.trace_id}/sources/{sid}/document",
        owner,
    )
    assert got.status_code == 200 and intro not in got.text and "16 weeks" in got.text


HOSTILE_PAGE = (
    b"<html><head><title>Notes</title><script>window.__pwned = 1</script></head><body>"
    b'<h1 onclick="window.__pwned = 2">Release notes</h1>'
    b"<p>The vendor portal <b>migration</b> finishes in week 12 of the plan.</p>"
    b'<img src="x" onerror="window.__pwned = 3"><iframe src="https://evil.example/"></iframe>'
    b"<p>Rollback &amp; support: the vendor portal migration finishes in week 12 of the plan.</p>"
    b"</body></html>"
)


def test_an_html_original_is_rendered_safely_with_its_quote_marked() -> None:
    from quotebound.originals import html_page

    quote = "the vendor portal migration finishes in week 12"
    page = html_page(HOSTILE_PAGE, [(quote, "Rollback & support: ")], "Notes")
    assert page is not None
    for bad in ("<script", "onclick", "onerror", "<img", "<iframe", "__pwned"):
        assert bad not in page
    cited = '<mark id="quote">the vendor portal migration finishes in week 12</mark>'
    assert f"<p>Rollback &amp; support: {cited}" in page
    assert "<b>migration</b>" in page  # the first occurrence, not the cited one, stays bare
    first = html_page(HOSTILE_PAGE, [(quote, "")], "Notes") or ""  # no context: the first
    over = '<mark id="quote">The vendor portal </mark><b><mark>migration</mark></b>'
    assert f"<p>{over}<mark> finishes in week 12</mark>" in first
    assert (
        html_page(HOSTILE_PAGE, [("a sentence that is not there at all", "")]).count("<mark") == 0
    )


@pytest.mark.parametrize(
    "markup",
    [
        "<html><head><title>T</title><body><p>{}</p></body></html>",  # a head never closed
        "<html><body><form action='/x'><p>{}</p></form></body></html>",  # a form around it all
        "<p>intro</p><embed src='x.swf'><p>{}</p>",  # a void element that is dropped
        "<details><summary>Deductible</summary>{}</details>",  # breaks where ingest breaks
        "<svg><script>window.x=1</script></svg><p>{}</p>",  # a script inside an svg
    ],
)
def test_the_text_of_an_html_original_is_all_there_and_marked(markup: str) -> None:
    from quotebound.originals import html_page

    sentence = "The deductible is 500 dollars for each member of the plan."
    page = html_page(
        markup.format(sentence).encode(), [("deductible is 500 dollars for each", "The ")]
    )
    assert page is not None and '<mark id="quote">deductible is 500 dollars for each</mark>' in page
    assert "window.x" not in page and "<script" not in page


def test_overlapping_quotes_never_repeat_text() -> None:
    from quotebound.originals import html_page

    data = b"<p>Employees are entitled to 16 weeks of paid parental leave.</p>"
    page = html_page(
        data, [("entitled to 16 weeks", ""), ("16 weeks of paid", ""), ("16 weeks", "")]
    )
    assert page is not None
    assert '<mark id="quote">entitled to 16 weeks of paid</mark> parental leave.' in page


def test_a_context_that_starts_at_a_ligature_still_picks_the_cited_occurrence() -> None:
    from quotebound.originals import html_page

    visit = "the fee is 40 dollars per visit."
    data = f"<p>Draft office: {visit}</p><p>ﬁnal office: {visit}</p>".encode()
    page = html_page(data, [("the fee is 40 dollars per visit", "ﬁnal office: ")]) or ""
    assert (
        "<p>Draft office: the fee" in page
        and 'office: <mark id="quote">the fee is 40' in page.split("Draft")[1]
    )


def test_an_unparseable_or_huge_html_original_falls_back_to_its_text() -> None:
    from quotebound.originals import MAX_HTML_BYTES, html_page

    assert html_page(b"<![foo[bar]]> the text", [("the text", "")]) is None
    assert html_page(b"<p>" + b"x " * MAX_HTML_BYTES + b"</p>", []) is None


@pytest.mark.parametrize("withdraw", ["new_version", "delete"])
def test_restricting_or_deleting_a_document_withdraws_every_versions_file(
    withdraw: str, answered: tuple[str, ...], travel_pdf: Path
) -> None:
    url, trace_id, owner, _, sid = answered
    with open_store(url) as store:
        if withdraw == "new_version":  # a new version, restricted: v1's file goes with it
            travel_pdf.write_bytes(make_pdf([["Travel policy", "All flights need approval."]]))
            doc = load_file(travel_pdf, "travel.pdf")
            store.ingest("travel", doc, chunk_document(doc), acl=["finance"])
        else:
            assert store.delete("travel:travel.pdf")
    app = create_app(ServerConfig(store_url=url))
    base = f"/v1/traces/{trace_id}/sources/{sid}"
    for path in ("original", "highlights", "page.png"):
        assert call(app, "GET", f"{base}/{path}", owner).status_code == 404
    got = call(app, "GET", f"{base}/document", owner)
    assert got.status_code == 200 and "Travel policy" in got.text  # the text as sent is theirs


# -- Markdown: rendered from its text, the quote marked --------------------------------------------

GUIDE = """# Travel guide

Hotel stays are **capped at 180 EUR** per night in tier 1 cities.
See [the policy](https://intranet.example/policy "Policy") for the `tier` list.

- Receipts must be uploaded within 45 days.
- A manager ~~never~~ approves each claim.

> Taxis are reimbursed
> up to 60 EUR.

| City | Tier |
|------|:----:|
| Berlin | 1 |

```
<script>alert(1)</script> **not bold**
```

<img src=x onerror=alert(2)> ![a map](javascript:alert(3))
"""


def _spans_of(text: str, *quotes: str) -> list[list[int]]:
    return [[text.index(q), text.index(q) + len(q)] for q in quotes]


def test_a_markdown_original_is_rendered_with_its_quotes_marked() -> None:
    from quotebound.originals import markdown_page

    page = markdown_page(GUIDE, _spans_of(GUIDE, "stays are **capped at 180 EUR** per night"))
    # structure and emphasis as a reader sees them; the quote marked around the bold, not in it
    assert "<h1>Travel guide</h1>" in page
    assert (
        '<p>Hotel <mark id="quote">stays are </mark><strong><mark>capped at 180 EUR</mark>'
        "</strong><mark> per night</mark> in tier 1 cities." in page
    )
    assert "<li>Receipts must be uploaded within 45 days.</li>" in page
    assert "A manager <s>never</s> approves" in page
    assert "<blockquote>Taxis are reimbursed\nup to 60 EUR.</blockquote>" in page
    assert "<tr><td> Berlin </td><td> 1 </td></tr>" in page and "----" not in page
    assert "for the <code>tier</code> list" in page
    # a link is its text, an image its alt text: no address, nothing that loads or runs
    assert "See the policy for" in page and "intranet.example" not in page
    assert "javascript" not in page and "a map" in page
    assert "<script" not in page and "<img" not in page and "onerror=" in page.replace("&lt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; **not bold**" in page  # code stays as written


def test_a_markdown_quote_over_a_line_break_and_inside_a_list_is_marked() -> None:
    from quotebound.originals import markdown_page

    page = markdown_page(
        GUIDE, _spans_of(GUIDE, "reimbursed\n> up to 60", "uploaded within 45 days")
    )
    assert "Taxis are <mark>reimbursed\nup to 60</mark> EUR." in page
    assert '<li>Receipts must be <mark id="quote">uploaded within 45 days</mark>.</li>' in page
    # every tag it opens, it closes
    tags = ("p", "ul", "li", "blockquote", "table", "tr", "td", "pre", "code", "strong", "mark")
    for tag in tags:
        assert page.count(f"<{tag}>") + page.count(f"<{tag} ") == page.count(f"</{tag}>"), tag


def test_an_unclosed_emphasis_or_fence_never_leaves_a_tag_open() -> None:
    from quotebound.originals import markdown_page

    text = "A **bold start\nthat runs on.\n\n```\ncode that never closes"
    page = markdown_page(text, _spans_of(text, "runs on"))
    assert "<strong>bold start\nthat <mark" in page
    assert page.count("<strong>") == page.count("</strong>") == 1
    assert page.count("<pre><code>") == page.count("</code></pre>") == 1
    assert "code that never closes</code></pre>" in page


def test_a_markdown_document_opens_rendered_in_the_document_page(tmp_path: Path) -> None:
    from quotebound.originals import document_page

    path = tmp_path / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    for keep in (True, False):  # without its file, known by its name
        with open_store(f"sqlite:///{tmp_path / f'qb{keep}.db'}") as store:
            _ingest(store, path, "guide.md", keep=keep)
            answer, sid = _cited(
                store,
                "How soon must receipts be uploaded?",
                "Receipts",
                "Receipts must be uploaded within 45 days.",
                "Receipts must be uploaded within 45 days.",
            )
            page = document_page(store, store.get_trace(answer.trace_id or ""), sid)
        assert '<li><mark id="quote">Receipts must be uploaded within 45 days.</mark></li>' in page
        assert "<h1>Travel guide</h1>" in page and "intranet.example" not in page
