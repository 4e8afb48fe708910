"""The proper names a claim states, and whether its evidence names them otherwise.

A model that answers "Where is Maracanã Stadium?" from a passage about Estadio Maracaná in
Panama City may write "Maracanã Stadium is in Panama City, Panama.": every number checks, the
quote is verbatim, and the claim has renamed its subject to the one asked about. Names are held
to the evidence as numbers are (``support.missing_names``); this module reads them.

A **name** in a claim is a run of capitalised words ("Sir John Robert Kerr"), joined by spaces
or by the particles of names ("Isabella II of Spain", "Vincent van Gogh"), with what is no name
trimmed from its edges: a capitalised function word or sentence opener ("The", "According"), a
courtesy title ("Dr.", "Sir"). A sentence's first word is capitalised whatever it is, so it and
the capitalised words joined to it are not read ("Pareto Charts are ..." may be a name or not);
words in quotation marks are the quoted-words check's.

The evidence **names it otherwise** (``name_swapped``) when it does not hold the name (its words
in their order, allowing what a reader allows: case, diacritics, a possessive, a plural, an
initial for a given name either way, a title or a hyphen between the words) and a name of the
evidence (a run of capitalised words there) shares a word with it and is another name: it has a
word the claim's name lacks while lacking one of the claim's ("Estadio Maracaná" for
"Maracanã Stadium", "Isabella II" for "Elizabeth II"), or it has all of its words in another
order ("Robert John Kerr" for "John Robert Kerr"). A shorter form is no other name ("Borlaug"
for "Norman Borlaug", "Leah" for "Leah Marlene", "Federal Reserve" for "US Federal Reserve"),
nor a longer one in order ("Deputy Chief Justice Philomena Mwilu"), nor a demonym ("South
African" for "South Africa"); and a name the evidence does not speak of at all is context,
judged by relevance and the support tier, not here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from .sentences import SENTENCE_OPENERS
from .words import STOPWORDS

# Lower-case particles inside a name: "Isabella II of Spain", "Vincent van Gogh".
_PARTICLES = frozenset("of de da del della di du van von der den la le bin al y".split())
# Courtesy titles, left out of the name (a text may name the person with or without them).
_TITLES = frozenset(
    "sir dr mr mrs ms prof st dame lord lady hon honorable honourable rev reverend".split()
)
# Capitalised words that open a sentence and name nothing ("Then Isabella II ...", "According
# to ..."): the function words, the sentence openers, and these.
_NO_NAME = (
    STOPWORDS
    | SENTENCE_OPENERS
    | frozenset(
        "according additionally furthermore moreover today yes with during under unlike following "
        "despite other several another any such only even just overall currently generally "
        "typically usually first second finally instead because".split()
    )
)
# A word that may be capitalised, a dotted acronym ("U.S.") included: its first letter is an
# ASCII capital or a Latin, Greek or Cyrillic letter beyond ASCII (their case is told apart in
# code). A simple class, so the pattern skips the other letters at C speed.
_CAPITAL = re.compile(r"[A-Z\u00c0-\u024f\u0370-\u052f][\w'\u2019\-]*\.?(?:[^\W\d_]\.)*")
# What may stand between two words of one name: spaces, and the particles of names.
_GAP = re.compile(r"[ \t\u00a0]+(?:(?:" + "|".join(sorted(_PARTICLES)) + r")[ \t\u00a0]+)*")
# Where a sentence starts: the text's start, after a stop, a colon, a line break, a bullet or
# an opening mark.
_OPENERS = "\"'\u201c\u2018([*_>\u2022\u00b7-"


_POSSESSIVE = re.compile(r"(?<=\w)'s?(?!\w)")


def _fold(text: str) -> str:
    """Lower case, diacritics dropped, possessive endings dropped ("Assassin's Creed" is
    "assassin creed"): how names are compared."""
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return _POSSESSIVE.sub("", plain) if "'" in plain else plain


# Quoted words, each kind looked for only where its opening mark is in the text.
_QUOTED = (
    ('"', re.compile(r'"[^"\n]{1,300}"')),
    ("\u201c", re.compile(r"\u201c[^\u201d\n]{1,300}\u201d")),
    ("\u2018", re.compile(r"\u2018[^\u2019\n]{1,300}\u2019(?!\w)")),
    ("'", re.compile(r"(?<![\w'])'(?:[^'\n]|(?<=\w)'(?=\w)){1,300}'(?!\w)")),
)


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for mark, pattern in _QUOTED if mark in text for m in pattern.finditer(text)]


class ClaimName(NamedTuple):
    """A name a claim states, as written; ``opens`` when its first word opens a sentence (then
    it may be no part of the name: "Perform STA ...", "Pareto Charts ...")."""

    text: str
    opens: bool


def _opens(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence: the text's start, or after a stop, a
    colon, a line break (opening marks and bullets aside); a period after a title or an
    initial ("Dr. A. P. J. Abdul Kalam") ends no sentence."""
    i = start - 1
    while i >= 0 and (text[i] in " \t\u00a0" or text[i] in _OPENERS):
        i -= 1
    if i < 0 or text[i] in "!?:;\n":
        return True
    if text[i] != ".":
        return False
    j = i
    while j > 0 and text[j - 1].isalpha() and i - j < 12:
        j -= 1
    before = text[j:i]
    return not (len(before) == 1 or before.lower() in _TITLES)


