"""Follow-ups in a conversation: the question a conversation asks now, read with the one before
it when it leans on it. One rule for every face that takes a conversation (Chat Completions,
the Messages API); measured on 40 two-turn conversations (``benchmarks.quality.followups``,
docs/chat-ui.md#follow-ups)."""

from __future__ import annotations

# A follow-up that leans on the question before it: "And for contractors?", "What about
# Germany?", "Also in 2025?" (it opens so), "who voices him?", "Where is it filmed?" (a word of
# it points back at what was asked: ``_POINTING``), or one of at most this many words.
_LEANING = ("and ", "what about ", "how about ", "also ", "what if ", "but ", "or ")
_POINTING = frozenset(("he", "she", "it", "they", "him", "her", "them", "his", "its", "their"))
FOLLOW_UP_WORDS = 4


def asked(questions: list[str]) -> str:
    """The question a conversation asks now: its last user message, read with the one before
    it when it leans on it (``_LEANING``, a word of ``_POINTING``, or ``FOLLOW_UP_WORDS`` words
    at most): "How many weeks of paid parental leave do employees get? And for contractors?".
    Retrieval and the answer check read both; the trace records the question as asked.
    Measured on 40 two-turn conversations (``benchmarks.quality.followups``)."""
    last = questions[-1]
    if len(questions) < 2:
        return last
    words = last.casefold().split()
    leans = (
        last.casefold().startswith(_LEANING)
        or len(words) <= FOLLOW_UP_WORDS
        or any(w.strip(_EDGES) in _POINTING for w in words)
    )
    return f"{questions[-2]} {last}" if leans else last


_EDGES = "?!.,;:'\"()"
