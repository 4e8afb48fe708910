"""Does the answer address the question? Cheap, deterministic checks on words, no model.

The checks the pipeline runs after verification (all but ``restates_question`` leave every
claim kept or dropped as verification left it; what ``borrowings`` finds, the pipeline serves
in the source's words):

- ``unaddressed``: the parts of the question that the kept claims leave out although the
  sources sent mention them. A question of several parts ("What is the hotel cap, and how soon
  must receipts be uploaded?") is cut at ``and``/``;``/``?`` before a new question word; a part
  none of whose content words is in a kept claim or its quotes is unaddressed. A name the
  question holds (a run of capitalised words, ``of``/``the`` allowed between two of them, not
  starting a sentence with a one-word run or a function word: ``Germany``, ``Northwind Health
  Plus``, ``Right of Recovery``) a word of which a source sent contains but no kept claim does
  is unaddressed too, named whole: the answer gave the general rule and left out the one for
  the place, product or person asked about, or answered for another plan of the same name.
  The pipeline names these in its one repair turn and, if they are still left out, in the
  answer (``Answer.unaddressed``), worded as what the code knows: no *verified claim*
  addresses them (the sources may or may not say).
- ``disagreeing``: a kept claim that counts something ("16 weeks"), and a sentence of a source
  the answer does not cite that counts the same thing with another number and says most of the
  claim's other words (a policy of 12 weeks and one of 16): sources that disagree must be
  reported both, with which applies when.
- ``restatements``: whether a claim only restates the question, every content word of it
  the question's ("The British forces led the British forces in the Battle of Morval."): the
  pipeline drops such a claim (``restates_question``, the one check here that does: it answers
  nothing whatever it cites), and its repair turn asks for the answer.
- ``borrowings``: the words a claim takes from the question that its evidence does not hold
  ("Where did the fewest Huguenots stay?": "The fewest Huguenots stayed on the south shore
  ..." quoting "A small group of Huguenots also settled on the south shore ..."): the claim
  says the question's words, not its source's. The pipeline serves the quoted sentence, in the
  source's words, in its place (``reanchor.quoted_sentences``).
- ``states_no_fact``: whether a model's note on what is missing (the ``missing`` field of an
  abstention) states nothing but that the documents lack something: each of its content words
  is the question's or a word about documents ("the documents do not mention a pension plan"),
  and it names the documents. Any other note ("The company does not offer a pension plan",
  "the Yellow River") is an unverified claim and is not shown.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence

from .text.names import claim_names
from .text.normalize import normalize
from .text.sentences import sentence_spans
from .text.tokens import numbers
from .text.words import WORD_TOKEN, content_words, stem

_QUESTION_WORDS = (
    "how|what|when|where|who|whom|whose|which|why|is|are|was|were|do|does|did|can|could|may|"
    "must|should|will|would|has|have"
)
# A new part starts after "?" or ";", or at "and"/"also" followed by a question word.
_PART_BREAK = re.compile(
    rf"\?\s+|;\s*|,?\s+(?:and|also)\s+(?=(?:{_QUESTION_WORDS})\b)", re.IGNORECASE
)

# Words a note about missing information may use besides the question's own.
_ABOUT_DOCUMENTS = frozenset(
    content_words(
        normalize(
            "document documents source sources text texts passage passages provided given "
            "context handbook policy policies file files information info detail details "
            "mention mentions mentioned say says said state states stated specify specifies "
            "specified cover covers covered contain contains contained include includes "
            "included provide provides discuss discusses describe describes address addresses "
            "answer answers explain explains indicate indicates found find available "
            "no not none nothing any anything about regarding whether if question asked "
            "missing lack lacks unclear unknown there is are does do"
        )
    )
)
_DOCUMENT_WORDS = frozenset(
    content_words(
        normalize(
            "document documents source sources text texts passage passages context handbook "
            "file files information provided given"
        )
    )
)


def question_parts(question: str) -> list[str]:
    """The parts of a question that asks several things, as written (one part otherwise)."""
    parts = [p.strip(" ,?") for p in _PART_BREAK.split(question.strip())]
    return [p for p in parts if p]


def question_names(question: str) -> list[str]:
    """The names the question asks about, as written (``text.names``, the one reader of names:
    runs of capitalised words, titles and a leading article aside: ``Germany``, ``Northwind
    Health Plus``, ``Right of Recovery``, ``U.S. Navy``). A sentence's first word alone is no
    name ("Employees get ..." names nothing); followed by more capitalised words it is
    ("Northwind Standard covers ..."), unless it is a function word ("Does Contoso ..."
    names ``Contoso``)."""
    return [
        name.text for name in claim_names(question) if not (name.opens and " " not in name.text)
    ]


def unaddressed(question: str, sources: Iterable[str], answered: Iterable[str]) -> tuple[str, ...]:
    """What of ``question`` the ``sources`` sent mention but no ``answered`` text (the kept
    claims and their quotes) addresses: unaddressed parts of a question of several parts, as
    written, then names (see the module's notes). Empty when the answer addresses it all."""
    sent = frozenset().union(*(content_words(normalize(s)) for s in sources))
    said = frozenset().union(*(content_words(normalize(a)) for a in answered))
    out: list[str] = []
    parts = question_parts(question)
    if len(parts) > 1:
        for part in parts:
            wanted = content_words(normalize(part)) & sent
            if wanted and wanted.isdisjoint(said):
                out.append(part)
    left_out = " ".join(out)
    for name in question_names(question):
        words = content_words(normalize(name)) & sent  # those a source sent holds
        if name in left_out or not words:
            continue
        if not words <= said:
            out.append(name)
    return tuple(out)


def mentioned_in(item: str, sources: Sequence[tuple[str, str]]) -> list[str]:
    """The ids of the ``(id, text)`` sources sharing the most content words with ``item`` (a
    part or a name ``unaddressed`` returned): where the repair turn points the model."""
    wanted = content_words(normalize(item))
    shared = {sid: len(wanted & content_words(normalize(text))) for sid, text in sources}
    best = max(shared.values(), default=0)
    return [sid for sid, n in shared.items() if n and n == best]


def nearest_sentences(
    claim: str,
    sources: Sequence[tuple[str, str]],
    skip: Iterable[str] = (),
    least: int = 2,
    share: float = 0.5,
) -> list[tuple[str, str]]:
    """``(source id, sentence)`` pairs: the sentences of the ``(id, text)`` sources sharing at
    least ``least`` content words with ``claim``, and at least ``share`` of the claim's, most
    shared first (ties: in the sources' order), other than the ``skip`` texts (the quotes that
    already failed). Where a repair turn points a model whose quote did not support its claim
    (half the claim's words), and where ``reanchor.reanchor`` looks for the sentence that does
    (two thirds): the verifier checks whatever is cited there like any other citation."""
    wanted = content_words(normalize(claim))
    least = max(least, math.ceil(len(wanted) * share))  # most of the claim, not a word of it
    skipped = {normalize(t).strip() for t in skip}
    found: list[tuple[int, int, str, str]] = []
    for sid, text in sources:
        for a, b in sentence_spans(text):
            sentence = text[a:b]
            shared = len(wanted & content_words(normalize(sentence)))
            if shared >= least and normalize(sentence).strip() not in skipped:
                found.append((-shared, len(found), sid, sentence))
    return [(sid, sentence) for _, _, sid, sentence in sorted(found)]


def nearest_sentence(
    claim: str,
    sources: Sequence[tuple[str, str]],
    skip: Iterable[str] = (),
    least: int = 2,
    share: float = 0.5,
) -> tuple[str, str] | None:
    """The first of ``nearest_sentences`` (None when there is none)."""
    ranked = nearest_sentences(claim, sources, skip, least, share)
    return ranked[0] if ranked else None


_FIGURE = re.compile(r"(\d[\d.,]*)\s*%?\s*([^\W\d_]+)?")
DISAGREEMENTS_SHOWN = 3  # the most a repair turn or an answer names
# Words after a number that say nothing of what it counts ("16 of them", "in 2024 and").
_NOT_UNITS = frozenset("a an and or of in on at to the for by with per is are was".split())


def _figures(normalized: str) -> dict[str, set[str]]:
    """Each word that follows a number (its unit: weeks, EUR, days), with the numbers it
    follows: ``16 weeks`` -> ``{"week": {"16"}}`` (light stems, canonical numbers)."""
    out: dict[str, set[str]] = {}
    for m in _FIGURE.finditer(normalized):
        unit = m.group(2)
        values = numbers(m.group(1))
        if unit and values and unit not in _NOT_UNITS:
            out.setdefault(stem(unit), set()).update(values)
    return out


def disagreeing(
    claims: Sequence[tuple[str, Collection[str]]], sources: Sequence[tuple[str, str]]
) -> list[tuple[int, str, str]]:
    """``(claim index, source id, sentence)``: for kept claims (``(text, ids it cites)``) that
    count something ("16 weeks"), a sentence of a source no kept claim cites that counts the
    same thing with another number ("12 weeks") and says most of what the claim says (two
    thirds of its other content words, three at least) without any of the claim's numbers, and
    with that one count differing (two differing counts, "150 EUR ... tier 2 cities" beside
    "180 EUR ... tier 1 cities", are another case of the same rule).
    Sources that disagree are reported both (the contract's rule 5); the pipeline names these
    in its repair turn and, if still left out, beside the answer. Words only: it does not know
    that the two are about the same thing, so it names and never drops. Each sentence once,
    at most ``DISAGREEMENTS_SHOWN``."""
    cited = {sid for _, ids in claims for sid in ids}
    others = [(sid, text) for sid, text in sources if sid not in cited]
    out: list[tuple[int, str, str]] = []
    named: set[str] = set()
    for n, (text, _) in enumerate(claims):
        normalized = normalize(text)
        counted = _figures(normalized)
        figures = numbers(normalized)
        words = {w for w in content_words(normalized) if not any(ch.isdigit() for ch in w)}
        if not counted:
            continue
        least = max(3, math.ceil(len(words) * 2 / 3))
        for sid, source in others:
            for a, b in sentence_spans(source):
                sentence = normalize(source[a:b])
                if numbers(sentence) & figures or sentence in named:
                    continue
                theirs = _figures(sentence)
                # one count that differs is a disagreement; two ("180 EUR ... tier 1 cities"
                # beside "150 EUR ... tier 2 cities") are another case of the same rule
                differ = sum(counted[u] != theirs[u] for u in counted.keys() & theirs.keys())
                if differ == 1 and len(words & content_words(sentence)) >= least:
                    out.append((n, sid, source[a:b].strip()))
                    named.add(sentence)
                    if len(out) == DISAGREEMENTS_SHOWN:
                        return out
                    break
    return out


def states_no_fact(note: str, question: str) -> bool:
    """Whether ``note`` says only that the documents lack something the question asks (see
    the module's notes): then it can be shown; otherwise it is a claim nobody checked."""
    words = content_words(normalize(note))
    if not words or words.isdisjoint(_DOCUMENT_WORDS):
        return False
    return words <= content_words(normalize(question)) | _ABOUT_DOCUMENTS


# A question that asks for something: each of its parts (``question_parts``) opens with a
# question word, after a preposition at most ("What ...", "In which year ..."). A part opening
# otherwise ("Are employees who have children entitled ...?": yes or no) or one offering
# alternatives ("north or south?", "Standard vs Plus", "between A and B", "which of", "either",
# a candidate after a comma: "Where was Obama born, Hawaii?") is answered by words it has.
_ASKS = re.compile(
    r"^\W*(?:(?:in|on|at|for|from|by|to|of|with|during|since|under|after|before)\s+)?"
    r"(?:how|what|when|where|who|whom|whose|which|why)\b",
    re.IGNORECASE,
)
_ALTERNATIVES = re.compile(
    r"\b(?:or|vs|versus|between|either|which of)\b|,\s*[^,?]+\?\s*$", re.IGNORECASE
)


def asks_for_something(question: str) -> bool:
    """Whether every part of ``question`` opens with a question word and none offers
    alternatives (``_ASKS``, ``_ALTERNATIVES``): what it asks for is words it lacks."""
    parts = question_parts(question)
    return (
        bool(parts)
        and all(_ASKS.match(part) is not None for part in parts)
        and _ALTERNATIVES.search(question) is None
    )


_OPENS_A_QUESTION = re.compile(
    rf"^\W*(?:(?:in|on|at|for|from|by|to|of|with)\s+)?(?:{_QUESTION_WORDS})\b", re.IGNORECASE
)


def reads_as_question(text: str) -> bool:
    """Whether ``text`` is a question: it ends with "?" or opens with a question word or an
    auxiliary ("where do they shoot ..."), not a placeholder or an instruction."""
    return text.rstrip().endswith(("?", "\uff1f")) or _OPENS_A_QUESTION.match(text) is not None


def restatements(question: str) -> Callable[[str], bool]:
    """Whether a claim only restates ``question``, as a test of claims with the question read
    once (a verdict's claims, every sentence the fallback may copy): the question asks for
    something (``asks_for_something``) and each content word of the claim (``content_words``:
    light stems) is one of the question's ("Who led the British forces in the Battle of
    Morval?": "The British forces led the British forces in the Battle of Morval."; "What fruit
    takes the scientific name Mangifera indica?": "The fruit takes the scientific name Mangifera
    indica."). Such a claim answers nothing, whatever its quote says; one word more ("11 member
    states adopted ...", "... off the coast of Africa") may be the answer, and passes."""
    if not asks_for_something(question):
        return _never
    asked = content_words(normalize(question))

    def restates(claim: str) -> bool:
        said = content_words(normalize(claim))
        return bool(said) and said <= asked

    return restates


def _never(claim: str) -> bool:
    return False


def borrowings(question: str) -> Callable[[str, Iterable[str]], tuple[str, ...]]:
    """The words a claim takes from ``question`` that its evidence does not hold, as a test of
    claims with the question read once: ``borrowed(claim, evidence)`` gives each content word
    of the claim (``content_words``: light stems) that is the question's and in none of the
    ``evidence`` texts (the sentences its quotes stand in, its sources' titles), as the claim
    writes it, in order. A model bending a verbatim quote to the question writes the question's
    words where the quote has others: "The fewest Huguenots stayed on the south shore ..." for
    "Where did the fewest Huguenots stay?", quoting "A small group of Huguenots also settled on
    the south shore ..."; "Éric Serra composed and performed the theme song for Goldeneye."
    quoting "The soundtrack to "GoldenEye" was composed and performed by Éric Serra." A word
    neither the question's nor the evidence's is a paraphrase, the support tier's to judge.
    Nothing for a text that is no question (``reads_as_question``)."""
    if not reads_as_question(question):
        return _lends_nothing
    asked = content_words(normalize(question))

    def borrowed(claim: str, evidence: Iterable[str]) -> tuple[str, ...]:
        said = normalize(claim)
        taken = content_words(said) & asked
        if not taken:
            return ()
        for text in evidence:
            taken = taken - content_words(normalize(text))
            if not taken:
                return ()
        written = [
            w
            for found in WORD_TOKEN.finditer(claim)
            if len(w := found.group()) > _SHORT_WORD
            and w[0].islower()
            and claim[found.end() : found.end() + 1] not in _APOSTROPHES  # ("don't": no word)
            and stem(normalize(w)) in taken
        ]
        return tuple(dict.fromkeys(written))

    return borrowed


# Words this short ("up", "one") are the question's phrasing more often than its content; a
# name (written with a capital) is held to the evidence by ``support.missing_names``.
_SHORT_WORD = 2
_APOSTROPHES = ("'", "\u2019")


def _lends_nothing(claim: str, evidence: Iterable[str]) -> tuple[str, ...]:
    return ()


def describe(items: Sequence[str]) -> str:
    """``items`` as a phrase for a sentence: 'a', 'a and b', 'a, b and c' (each quoted)."""
    quoted = [f'"{item}"' for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def document_name(key: str | None, title: str | None = None) -> str:
    """What a document is called, to match a question's words against: its title, else its
    file's name (``key``: a document key, ``corpus:path``) without the corpus, the folders and
    the extension, ``_`` and ``-`` read as spaces
    (``contoso:Northwind_Health_Plus_Benefits_Details.pdf``: "Northwind Health Plus Benefits
    Details")."""
    if title and title.strip():
        return title.strip()
    name = (key or "").split(":", 1)[-1].rsplit("/", 1)[-1]
    stem_, dot, extension = name.rpartition(".")
    if dot and stem_ and extension.isalnum() and len(extension) <= 5:
        name = stem_
    return re.sub(r"[_\-]+", " ", name).strip()


def named_documents(question: str, names: Sequence[str]) -> set[int]:
    """The indexes of ``names`` (documents' names: ``document_name``) that ``question`` picks
    out: every word that sets a name apart from the others (a content word of it that no
    other name holds) is a word of the question, and there is at least one. "What is the
    copay for Northwind Health Plus?" picks "Northwind Health Plus Benefits Details" out of it
    and "Northwind Standard Benefits Details" (apart: ``health``, ``plus``; ``standard``);
    "What does Northwind Health cover?" picks neither (``plus`` is not asked). With one name,
    or none that the question picks, the set is empty."""
    words = [content_words(normalize(name)) for name in names]
    distinct = set(words)  # names alike word for word are one name here
    if len(distinct) < 2:
        return set()
    held = Counter(w for own in distinct for w in own)  # by how many distinct names
    asked = content_words(normalize(question))
    picked = set()
    for i, own in enumerate(words):
        apart = {w for w in own if held[w] == 1}
        if apart and apart <= asked:
            picked.add(i)
    return picked