def _runs(text: str, claim: bool) -> list[tuple[list[str], bool]]:
    """The runs of capitalised words of ``text`` (as written), edges trimmed as the module's
    docstring says, each with whether its first word opens a sentence. In a ``claim``, quoted
    words are not read. Only the capitalised words are visited (the pattern skips the rest)."""
    quoted = _quoted_spans(text) if claim else []
    runs: list[tuple[list[str], bool]] = []
    run: list[str] = []
    opens = False  # the run's first word opens a sentence
    last_end = -1
    closed = True  # the last word read ended a sentence ("... Panama. Then ...")
    for m in _CAPITAL.finditer(text):
        word, start = m.group(0), m.start()
        if (
            not word[0].isupper()
            or (start and (text[start - 1].isalnum() or text[start - 1] in "'\u2019"))
            or (quoted and any(a < start < b for a, b in quoted))
        ):
            continue  # not capitalised, inside a word ("iPhone"), or quoted
        stop = word.endswith(".") and len(word) > 2 and word.count(".") == 1
        if stop and word[:-1].lower() not in _TITLES:
            word = word[:-1]  # a sentence's end, not the word's
        else:
            stop = False
        gap = None if closed or not run else _GAP.fullmatch(text, last_end, start)
        if gap is not None:
            run.extend(gap.group(0).split())  # particles between: "Isabella II of Spain"
        else:
            if run:
                runs.append((run, opens))
            run, opens = [], _opens(text, start)
        run.append(word)
        last_end, closed = m.end(), stop
    if run:
        runs.append((run, opens))
    out = []
    for words, opens in runs:
        while words and (words[0].lower() in _NO_NAME or words[0].lower() in _PARTICLES):
            words, opens = words[1:], False  # "The", "In": the name (if any) starts after it
        while words and words[-1].lower() in _PARTICLES:
            words = words[:-1]
        if words and words[0].rstrip(".").lower() in _TITLES:
            opens = False  # "Sir John ...": a title opens a name
        kept = [w for w in words if w.rstrip(".").lower() not in _TITLES]
        if kept:
            out.append((kept, opens))
    return out


def found_as_written(text: str, found: Callable[[str], bool]) -> bool:
    """A cheap first look: True when each run of capitalised words of ``text`` standing side
    by side (function words and titles aside: "The Legal team" is "Legal") is ``found`` as
    written, lower-cased; then no name of ``text`` is named otherwise (a name found is held).
    False says nothing: ``claim_names`` and ``name_swapped`` decide. A particle or a function
    word between capitalised words ("Bank of America") splits them here."""
    chain: list[str] = []
    last = -2
    for m in _CAPITAL.finditer(text):
        word, start = m.group(0), m.start()
        if not word[0].isupper():
            continue
        bare = word.rstrip(".") or word
        if bare.lower() in _NO_NAME or bare.lower() in _TITLES:
            last = -2
            continue
        if chain and not (last >= 0 and text[last:start].isspace()):
            if not found(" ".join(chain).lower()):
                return False
            chain = []
        chain.append(bare)
        last = -2 if word.endswith(".") and len(word) > 2 else m.end()
    return not chain or found(" ".join(chain).lower())


def claim_names(text: str) -> tuple[ClaimName, ...]:
    """The names ``text`` states, each once, as written (without titles)."""
    return tuple(
        dict.fromkeys(ClaimName(" ".join(words), opens) for words, opens in _runs(text, True))
    )


def _parts(name: str) -> list[str]:
    """A name's words, folded, hyphenated ones cut ("All-Stars": "all", "stars")."""
    return [w for w in re.split(r"[\s\-]+", _fold(name)) if w.strip(".")]


# What a plural or a demonym adds to a name's word: "africa" "african", "german" "germany".
_ENDINGS = frozenset("s es n an ian ese ish ic y i".split())


def _same(a: str, b: str) -> bool:
    """Whether two folded words of names are the same word as a reader takes it: an initial
    for a name it starts, a plural, a demonym ("africa", "african")."""
    a, b = a.rstrip("."), b.rstrip(".")
    if a == b:
        return True
    if len(a) == 1 or len(b) == 1:
        return a[:1] == b[:1]
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and long.startswith(short) and long[len(short) :] in _ENDINGS


