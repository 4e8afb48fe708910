"""Cleaning: extracted text -> canonical text, the one form every loader's text is in.

Invariants:
- ``clean_text`` is idempotent, so ``clean_text(doc.text) == doc.text`` for every loaded
  document: ``\\n`` newlines only, no trailing whitespace on a line, no C0 control character
  but ``\\n`` and ``\\t``, no ligature characters, no line break right after a hyphen between
  two lowercase letters (the word or the line is joined), never two blank lines in a row, no
  leading or trailing blank line. What the verifier's normaliser folds (entities, case,
  dashes, quotes, whitespace runs, invisible format characters) is left alone here.
- ``prepare_text`` and ``finish_text`` are ``clean_text``'s two halves, for a loader that
  cleans parts of one document (a PDF's pages) with the whole document's ``HyphenVotes``.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

__all__ = [
    "SPACE_RUN",
    "HyphenVotes",
    "clean_text",
    "collapse_spaces",
    "finish_text",
    "prepare_text",
]

_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
# C0 controls are dropped, except tab and newline; vertical tab and form feed are line (page)
# breaks, so they become newlines rather than gluing the words on either side together.
_CLEAN_TABLE = str.maketrans(
    {
        **{chr(c): None for c in range(0x20) if c not in (0x09, 0x0A)},
        "\x0b": "\n",
        "\x0c": "\n",
        **_LIGATURES,
    }
)
_TRAILING_SPACE = re.compile(r"[^\S\n]+(?=\n|\Z)")
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n[^\S\n]*(?=[^\W\d_])")
_BLANK_LINES = re.compile(r"\n{3,}")
_WORD = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")


def clean_text(text: str) -> str:
    """Remove layout artefacts from extracted text; see the module docstring for the result.

    A hyphen at a line break between two lowercase letters is hyphenation: ``"exam-\\nple"``
    becomes ``"example"``. The text itself can overrule that: when it writes the compound with
    a hyphen on one line more often than as one word, the hyphen is real and only the line
    break goes (``"in-\\nnetwork"`` -> ``"in-network"`` beside another ``"in-network"``; word
    processors break lines at hyphens and never split words). Other hyphens stay as they are:
    ``"well-known"``, ``"Anti-\\nFraud"``, ``"job-\\n17"``.
    """
    prepared = prepare_text(text)
    return finish_text(prepared, HyphenVotes(prepared))


def prepare_text(text: str) -> str:
    """Newlines, control characters, ligatures and trailing whitespace."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_CLEAN_TABLE)
    return _TRAILING_SPACE.sub("", text)


def finish_text(prepared: str, votes: HyphenVotes) -> str:
    """Line-break hyphens (as ``votes`` decide), blank lines, leading and trailing newlines."""
    text = _LINE_HYPHEN.sub(votes.replace, prepared)
    return _BLANK_LINES.sub("\n\n", text).strip("\n")


class HyphenVotes:
    """Decides line-break hyphens from a text's own spelling, counted once and only if needed."""

    def __init__(self, vocabulary: str) -> None:
        self._vocabulary = vocabulary
        self._counts: tuple[Counter[tuple[str, str]], Counter[str]] | None = None

    def replace(self, match: re.Match[str]) -> str:
        text, start, end = match.string, match.start(), match.end()
        if not (text[start - 1].islower() and text[end].islower()):
            return match.group()
        left = start - 1
        while left > 0 and text[left - 1].isalpha():
            left -= 1
        right = end
        while right < len(text) and text[right].isalpha():
            right += 1
        return "-" if self._hyphen_is_real(text[left:start], text[end:right]) else ""

    def _hyphen_is_real(self, left: str, right: str) -> bool:
        if self._counts is None:
            pairs: Counter[tuple[str, str]] = Counter()
            for compound in _COMPOUND.findall(self._vocabulary):
                parts = compound.lower().split("-")
                pairs.update(itertools.pairwise(parts))
            words = Counter(w.lower() for w in _WORD.findall(self._vocabulary))
            self._counts = (pairs, words)
        pairs, words = self._counts
        left, right = left.lower(), right.lower()
        return pairs[left, right] > words[left + right]


# A run of HTML's whitespace (space, tab, newline, carriage return, form feed): what a title or
# heading read from markup or metadata collapses to one space.
SPACE_RUN = re.compile(r"[ \t\n\r\f]+")


def collapse_spaces(text: str) -> str:
    """``text`` on one line: each ``SPACE_RUN`` one space, none at either end."""
    return SPACE_RUN.sub(" ", text).strip()
