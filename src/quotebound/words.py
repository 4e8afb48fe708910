"""Function words, shared by everything that matches questions against text.

Question words and function words match everything and rank nothing: retrieval drops them
from full-text queries, and the extractive provider from the words a sentence must cover.
"""

from __future__ import annotations

STOPWORDS = frozenset(
    "a an and are as at be but by can could do does did for from had has have how i if in is "
    "it its me my many much of on or our should so than that the their them there these they "
    "this to was we were what when where which who whom why will with would you your".split()
)
