"""Citation cards: verified citations -> things a reader can click.

Invariants:
- Cards are built only from the WorkingSet and the verdict: the quote shown is the verified
  span of the text that was sent, and every URL comes from the source's stored metadata,
  never from the model.
- One card per document (several chunks of one document cited are one card, with a quote
  each), numbered in order of first citation, so an answer shows ``[1]``, ``[2]``.
- Only http(s) URLs become links (a stored ``javascript:`` URL is dropped, never shown).
- Deep links: a PDF opens at its page (``#page=N``); any other page scrolls to the quote with a
  text fragment (``#:~:text=start,end``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote as _percent
from urllib.parse import urlsplit

from .sources import Source, WorkingSet
from .verdict import Claim, Verdict


@dataclass(frozen=True, slots=True)
class CardQuote:
    source: str  # the id it was sent under (S2)
    text: str  # the verified quote, exactly as it stands in the sent text (parts joined by …)
    span: tuple[int, int]
    page: int | None = None
    link: str | None = None
    spans: tuple[tuple[int, int], ...] | None = None  # the parts of an elided quote


@dataclass(frozen=True, slots=True)
class Card:
    number: int
    document: str  # the document key, or the source id when the source has no key
    label: str
    url: str | None
    updated: str | None
    quotes: tuple[CardQuote, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "document": self.document,
            "label": self.label,
            "url": self.url,
            "updated": self.updated,
            "quotes": [
                {
                    "source": q.source,
                    "text": q.text,
                    "span": list(q.span),
                    "spans": None if q.spans is None else [list(x) for x in q.spans],
                    "page": q.page,
                    "link": q.link,
                }
                for q in self.quotes
            ],
        }


@dataclass(frozen=True, slots=True)
class ClaimCite:
    """One valid citation of a kept claim: its card, and the sent source and span it quotes
    (so a reader opens the quote behind *this* claim, not just the card's first one)."""

    card: int
    source: str
    span: tuple[int, int] | None
    spans: tuple[tuple[int, int], ...] | None = None  # the parts of an elided quote
    # where in the claim's text the provider's cited piece stands (a vendor's citation of a
    # piece of the sentence: ``native.piece``), None when it cites the whole claim
    piece: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "card": self.card,
            "source": self.source,
            "span": list(self.span) if self.span else None,
            "spans": None if self.spans is None else [list(x) for x in self.spans],
            "piece": list(self.piece) if self.piece else None,
        }


_CHUNK_SUFFIX = re.compile(r"#c\d+$")


def document_of(src: Source) -> str:
    """The document a source belongs to: its key without the ``#c<n>`` chunk suffix (a ``#``
    elsewhere in a document name is part of the name)."""
    return _CHUNK_SUFFIX.sub("", src.key) if src.key else src.id


def deep_link(src: Source, quote: str | None = None) -> str | None:
    """The URL that opens ``src`` at ``quote`` (at its page, or the plain URL, without one),
    or None when the source has no http(s) URL."""
    base = _base_url(src)
    if base is None:
        return None
    if base.lower().endswith(".pdf") or src.page is not None:
        return f"{base}#page={src.page}" if src.page is not None else base
    return f"{base}#:~:text={text_fragment(quote)}" if quote else base


def text_fragment(quote: str) -> str:
    """A text-fragment directive value: the whole quote, or its first and last words."""
    words = quote.split()
    long = len(words) > 8
    parts = [" ".join(words[:4]), " ".join(words[-4:])] if long else [" ".join(words)]
    # '-', '&' and ',' are syntax inside a text directive: they must be percent-encoded too
    return ",".join(_percent(p, safe="").replace("-", "%2D") for p in parts)


def build_cards(verdict: Verdict, ws: WorkingSet) -> tuple[list[Card], list[tuple[ClaimCite, ...]]]:
    """Cards for the kept claims' valid citations, and each kept claim's citations (card
    number, source id, span), in citation order."""
    numbers: dict[str, int] = {}
    quotes: dict[str, list[CardQuote]] = {}
    firsts: dict[str, Source] = {}
    titles: dict[str, set[str | None]] = {}  # the titles of each document's cited sources
    per_claim: list[tuple[ClaimCite, ...]] = []
    for claim in verdict.claims:
        if not claim.kept:
            continue
        mine: list[ClaimCite] = []
        for src, quote, piece in _valid(claim, ws):
            doc = document_of(src)
            if doc not in numbers:
                numbers[doc] = len(numbers) + 1
                firsts[doc] = src
                quotes[doc] = []
                titles[doc] = set()
            titles[doc].add(src.title)
            if quote is not None and all(
                q.span != quote.span or q.source != quote.source for q in quotes[doc]
            ):
                quotes[doc].append(quote)
            mine.append(
                ClaimCite(
                    numbers[doc],
                    src.id,
                    quote.span if quote else None,
                    quote.spans if quote else None,
                    piece,
                )
            )
        per_claim.append(tuple(mine))
    cards = [
        Card(
            number=numbers[doc],
            document=doc,
            label=_label(firsts[doc], titles[doc]),
            url=_base_url(firsts[doc]),
            updated=firsts[doc].updated,
            quotes=tuple(quotes[doc]),
        )
        for doc in numbers
    ]
    return cards, per_claim


_Valid = tuple[Source, CardQuote | None, tuple[int, int] | None]


def _valid(claim: Claim, ws: WorkingSet) -> list[_Valid]:
    out: list[_Valid] = []
    for cit in claim.citations:
        src = ws.get(cit.source) if cit.valid and cit.source else None
        if src is None:
            continue
        quote = None
        if cit.span is not None:
            text = " … ".join(src.text[a:b] for a, b in cit.parts)
            link = deep_link(src, src.text[cit.span[0] : cit.span[1]])  # from first to last part
            quote = CardQuote(src.id, text, cit.span, src.page, link, cit.spans)
        out.append((src, quote, _piece(claim.text, cit.native)))
    return out


def _piece(claim: str, native: dict[str, Any] | None) -> tuple[int, int] | None:
    """Where the provider's cited piece stands in the claim's text, when it is less of it."""
    piece = native.get("piece") if native else None
    if not isinstance(piece, str) or not piece or piece == claim:
        return None
    at = claim.find(piece)
    return (at, at + len(piece)) if at >= 0 else None


def safe_url(url: str | None) -> str | None:
    """``url`` without its fragment when it is an http(s) URL; None for anything else
    (``javascript:``, ``data:``, relative paths): a link a reader clicks must not run code."""
    if not url:
        return None
    base = url.split("#", 1)[0]
    parts = urlsplit(base)
    return base if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def _base_url(src: Source) -> str | None:
    return safe_url(src.url)


def _label(src: Source, titles: set[str | None]) -> str:
    """The card's title: its sources' title when they share one, else the document's name (a
    PDF's sources are titled by their sections: one card quoting two sections is neither)."""
    shared = src.title if len(titles) == 1 else None
    return shared or document_of(src).split(":", 1)[-1]
