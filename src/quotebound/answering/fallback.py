"""The fallback ``ask`` asks when its answer would be an abstention (``AskOptions.fallback``):
the extractive provider, answering with the sources' own sentences, those the answer check
scores as answering (``extractive``) or those covering the question best (``covering``)."""

from __future__ import annotations

from ..choices import FALLBACKS
from ..providers.extractive import ExtractiveProvider
from .check import AnswerChecker, BothAnswerCheck


def fallback_for(kind: str, checker: object | None) -> ExtractiveProvider | None:
    """The fallback (``AskOptions.fallback``) that ``kind`` (one of ``FALLBACKS``) names beside
    the answer check ``checker``: for ``extractive``, the sentences a fast ``AnswerChecker``
    (alone or in a ``BothAnswerCheck``) scores as answering (``extractor()``), those covering
    the question best beside any other check; for ``covering``, those covering the question
    best; None for ``off`` and without a check (unchecked, the extract would overrule a right
    abstention)."""
    if kind not in FALLBACKS:
        raise ValueError(f"unknown fallback {kind!r}: {', '.join(FALLBACKS)}")
    if kind == "off" or checker is None:
        return None
    if kind == "extractive" and isinstance(checker, AnswerChecker | BothAnswerCheck):
        return checker.extractor()
    return ExtractiveProvider()
