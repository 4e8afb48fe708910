"""A verified quote as it is looked for in an original: the quote, and the text of its source
just before it, which tells two occurrences of one quote apart. Found the same way in a PDF's
page text and in an HTML original's text: in the normalised text, on word bounds, right after
the last few words before it where the two stand together, else at its first occurrence."""

from __future__ import annotations

from ..store.base import TraceRecord, TraceSource
from ..text.normalize import NormalizedText, normalize
from ..text.words import find_words
from ..traceview import spans_for

CONTEXT_WORDS = 6

Quote = tuple[str, str]  # the verified quote, and the text of its source just before it


def quotes_of(trace: TraceRecord, source: TraceSource) -> list[Quote]:
    """The verified quotes of a sent source in the served verdict, as they stand in its text,
    each with the text before it (which tells two occurrences of one quote apart)."""
    return [
        (source.text[a:b], source.text[max(0, a - 200) : a]) for a, b in spans_for(trace, source.id)
    ]


def context_of(before: str) -> str:
    """The last few words of the text before a quote, normalised (to tell two occurrences of
    one quote apart); empty when there is none."""
    words = normalize(before).split()
    return " ".join(words[-CONTEXT_WORDS:])


def locate_after(nt: NormalizedText, needle: str, context: str) -> tuple[int, int] | None:
    """The original span of ``needle`` in ``nt``: right after ``context`` where the two stand
    together (found in the normalised text, on word bounds), else its first occurrence."""
    if not needle:
        return None
    if context:
        for i in find_words(nt.text, f"{context} {needle}"):
            start = i + len(context) + 1
            span = nt.span(start, start + len(needle))
            if span is not None:
                return span
    return nt.locate(needle)