_LOWER_WORD = re.compile(r"(?<![\w'\-])[^\W\d_A-Z][\w'\-]*")


class NameIndex:
    """A text as names are looked for in it: folded; the names it has (runs of capitalised
    words, each folded into words); and its common words (those it also writes in lower
    case: "web", "different"), which alone do not make a name of it another one."""

    __slots__ = ("common", "folded", "names")

    def __init__(self, text: str) -> None:
        self.folded = _fold(text)
        self.names = [_parts(" ".join(words)) for words, _ in _runs(text, claim=False)]
        self.common = frozenset(
            _fold(m.group(0)) for m in _LOWER_WORD.finditer(text) if m.group(0)[0].islower()
        )

    def distinct(self, word: str) -> bool:
        """Whether ``word`` (folded) is a name's word here: never written in lower case."""
        bare = word.rstrip(".")
        return not (
            bare in self.common or bare + "s" in self.common or bare.rstrip("s") in self.common
        )


def name_swapped(index: NameIndex, name: ClaimName) -> bool:
    """Whether the text of ``index`` names ``name`` otherwise (the module's docstring). A
    name whose first word opens a sentence is read with that word only where the text has it
    in one of its names and never in lower case ("Maracanã Stadium is ..."; not "Perform STA
    ...", "Different European ...")."""
    mine = _parts(name.text)
    if name.opens and not (
        index.distinct(mine[0]) and any(_same(mine[0], t) for theirs in index.names for t in theirs)
    ):
        mine = mine[1:]
    if not mine or holds_name(index.folded, " ".join(mine)):
        return False
    named: bool | None = None  # each word of this name stands in some name of the text
    for theirs in index.names:
        shared = [w for w in mine if any(_same(w, t) for t in theirs)]
        if not any(len(w.rstrip(".")) > 1 and index.distinct(w) for w in shared):
            continue  # nothing in common, or only words the text also uses as common ones
        extra = any(not any(_same(t, w) for w in mine) for t in theirs)
        lacking = len(shared) < len(mine)
        if not lacking and len(mine) > 1 and not _in_order(mine, theirs):
            return True  # its words in another order
        if extra and lacking:  # another name with a word of this one, unless the text names
            if named is None:  # it in pieces ("Deputy Chief Justice of Kenya", "Justice
                named = all(  # Philomena Mwilu"; "Germany", "Germania")
                    any(_same(w, t) for other in index.names for t in other) for w in mine
                )
            if not named:
                return True
    return False


def _in_order(mine: list[str], theirs: list[str]) -> bool:
    at = -1
    for w in mine:
        nxt = next((i for i, t in enumerate(theirs) if i > at and _same(w, t)), None)
        if nxt is None:
            return False
        at = nxt
    return True


def _pattern_part(word: str) -> str:
    folded = _fold(word)
    if re.fullmatch(r"(?:[^\W\d_]\.){2,}", folded):  # a dotted acronym: with or without dots
        return r"\.?".join(re.escape(c) for c in folded.replace(".", "")) + r"\.?"
    bare = folded.rstrip(".")
    if len(bare) == 1:  # an initial: any given name it stands for
        return re.escape(bare) + r"[\w'\-]*\.?"
    # the word (its plural or singular too), or its initial in the text
    stem = bare[:-1] if bare.endswith("s") and len(bare) > 3 else bare
    return f"(?:{re.escape(stem)}(?:s|es)?|{re.escape(bare[0])}\\.?)"


_TITLE_GAP = r"(?:[\s.\-]+(?:" + "|".join(sorted(_TITLES)) + r")\.?)?[\s.\-]+"


@lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    parts = [_pattern_part(w) for w in re.split(r"[\s\-]+", name) if w]
    return re.compile(r"(?<![\w'])" + _TITLE_GAP.join(parts) + r"(?![\w])")


def holds_name(folded_text: str, name: str) -> bool:
    """Whether a text (``fold``-ed) holds ``name`` (see the module's docstring for what a
    reader allows)."""
    if _pattern_needed(name):
        return _name_pattern(name).search(folded_text) is not None
    folded_name = _fold(name)
    i = folded_text.find(folded_name)
    while i >= 0:
        end = i + len(folded_name)
        left = i == 0 or not folded_text[i - 1].isalnum()
        right = end == len(folded_text) or not folded_text[end].isalnum()
        if left and right:
            return True
        i = folded_text.find(folded_name, i + 1)
    return False


def _pattern_needed(name: str) -> bool:
    """Whether ``name`` may stand in a text otherwise than as written (several words, an
    initial or acronym with dots, a plural)."""
    return " " in name or "." in name or "-" in name or name.endswith("s")
