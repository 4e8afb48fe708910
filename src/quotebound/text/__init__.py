"""The text layer: how quotebound reads text, under one versioned policy.

It sits at the bottom of the house and imports nothing else of quotebound's (an import
contract checks it): every other layer compares, splits and counts text through it.

- ``normalize`` / ``NormalizedText``: the normalisation policy (``NORMALIZATION_VERSION``),
  the same on both sides of every comparison, with offset maps back to the original.
- ``sentences``: the one sentence splitter (chunker, parser, contract, extractive provider).
- ``words``: function words, the word-boundary test, how a quote's words are counted.
- ``tokens``: numbers and identifiers, the facts a claim's evidence must hold.
- ``quoteparts``: quotes in parts (elisions, editorial brackets), placed in order in one text.
- ``markup``: a text's words under its inline Markdown markup, with offsets to the original.
- ``_fast``: the verifier's exact shortcuts and the per-working-set cache (private).
"""

from __future__ import annotations

from .normalize import NORMALIZATION_VERSION, NormalizedText, normalize, quote_words, scrub
from .sentences import sentence_spans
from .words import STOPWORDS, contains_words, find_words, on_word_bounds

__all__ = [
    "NORMALIZATION_VERSION",
    "STOPWORDS",
    "NormalizedText",
    "contains_words",
    "find_words",
    "normalize",
    "on_word_bounds",
    "quote_words",
    "scrub",
    "sentence_spans",
]
