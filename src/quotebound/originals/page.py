"""The standalone HTML page every original but a PDF is shown in, and the plainest of them: the
source's text as sent, escaped, its verified spans marked. Nothing on such a page runs or loads:
its Content-Security-Policy allows no source at all but its own inline style."""

from __future__ import annotations

import html

from ..store.base import TraceSource


def text_page(source: TraceSource, spans: list[list[int]], title: str | None = None) -> str:
    """A standalone HTML page of the source's text as sent, every character escaped, each
    verified span in a ``<mark>``, the first one scrolled to; no script, no outside resource."""
    text = source.text
    pieces: list[str] = []
    at = 0
    for n, (start, end) in enumerate(sorted(spans)):
        start, end = max(start, at), min(end, len(text))
        if start >= end:
            continue
        pieces.append(html.escape(text[at:start]))
        anchor = ' id="quote"' if n == 0 else ""
        pieces.append(f"<mark{anchor}>{html.escape(text[start:end])}</mark>")
        at = end
    pieces.append(html.escape(text[at:]))
    return standalone_page(
        html.escape(title or source.title or source.key or source.id), "".join(pieces)
    )


def standalone_page(name: str, body: str, prose: bool = False) -> str:
    """A standalone page (``name`` and ``body`` already escaped): no script, nothing loaded;
    text kept as it runs (``prose``: laid out by its own markup)."""
    wrap = "" if prose else "white-space:pre-wrap"
    heading = "" if prose else f"<h1>{name}</h1>"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>{name}</title><style>body{{font:16px/1.5 system-ui,sans-serif;max-width:46em;"
        f"margin:2em auto;padding:0 1em;{wrap}}}mark{{background:#ffd600}}</style>"
        f"</head><body>{heading}{body}</body></html>\n"
    )
