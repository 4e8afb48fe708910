"""Follow-ups in a conversation: the question a conversation asks now, read with the one before
it when it leans on it. One rule for every face that takes a conversation (Chat Completions,
the Messages API); measured on 40 two-turn conversations (``benchmarks.quality.followups``,
docs/chat-ui.md#follow-ups)."""

from __future__ import annotations

# A follow-up that leans on the question before it: "And for contractors?", "What about
# Germany?", "Also, in 2025?" (it opens so), "who voices him?", "Where is it filmed?" (a short
# one, ``POINTING_WORDS`` words at most, with a word pointing back at what was asked:
# ``_POINTING``, "it's" and "they're" too; a longer one with "it" is usually a question of its
# own: "Is it possible to carry leave over?"), or one of at most ``FOLLOW_UP_WORDS`` words.
_OPENING = frozenset(("and", "also", "but", "or"))
_OPENING_PAIRS = frozenset((("what", "about"), ("how", "about"), ("what", "if")))
_POINTING = frozenset(("he", "she", "it", "they", "him", "her", "them", "his", "its", "their"))
FOLLOW_UP_WORDS = 4
POINTING_WORDS = 7
_EDGES = "?!.,;:'\"()\u2018\u2019\u201c\u201d"


def leans(question: str) -> bool:
    """Whether ``question`` leans on the one asked before it (this module's rule)."""
    words = [w.strip(_EDGES) for w in question.casefold().split()]
    words = [w for w in words if w]
    if not words:
        return False
    if words[0] in _OPENING or tuple(words[:2]) in _OPENING_PAIRS:
        return True
    if len(words) <= FOLLOW_UP_WORDS:
        return True
    return len(words) <= POINTING_WORDS and any(
        w.replace("\u2019", "'").split("'")[0] in _POINTING for w in words
    )


def asked(questions: list[str]) -> str:
    """The question a conversation asks now: its last user message, read with the last one
    before it that said something when it ``leans`` on it: "How many weeks of paid parental
    leave do employees get? And for contractors?". Retrieval and the answer check read both;
    the trace records the question as asked. Measured on 40 two-turn conversations
    (``benchmarks.quality.followups``)."""
    last = questions[-1] if questions else ""
    earlier = [q.strip() for q in questions[:-1] if q.strip()]
    if not earlier or not last.strip() or not leans(last):
        return last
    return f"{earlier[-1]} {last}"
