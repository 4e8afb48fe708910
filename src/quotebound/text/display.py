"""Text shown to a person on a terminal: control characters neutralised.

Stored and caller-supplied text (a question, a source, a title, a file name) may hold ESC, BEL,
a carriage return or a bidirectional override; printed raw, it can retitle a terminal, rewrite
the line before it or reorder what a reader sees. Human-readable output passes through
``terminal_safe``; JSON output stays exact (``json.dumps`` escapes control characters itself).
"""

from __future__ import annotations

import re

__all__ = ["shown", "terminal_safe"]

# C0 controls but tab and newline (the layout's own), DEL and C1 controls, and the invisible
# bidirectional marks, embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but tab and newline written as a visible escape
    (ESC is ``\\x1b``, a right-to-left override ``\\u202e``); anything else unchanged."""
    return _UNSAFE.sub(_escape, text)


def shown(text: str, limit: int = 60) -> str:
    """``text`` as a message quotes it: whitespace collapsed, cut at ``limit`` characters with
    an ellipsis, in ``repr`` quotes ("claim 2 ('16 weeks') is a fragment")."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
