"""The web page in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright):
ask, click a chip, read the highlighted quote; a hostile source stays inert; an abstention
shows its helpful state; the history page lists past answers.

Screenshots go to the test's tmp dir, and also to $QB_SCREENSHOTS when set (``make
screenshots`` writes the ones the README shows, under docs/img/).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kits.serverkit import HOSTILE, doc, live_server
from quotebound.ingest import chunk_document, iter_files, load_file
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.providers.scripted import ScriptedProvider
from quotebound.server import ServerConfig, create_app
from quotebound.store import open_store

CHROMIUM = "/usr/bin/chromium"
HANDBOOK = Path(__file__).resolve().parents[2] / "examples" / "handbook"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no {CHROMIUM}: install Debian's chromium (make test does, as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        assert launched.version.split(".")[0] == _debian_major()  # Debian's, not a download
        yield launched
        launched.close()


def _debian_major() -> str:
    import subprocess

    out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, check=True)
    return next(w for w in out.stdout.split() if w[:1].isdigit()).split(".")[0]


class Site:
    def __init__(self, base: str, page: Any, secret: str, shots: Path) -> None:
        self.base, self.page, self.secret, self.shots = base, page, secret, shots

    def sign_in(self) -> None:
        self.page.goto(self.base + "/")
        self.page.fill("#key", self.secret)
        self.page.click("#key-form button")
        self.page.wait_for_selector("#who.ok")

    def ask(self, question: str) -> None:
        self.page.fill("#question", question)
        self.page.click("#ask-button")
        self.page.wait_for_selector("#answer .status")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / name), full_page=False)
        target = os.environ.get("QB_SCREENSHOTS")
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(Path(target) / name), full_page=False)


@pytest.fixture
def site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        store.ingest("web", *doc("release.html", HOSTILE, title="<b>Release</b> notes"))
        for path, name in iter_files([HANDBOOK]):  # a real corpus through the real ingest path
            loaded = load_file(path, name)
            store.ingest(
                "handbook",
                loaded,
                chunk_document(loaded),
                url=f"https://handbook.northwind.example/{name}",
            )
        secret = store.create_key(name="browser test")[1]
    app = create_app(ServerConfig(store_url=url, provider=ExtractiveProvider))
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    with live_server(app) as base:
        yield Site(base, page, secret, tmp_path)
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def test_a_chip_opens_the_source_with_the_quote_highlighted(site: Site) -> None:
    from playwright.sync_api import expect

    site.sign_in()
    site.ask("How many weeks of parental leave do employees get in Germany?")
    page = site.page
    claims = page.locator("#answer .claims .claim")
    expect(claims.first).to_be_visible()
    texts = claims.all_inner_texts()
    assert any("16 weeks" in t for t in texts)
    quotes = page.locator("#answer .cards blockquote").all_inner_texts()
    expect(page.locator("#answer .status")).to_contain_text("status grounded")
    site.shot("answer.png")
    page.locator("#answer .claims .chip").first.click()
    panel = page.locator("#panel")
    expect(panel).to_be_visible()
    current = page.locator("#panel-text mark.current")
    expect(current).to_be_visible()
    expect(current).to_be_in_viewport()
    assert any(current.inner_text() in q for q in quotes)
    assert len(page.locator("#panel-text").inner_text()) > len(current.inner_text())
    expect(page.locator("#panel-title")).to_have_text("Leave policy")
    expect(page.locator("#panel-meta")).to_contain_text("handbook:leave.md")
    href = page.locator("#panel-link").get_attribute("href")
    assert href is not None
    assert href.startswith("https://handbook.northwind.example/leave.md#:~:text=")
    site.shot("source-panel.png")
    for n in range(claims.count()):  # each claim's chip opens the quote behind that claim
        claims.nth(n).locator(".chip").first.click()
        expect(current).to_be_visible()
        assert current.inner_text() in claims.nth(n).inner_text()
    page.click("#panel-close")
    expect(panel).to_be_hidden()


def test_a_hostile_source_renders_as_inert_text(site: Site) -> None:
    from playwright.sync_api import expect

    site.sign_in()
    site.ask("When does the vendor portal migration finish in the project plan?")
    page = site.page
    expect(page.locator("#answer .claims .claim").first).to_contain_text("<script>")
    page.locator("#answer .claims .chip").first.click()
    expect(page.locator("#panel-text")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.locator("#panel-text")).to_contain_text('<img src=x onerror="window.__pwned=2">')
    expect(page.locator("#panel-title")).to_have_text("<b>Release</b> notes")
    assert page.evaluate("window.__pwned") is None  # the CSP alone would stop this one...
    # ...so check the DOM: source text made no element anywhere, it is all text nodes
    claim = page.locator("#answer .claims .claim").first
    assert claim.locator("*").evaluate_all("els => els.map(e => e.tagName)") == ["BUTTON"]
    assert page.locator("#panel-text *").evaluate_all("els => els.map(e => e.tagName)") == ["MARK"]
    assert page.locator("#panel-title *").count() == 0
    assert page.locator("#answer .cards b, #answer .cards script").count() == 0
    assert page.locator("script").count() == 1  # app.js, nothing from the source
    assert page.locator("img").count() == 0
    site.shot("hostile-source.png")


def test_an_abstention_shows_what_was_searched_and_what_next(site: Site) -> None:
    from playwright.sync_api import expect

    site.sign_in()
    site.ask("zebra quantum saxophone")
    box = site.page.locator("#answer .abstention")
    expect(box).to_be_visible()
    expect(box).to_contain_text("Not answered from the documents")
    expect(box).to_contain_text("Searched: nothing matched")
    expect(box).to_contain_text("Next step:")
    assert site.page.locator("#answer .claims .claim").count() == 0
    site.shot("abstention.png")


def test_the_history_page_lists_past_answers_and_reopens_citations(site: Site) -> None:
    from playwright.sync_api import expect

    site.sign_in()
    site.ask("How many weeks of parental leave do employees get in Germany?")
    site.ask("zebra quantum saxophone")
    page = site.page
    page.click("#nav-history")
    traces = page.locator("#history article.trace")
    expect(traces).to_have_count(2)
    expect(traces.nth(0).locator("h3")).to_have_text("zebra quantum saxophone")
    expect(traces.nth(1).locator(".claim.kept").first).to_contain_text("weeks")
    traces.nth(1).locator("button.chip").first.click()
    expect(page.locator("#panel-text mark.current")).to_be_visible()
    site.shot("history.png")


def test_a_wrong_key_is_told_plainly(site: Site) -> None:
    from playwright.sync_api import expect

    page = site.page
    page.goto(site.base + "/")
    page.fill("#key", "qb_wrong")
    page.click("#key-form button")
    expect(page.locator("#who.bad")).to_contain_text("unknown or revoked API key")


EMOJI_DOC = (
    "Intro 😀😀😀😀😀 𝐛𝐨𝐥𝐝 notes here. Employees are entitled to 16 weeks of paid parental "
    "leave unless local law provides more."
)
FIRST = "Employees are entitled to 16 weeks of paid parental leave"
SECOND = "16 weeks of paid parental leave unless local law provides more"


@pytest.fixture
def scripted_site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    """One source with astral characters before two overlapping verified quotes."""
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        store.ingest(
            "hr", *doc("leave.txt", EMOJI_DOC, title="Leave"), url="javascript:window.__pwned=3//"
        )
        secret = store.create_key()[1]
    answer = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": "Employees get 16 weeks of paid parental leave.",
                    "citations": [{"source": "S1", "quote": FIRST}],
                },
                {
                    "text": "Local law can give more than the 16 weeks.",
                    "citations": [{"source": "S1", "quote": SECOND}],
                },
            ],
        }
    )
    yield from _scripted_site(browser, url, secret, tmp_path, [answer])


def _scripted_site(
    browser: Any, url: str, secret: str, tmp_path: Path, outputs: list[str]
) -> Iterator[Site]:
    """The service over ``url`` with a scripted model replaying ``outputs``, in a browser."""
    provider = ScriptedProvider(outputs)
    app = create_app(ServerConfig(store_url=url, provider=lambda: provider))
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    with live_server(app) as base:
        yield Site(base, context.new_page(), secret, tmp_path)
    context.close()


def test_highlights_are_exact_after_emoji_and_overlapping_quotes(scripted_site: Site) -> None:
    from playwright.sync_api import expect

    site = scripted_site
    site.sign_in()
    site.ask("How many weeks of parental leave?")
    page = site.page
    claims = page.locator("#answer .claims .claim")
    expect(claims).to_have_count(2)
    current = page.locator("#panel-text mark.current")
    for n, quote in enumerate((FIRST, SECOND)):
        claims.nth(n).locator(".chip").click()
        expect(current).to_have_text(quote)  # the clicked claim's own quote, exactly
    assert page.locator("#panel-text").inner_text() == EMOJI_DOC
    assert page.locator("#panel-link").is_hidden()  # a javascript: URL is never a link
    assert page.evaluate("window.__pwned") is None


LEAVE_AND_RECEIPTS = (
    "Employees are entitled to 16 weeks of paid parental leave unless local law provides more. "
    "Receipts must be uploaded to the expense portal within 45 days of the purchase."
)


def _policy_site(browser: Any, tmp_path: Path, text: str, quote: str, turns: int) -> Iterator[Site]:
    """The leave-and-receipts policy, and a model that answers with one claim citing ``quote``
    in each of its ``turns``."""
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        store.ingest("hr", *doc("policy.txt", LEAVE_AND_RECEIPTS, title="Policy"))
        secret = store.create_key()[1]
    claim = {"text": text, "citations": [{"source": "S1", "quote": quote}]}
    answer = json.dumps({"answerable": True, "claims": [claim]})
    yield from _scripted_site(browser, url, secret, tmp_path, [answer] * turns)


@pytest.fixture
def half_answer_site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    """A model that answers one part of a two-part question, in both of its turns."""
    text = "Employees get 16 weeks of paid parental leave."
    yield from _policy_site(browser, tmp_path, text, FIRST, turns=2)


@pytest.fixture
def one_sided_site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    """Two policies that disagree, and a model that cites only the old one, in both turns."""
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    old = "Employees get 12 weeks of paid parental leave under the 2024 policy."
    new = "From 2026, employees get 16 weeks of paid parental leave <b>now</b>."
    with open_store(url) as store:
        store.ingest("hr", *doc("old.txt", old, title="Old policy"))
        store.ingest("hr", *doc("new.txt", new, title="New policy"))
        secret = store.create_key()[1]
    # Cited as S1 whichever id the old policy is sent under: if it is S2, the quote is found
    # there and the claim re-anchored to it (reanchor.reanchor).
    claim = {"text": "Employees get 12 weeks of paid parental leave.", "citations": []}
    claim["citations"] = [{"source": "S1", "quote": old}]
    answer = json.dumps({"answerable": True, "claims": [claim]})
    yield from _scripted_site(browser, url, secret, tmp_path, [answer, answer])


def test_a_source_that_disagrees_and_is_not_cited_is_said(one_sided_site: Site) -> None:
    from playwright.sync_api import expect

    site = one_sided_site
    site.sign_in()
    site.ask("How many weeks of paid parental leave do employees get?")
    expect(site.page.locator("#answer .claims .claim")).to_have_count(1)
    note = site.page.locator("#answer .conflict")
    expect(note).to_have_count(1)
    expect(note).to_contain_text("Check which applies: S")
    expect(note).to_contain_text("(New policy, updated 2026-11-01), not cited, gives other figures")
    expect(note).to_contain_text(
        "“From 2026, employees get 16 weeks of paid parental leave <b>now</b>.”"
    )
    assert site.page.locator("#answer .conflict b").count() == 0  # source text, never markup


def test_a_part_of_the_question_left_unanswered_is_said(half_answer_site: Site) -> None:
    from playwright.sync_api import expect

    site = half_answer_site
    site.sign_in()
    site.ask(
        "How many weeks of parental leave do employees get, and when must receipts be uploaded?"
    )
    expect(site.page.locator("#answer .claims .claim")).to_have_count(1)
    note = site.page.locator("#answer .unaddressed")
    expect(note).to_have_text("Not answered by a verified claim: “when must receipts be uploaded”.")


ELIDED_FIRST = "Employees are entitled to 16 weeks of paid parental leave"
ELIDED_SECOND = "Receipts must be uploaded to the expense portal within 45 days"


@pytest.fixture
def elided_site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    """A model that shortens its quote with an ellipsis."""
    text = (
        "Employees get 16 weeks of paid parental leave, and receipts are uploaded within 45 days."
    )
    quote = f"{ELIDED_FIRST} … {ELIDED_SECOND}"
    yield from _policy_site(browser, tmp_path, text, quote, turns=1)


def test_each_part_of_an_elided_quote_is_highlighted_and_the_gap_is_not(
    elided_site: Site,
) -> None:
    from playwright.sync_api import expect

    site = elided_site
    site.sign_in()
    site.ask("How long is parental leave and when are receipts due?")
    page = site.page
    expect(page.locator("#answer .cards blockquote")).to_contain_text(
        f"{ELIDED_FIRST} … {ELIDED_SECOND}"
    )
    page.locator("#answer .claims .claim .chip").first.click()
    current = page.locator("#panel-text mark.current")
    expect(current).to_have_count(2)
    expect(current.nth(0)).to_have_text(ELIDED_FIRST)
    expect(current.nth(1)).to_have_text(ELIDED_SECOND)
    assert page.locator("#panel-text").inner_text() == LEAVE_AND_RECEIPTS
    marked = " ".join(page.locator("#panel-text mark").all_inner_texts())
    assert "unless local law provides more" not in marked  # the elided words are not marked


TRAVEL_PAGES = [
    [
        "Travel policy",
        "",
        "This policy covers business travel by employees of Northwind Traders.",
        "Travel is booked through the company portal at least 14 days ahead.",
        "Employees may book economy class for flights under six hours; longer",
        "flights may be booked in premium economy with a manager's approval.",
        "Rail is preferred for journeys under four hours where a route exists.",
        "",
        "Hotels",
        "Hotel stays are capped at 180 EUR per night in tier 1 cities and",
    ],
    [
        "140 EUR per night elsewhere. Receipts must be uploaded within",
        "45 days of the purchase, and a manager approves each claim.",
    ],
]


@pytest.fixture
def pdf_site(browser: Any, tmp_path: Path) -> Iterator[Site]:
    """A PDF ingested from a file, its original kept, and a model that cites the hotel cap,
    which runs over the page break."""
    from kits.pdfkit import make_pdf

    path = tmp_path / "travel.pdf"
    path.write_bytes(make_pdf(TRAVEL_PAGES, title="Travel policy"))
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        loaded = load_file(path, "travel.pdf")
        store.ingest("travel", loaded, chunk_document(loaded))
        secret = store.create_key(name="browser test")[1]
    quote = (
        "Hotel stays are capped at 180 EUR per night in tier 1 cities and 140 EUR per night "
        "elsewhere."
    )
    claim = {
        "text": "Hotel stays are capped at 180 EUR a night in tier 1 cities and 140 EUR elsewhere.",
        "citations": [{"source": "S1", "quote": quote}],
    }
    yield from _scripted_site(
        browser, url, secret, tmp_path, [json.dumps({"answerable": True, "claims": [claim]})]
    )


def test_a_pdf_citation_opens_its_pages_with_the_quote_on_them_beside_the_answer(
    pdf_site: Site,
) -> None:
    from playwright.sync_api import expect

    site = pdf_site
    site.sign_in()
    site.ask("What is the hotel cap?")
    page = site.page
    claim = page.locator("#answer .claims .claim").first
    claim.locator(".chip").first.click()
    images = page.locator("#panel-pages img.page")
    expect(images).to_have_count(2)  # the quote runs over the page break: both pages
    for n, number in enumerate((1, 2)):
        image = images.nth(n)
        expect(image).to_have_attribute("data-page", str(number))
        page.wait_for_function(
            "(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle()
        )
        boxes = json.loads(image.get_attribute("data-boxes") or "[]")
        assert boxes and all(0 < b[0] < b[2] < 612 and 0 < b[1] < b[3] < 792 for b in boxes)
    first_boxes = json.loads(images.nth(0).get_attribute("data-boxes") or "[]")
    assert len(first_boxes) == 1 and 580 < first_boxes[0][1] < 620  # the tenth line from the top
    expect(page.locator("#panel-text mark.current")).to_be_visible()
    # the panel opens beside the answer, never over it (a 1280-pixel window)
    answer_box, panel_box = claim.bounding_box(), page.locator("#panel").bounding_box()
    assert answer_box is not None and panel_box is not None
    assert answer_box["x"] + answer_box["width"] <= panel_box["x"]
    site.shot("pdf-page.png")


def test_a_hostile_html_original_opens_inert_in_the_browser(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from tests.ingest.test_originals import HOSTILE_PAGE

    path = tmp_path / "notes.html"
    path.write_bytes(HOSTILE_PAGE)
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        loaded = load_file(path, "notes.html")
        store.ingest("web", loaded, chunk_document(loaded))
        secret = store.create_key(name="browser test")[1]
    quote = "the vendor portal migration finishes in week 12"
    claim = {
        "text": "The vendor portal migration finishes in week 12.",
        "citations": [{"source": "S1", "quote": quote}],
    }
    provider = ScriptedProvider([json.dumps({"answerable": True, "claims": [claim]})])
    app = create_app(ServerConfig(store_url=url, provider=lambda: provider))
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    with live_server(app) as base:
        import httpx

        answer = httpx.post(
            f"{base}/v1/ask",
            json={"question": "When does the migration finish?"},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=60,
        ).json()
        assert answer["status"] == "grounded", answer
        page.set_extra_http_headers({"Authorization": f"Bearer {secret}"})
        trace = answer["trace_id"]
        for route in ("original", "document"):
            page.goto(f"{base}/v1/traces/{trace}/sources/S1/{route}")
            page.wait_for_timeout(300)
            assert page.evaluate("window.__pwned") is None  # nothing of it ran
        expect(page.locator("mark#quote")).to_be_visible()
        marked = "".join(page.locator("mark").all_inner_texts())
        assert marked.lower() == quote  # over the original's own <b>: three marks, one quote
    context.close()


@pytest.mark.parametrize("kind", ["html", "md"])
def test_a_chip_on_an_html_or_markdown_source_shows_the_whole_document_rendered_and_inert(
    browser: Any, tmp_path: Path, kind: str
) -> None:
    from playwright.sync_api import expect

    from tests.ingest.test_originals import GUIDE, HOSTILE_PAGE

    path = tmp_path / f"notes.{kind}"
    path.write_bytes(HOSTILE_PAGE if kind == "html" else GUIDE.encode())
    quote = (
        "the vendor portal migration finishes in week 12"
        if kind == "html"
        else "Receipts must be uploaded within 45 days."
    )
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        loaded = load_file(path, path.name)
        store.ingest("web", loaded, chunk_document(loaded))
        secret = store.create_key(name="browser test")[1]
    claim = {
        "text": quote[0].upper() + quote[1:].rstrip(".") + ".",
        "citations": [{"source": "S1", "quote": quote}],
    }
    outputs = [json.dumps({"answerable": True, "claims": [claim]})]
    for site in _scripted_site(browser, url, secret, tmp_path, outputs):
        site.sign_in()
        site.ask(
            "When does the vendor portal migration finish?"
            if kind == "html"
            else "How soon must receipts be uploaded?"
        )
        page = site.page
        page.locator("#answer .claims .claim .chip").first.click()
        frame = page.frame_locator("#panel-pages iframe.document")
        expect(frame.locator("mark#quote")).to_be_visible()  # scrolled to, inside its frame
        marked = "".join(frame.locator("mark").all_inner_texts())
        assert marked.lower() == quote.lower()
        heading = "Release notes" if kind == "html" else "Travel guide"
        expect(frame.locator("h1")).to_have_text(heading)  # rendered, not the raw markup
        inner = page.frames[-1]
        assert inner.evaluate("window.__pwned") is None  # nothing of the original ran
        assert inner.locator("script, img, iframe, a").count() == 0
        assert page.locator("#panel-pages iframe.document").get_attribute("sandbox") == (
            "allow-same-origin"  # no allow-scripts
        )
        if kind == "md":
            site.shot("markdown-document.png")


CONTOSO = Path(__file__).resolve().parents[3] / "shared" / "data" / "contoso_hr_benefits" / "pdfs"
NORTHWIND_QUOTE = (
    "This limit applies to certain covered services and includes deductibles, coinsurance, and "
    "copayments."
)


@pytest.mark.skipif(not CONTOSO.is_dir(), reason="shared Contoso PDFs are not available")
def test_a_chip_on_a_contoso_answer_shows_its_page_with_the_quote_on_the_words(
    browser: Any, tmp_path: Path
) -> None:
    import pypdfium2
    from playwright.sync_api import expect

    pdf = CONTOSO / "Northwind_Standard_Benefits_Details.pdf"
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    with open_store(url) as store:
        loaded = load_file(pdf, pdf.name)
        store.ingest("contoso", loaded, chunk_document(loaded))
        secret = store.create_key(name="browser test")[1]
    claim = {
        "text": "The out-of-pocket limit includes deductibles, coinsurance and copayments.",
        "citations": [{"source": "S1", "quote": NORTHWIND_QUOTE}],
    }
    outputs = [json.dumps({"answerable": True, "claims": [claim]})] * 2
    sites = _scripted_site(browser, url, secret, tmp_path, outputs)
    site = next(sites)
    try:
        site.sign_in()
        site.ask("What does the out-of-pocket maximum include?")
        page = site.page
        expect(page.locator("#answer .status")).to_contain_text("status grounded")
        page.locator("#answer .claims .chip").first.click()
        image = page.locator("#panel-pages img.page").first
        expect(image).to_have_attribute("data-page", "14")
        page.wait_for_function(
            "(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle()
        )
        boxes = json.loads(image.get_attribute("data-boxes") or "[]")
        textpage = pypdfium2.PdfDocument(pdf.read_bytes())[13].get_textpage()
        raw = [
            pypdfium2.raw.FPDFText_GetUnicode(textpage.raw, i)
            for i in range(textpage.count_chars())
        ]
        text = "".join(chr(c) for c in raw)

        def inside(i: int) -> bool:
            b = textpage.get_charbox(i)
            return any(
                r[0] <= b[0] and b[2] <= r[2] and r[1] <= b[1] and b[3] <= r[3] for r in boxes
            )

        start = text.index("This limit applies")
        assert inside(start) and inside(text.index("copayments.", start) + 10)
        assert not inside(text.index("large medical bills"))  # the sentence before stays bare
    finally:
        sites.close()
