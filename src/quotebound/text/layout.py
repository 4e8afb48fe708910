"""An answer's layout: which of its text is structure (headings, lead-ins, list marks) and
which is statements, read the way a Markdown renderer shows it.

Vendors' answers are Markdown: a heading (``## Expenses``, a line in emphasis such as
``**Design**``), a lead-in that ends with a colon ("Here are the key aspects:", "2.
Reinforcement Learning Phase:"), list items, paragraphs. ``layout(text)`` cuts the text into

- **blocks**: paragraphs and list items (a blank line, a list item, a heading line or the
  line after one ending with a colon starts a new one; a wrapped line continues its block),
  each without its list mark;
- **units**: the sentences of each block (the one splitter), each a ``statement``, or
  ``structure`` when it is a heading line or a sentence ending with a colon (a lead-in).

A structure unit has a ``rank``: a Markdown heading its ``#`` count (1-6), a line in emphasis 7,
a lead-in 8 (9 inside a list item); a lead-in that opens the whole answer ranks 0. What a
structure unit introduces (its scope) runs to the next structure unit of the same or a lower
rank. Offsets are the text's own: nothing is copied or rewritten. Linear in the text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

from .sentences import sentence_spans, trimmed

__all__ = ["Layout", "Unit", "layout"]

# A list item's mark: "- ", "* ", "+ ", "• ", "1. ", "2) ", "(a) ", "a. "
_LIST_MARK = re.compile(
    r"[ \t]*(?:[-*+\u2022\u00b7\u25aa\u25e6\u2023]|\(?(?:\d{1,3}|[a-z])[.)])[ \t]+"
)
_MARKDOWN_HEADING = re.compile(r"[ \t]{0,3}(#{1,6})[ \t]+")
# A line wholly in emphasis: "**Design**", "__Expenses:__", "**2. Phase one**"
_EMPHASIS_LINE = re.compile(r"[ \t]*(\*\*|__)(?!\s)(.+?)(?<!\s)\1[ \t]*:?[ \t]*$")
_CLOSING = " \t\"'\u201d\u2019)*_"

Kind = Literal["statement", "structure"]


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    kind: Kind
    rank: int  # for structure: lower ranks scope over higher ones; 99 for a statement
    block: int  # the index of its block in ``Layout.blocks``


@dataclass(frozen=True, slots=True)
class Layout:
    blocks: tuple[tuple[int, int], ...]  # paragraphs and list items, list marks left out
    units: tuple[Unit, ...]

    def block_at(self, at: int) -> int | None:
        """The index of the block holding offset ``at`` (or ending just before it), or None."""
        found = bisect_right(self.blocks, (at, 1 << 62)) - 1
        return found if found >= 0 else None

    def scope(self, index: int) -> range:
        """The units a structure unit introduces: those after it up to the next structure
        unit of the same or a lower rank."""
        rank = self.units[index].rank
        stop = index + 1
        while stop < len(self.units):
            other = self.units[stop]
            if other.kind == "structure" and other.rank <= rank:
                break
            stop += 1
        return range(index + 1, stop)


def layout(text: str) -> Layout:
    """The blocks and units of ``text`` (module docstring)."""
    blocks: list[tuple[int, int, int]] = []  # start, end, rank of a heading line (0: none)
    in_list: list[bool] = []
    open_block = False
    position = 0
    for line in text.splitlines(keepends=True):
        start, end = position, position + len(line.rstrip("\r\n"))
        position += len(line)
        if not line.strip():
            open_block = False
            continue
        heading = _MARKDOWN_HEADING.match(text, start, end)
        emphasis = _EMPHASIS_LINE.match(text, start, end) if heading is None else None
        if heading is not None or emphasis is not None:
            rank = len(heading.group(1)) if heading is not None else 7
            at = heading.end() if heading is not None else start
            blocks.append((at, end, rank))
            in_list.append(False)
            open_block = False
            continue
        mark = _LIST_MARK.match(text, start, end)
        if mark is not None or not open_block:
            blocks.append((mark.end() if mark is not None else start, end, 0))
            in_list.append(mark is not None)
        else:
            blocks[-1] = (blocks[-1][0], end, 0)
        # a line ending with a colon is a lead-in: what follows it starts a block of its own
        open_block = not text[start:end].rstrip(_CLOSING).endswith(":")
    units: list[Unit] = []
    for i, (start, end, heading_rank) in enumerate(blocks):
        if heading_rank:
            units.extend(
                Unit(a, b, "structure", heading_rank, i) for a, b in trimmed(text, start, end)
            )
            continue
        for a, b in sentence_spans(text, start, end):
            if text[a:b].rstrip(_CLOSING).endswith(":"):
                rank = 9 if in_list[i] else (0 if not units else 8)
                units.append(Unit(a, b, "structure", rank, i))
            else:
                units.append(Unit(a, b, "statement", 99, i))
    return Layout(tuple((a, b) for a, b, _ in blocks), tuple(units))
