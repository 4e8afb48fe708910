"""The words of a source under its inline markup: what a reader sees where a renderer shows it.

A source ingested from Markdown is sent as written (``**16 weeks**``, ``[the policy](url)``),
and a model that quotes what it reads often leaves the markup out. ``markup_free(text)`` is
the text with inline Markdown markup taken out, and for each character kept its offset in the
original, so a quote found there still has its span in the text as sent:

- emphasis: runs of ``*`` or ``_`` at a word's edge (``**bold**``, ``_it_``); inside a word
  (``snake_case``, ``2*3``) they stay;
- struck-through text, ``~~old~~``, with what it strikes: a reader sees it deleted, so it is
  not the source's word (a single ``~``, "about", stays);
- code spans: the backticks (the code stays);
- links and images: ``[text](url)`` and ``![alt](url)`` keep ``text``/``alt``; ``<https://..>``
  autolinks keep the address.

Nothing else changes: a word, digit or other punctuation is never dropped or added, so the
verifier only ever reads this as a second view of the same words, after the quote as written
was not found. Linear in the text's length.
"""

from __future__ import annotations

import re

# A link or image: "[" text "](" url ")" (text without brackets, url without spaces or ")").
_LINK = re.compile(
    r"!?\[([^\[\]\n]{1,500})\]\((?:[^()\s]|\([^()\s]*\)){0,2000}(?:\s+\"[^\"\n]*\")?\)"
)
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^<>\s]{1,2000})>")
_EMPHASIS = re.compile(r"[*_]+")
_STRUCK = re.compile(r"~~[^~\n]{1,500}~~")
_BACKTICKS = re.compile(r"`+")
_HINTS = ("*", "_", "~~", "`", "](", "<http", "<mailto")


def has_markup(text: str) -> bool:
    """Whether ``text`` may hold inline markup that ``markup_free`` would take out."""
    return any(h in text for h in _HINTS)


# What each character of inline markup is (``markup_kinds``): 0 a word's character, kept.
HIDDEN, STRUCK, TICK, EMPHASIS = 1, 2, 3, 4


def markup_kinds(text: str) -> bytearray | None:
    """For each character of ``text``, what inline markup it is: 0 (kept), ``HIDDEN`` (a
    link's brackets and address, an autolink's angle brackets), ``STRUCK`` (all of
    ``~~old~~``), ``TICK`` (a code span's backticks), ``EMPHASIS`` (a run of ``*``/``_`` at a
    word's edge); None when there is none. ``markup_free`` drops every marked character; a
    renderer shows each kind as it reads."""
    if not has_markup(text):
        return None
    kind = bytearray(len(text))

    def put(i: int, j: int, k: int) -> None:
        for n in range(i, j):
            if not kind[n]:
                kind[n] = k

    for m in _STRUCK.finditer(text):
        kind[m.start() : m.end()] = bytes([STRUCK]) * (m.end() - m.start())
    for m in _LINK.finditer(text):
        inner_start, inner_end = m.span(1)
        put(m.start(), inner_start, HIDDEN)
        put(inner_end, m.end(), HIDDEN)
    for m in _AUTOLINK.finditer(text):
        put(m.start(), m.start() + 1, HIDDEN)
        put(m.end() - 1, m.end(), HIDDEN)
    for m in _BACKTICKS.finditer(text):
        put(m.start(), m.end(), TICK)
    for m in _EMPHASIS.finditer(text):
        i, j = m.span()
        before = text[i - 1] if i > 0 else " "
        after = text[j] if j < len(text) else " "
        if before.isalnum() and after.isalnum():
            continue  # snake_case, 2*3: part of the word
        if before.isspace() and after.isspace():
            continue  # a bullet or an operator between spaces
        put(i, j, EMPHASIS)
    return kind if any(kind) else None


def markup_free(text: str) -> tuple[str, list[int]] | None:
    """``text`` without its inline markup, and the original offset of each character kept;
    None when there is none to take out."""
    kind = markup_kinds(text)
    if kind is None:
        return None
    keep = [k for k in range(len(text)) if not kind[k]]
    return "".join(text[k] for k in keep), keep


def original_span(keep: list[int], span: tuple[int, int]) -> tuple[int, int]:
    """The original ``[start, end)`` of ``span`` in the markup-free text."""
    return keep[span[0]], keep[span[1] - 1] + 1
