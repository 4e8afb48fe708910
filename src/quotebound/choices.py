"""The parts ``ask`` and ``serve`` may run, and which they run by default: each closed
vocabulary written once, here, with its default. The CLI's choices, ``quotebound.defaults``'
signature, the server and the factories (``entailment.make_backend``,
``defaults.make_answer_check``, ...) read these; docs/cli.md's tables are compared with the
CLI's options by a test. Constants only: importing this loads nothing.

A default changed here changes ``quotebound ask``, ``quotebound serve`` and
``quotebound.defaults()`` together.
"""

from __future__ import annotations

from typing import Literal, get_args

# The support tier's backends (``entailment.make_backend``); ``ask --entailment`` adds "off".
Tier = Literal["fast", "heuristic", "judge", "cascade", "nli"]
BACKENDS: tuple[Tier, ...] = get_args(Tier)
DEFAULT_TIER: Tier = "fast"

# The answer check (``answering.check``): ``auto`` is ``both`` beside the packaged 1.5B, else
# ``fast``; ``on`` is ``judge``.
AnswerCheckChoice = Literal["auto", "fast", "judge", "both", "on", "off"]
ANSWER_CHECKS: tuple[AnswerCheckChoice, ...] = get_args(AnswerCheckChoice)
DEFAULT_ANSWER_CHECK: AnswerCheckChoice = "auto"

# The fallback asked when the answer would be an abstention (``answering.fallback``).
FallbackChoice = Literal["extractive", "covering", "off"]
FALLBACKS: tuple[FallbackChoice, ...] = get_args(FallbackChoice)
DEFAULT_FALLBACK: FallbackChoice = "extractive"

# Re-ranking the store's hits before packing (``answering.rerank``).
RerankChoice = Literal["dense", "off"]
RERANKS: tuple[RerankChoice, ...] = get_args(RerankChoice)
DEFAULT_RERANK: RerankChoice = "dense"
