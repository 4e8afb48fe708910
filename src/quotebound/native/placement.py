"""Citations placed on an answer's sentences: the answer cut by the one splitter and its
Markdown layout, each sentence a claim carrying the citations whose spans overlap it (a link
closing a paragraph cites the paragraph), uncited glue left out. Every reader ends here."""

from __future__ import annotations

import re
from bisect import bisect_right

from ..text.layout import Layout, Unit, layout
from .base import NativeCitation, NativeClaim, bad

CONNECTIVE_WORDS = 6  # uncited text shorter than this, with no digit, is glue between claims
MAX_PLACEMENTS = 50_000  # citations placed on sentences, in all: past it, a response is hostile


def states_something(text: str) -> bool:
    """Whether uncited text is a statement (a claim the verifier must see) rather than the glue
    around cited ones: punctuation, or a connective such as "According to the policy," left
    over where a sentence ends (fewer than ``CONNECTIVE_WORDS`` words, no digit, not ending a
    sentence). A number is always a claim, and so is a sentence ("Aspirin cures cancer.")."""
    if any(ch.isdigit() for ch in text):
        return True
    words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
    if not words:
        return False
    return len(words) >= CONNECTIVE_WORDS or text.rstrip(" \"'\u201d\u2019)").endswith(
        (".", "!", "?")
    )


Placed = tuple[int, int, list[NativeCitation]]  # an answer span and the citations for it
_FACT = re.compile(r"[\d\"\u201c\u201d]")  # a digit or a quotation mark: a fact to check
_EDGE_MARKUP = " \t*_#:"
_MARKDOWN_LINK = re.compile(r"!?\[[^\[\]\n]*\]\([^()\s]*\)")


def answer_claims(
    text: str, placed: list[Placed], links: list[Placed] | None = None
) -> list[NativeClaim]:
    """The answer's statements as claims (``text.layout``: one a sentence, list marks and
    emphasis around it left out), each with the citations placed on it:

    - a span citation (``placed``) on each sentence its answer span overlaps; a point
      ``(p, p)`` (``file_citation.index``) on the sentence ending at or just before ``p``;
    - a link citation (``links``: OpenAI's ``url_citation`` over an inline link such as
      `` ([ft.com](https://...))``) on the sentences of the paragraph or list item it closes,
      back to the previous link in it or the paragraph's start; the link is not claim text,
      and the relevance rule reads the claim with that paragraph (``NativeClaim.context``).

    Structure is not a claim: a heading, a lead-in ending with a colon, a list of links,
    unless it states a fact (a digit or quoted words); then it is a claim with the citations
    of the statements it introduces (``Layout.scope``), checked like any other. A statement no
    citation covers is a claim with none, unless it is glue (``states_something``)."""
    masked = text
    if links:  # the same link given twice is one (its citations joined), masked once
        merged: dict[tuple[int, int], list[NativeCitation]] = {}
        for a, b, citations in links:
            merged.setdefault((a, b), []).extend(citations)
        links = [(a, b, cites) for (a, b), cites in merged.items()]
        chars = list(text)
        for a, b, _ in links:
            chars[a:b] = " " * (b - a)
        masked = "".join(chars)
    shape = layout(masked)
    regions = _link_regions(shape, links or [])
    for a, b, citations in placed:
        if a < b:
            for c in citations:  # the cited piece, what a card marks inside the claim
                c.native.setdefault("piece", " ".join(text[a:b].split()))
    units = shape.units
    starts = [u.start for u in units]
    on: list[list[NativeCitation]] = [[] for _ in units]
    said: list[list[tuple[int, int]]] = [[] for _ in units]
    placements = 0
    for a, b, citations, link in [*((*p, False) for p in placed), *((*r, True) for r in regions)]:
        for i in _units_at(units, starts, a, b):
            on[i].extend(citations)
            if link:
                said[i].append((a, b))
            placements += len(citations)
        if placements > MAX_PLACEMENTS:  # hostile: every citation over every sentence
            raise bad(
                f"the response places more than {MAX_PLACEMENTS:,} citations on its sentences: "
                "split the answer"
            )
    keys: dict[int, tuple[str, str | None, str | None, str]] = {}
    cited = [_unique(cites, keys) for cites in on]
    contexts = [" ".join(" ".join(masked[a:b] for a, b in s).split()) or None for s in said]
    claims: list[NativeClaim] = []
    for i, unit in enumerate(units):
        words = " ".join(masked[unit.start : unit.end].split())
        if not any(ch.isalnum() for ch in _MARKDOWN_LINK.sub("", words)):
            continue  # links alone (a list of sources) or punctuation: not a statement
        if unit.kind == "structure":
            words = words.strip(_EDGE_MARKUP)
            if _FACT.search(words) is not None:  # a fact in a heading is checked all the same
                below = [*cited[i], *(c for j in shape.scope(i) for c in cited[j])]
                claims.append(NativeClaim(words, _unique(below)))
        elif cited[i] or states_something(words):
            claims.append(NativeClaim(words, cited[i], contexts[i]))
    return claims


def _units_at(units: tuple[Unit, ...], starts: list[int], a: int, b: int) -> range:
    """The units an answer span ``[a, b)`` overlaps; for a point (``a == b``), the unit it
    ends, the last one starting at or before it. Found by bisection: linear work in all."""
    first = bisect_right(starts, a) - 1
    if a == b:
        return range(first, first + 1) if first >= 0 else range(0)
    if first < 0 or units[first].end <= a:
        first += 1
    last = first
    while last < len(units) and units[last].start < b:
        last += 1
    return range(first, last)


def _link_regions(shape: Layout, links: list[Placed]) -> list[Placed]:
    """What each link citation was given for: from the start of the block it closes (or the
    end of the link before it in that block) to the link."""
    regions: list[Placed] = []
    previous_end = -1
    for a, b, cites in sorted(links, key=lambda x: x[0]):
        block = shape.block_at(a)
        if block is not None:
            start = shape.blocks[block][0]
            if start < previous_end <= a:
                start = previous_end  # the link before it in the same block ends its claims
            regions.append((start, a, cites))
        previous_end = b
    return regions


_Key = tuple[str, str | None, str | None, str]


def _unique(
    cites: list[NativeCitation], keys: dict[int, _Key] | None = None
) -> list[NativeCitation]:
    """``cites`` with a citation equal to one before it (the same annotation given twice) left
    out, in linear time; ``keys`` keeps each citation's key from one call to the next."""
    keys = {} if keys is None else keys
    seen: set[_Key] = set()
    out: list[NativeCitation] = []
    for c in cites:
        key = keys.get(id(c))
        if key is None:
            key = keys[id(c)] = (c.ref, c.source_id, c.quote, repr(sorted(c.native.items())))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def in_answer(text: str, start: int, end: int, where: str) -> None:
    if not 0 <= start <= end <= len(text):
        raise bad(f"{where}: [{start}, {end}) is outside the answer ({len(text)} characters)")
