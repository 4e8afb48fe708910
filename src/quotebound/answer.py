"""What an ask serves: the ``Answer`` (its verified claims with their cards, or a helpful
``Abstention``; what it leaves out, the sources that disagree, the answer check's judgement,
the verdicts, counts and timings) and how a verdict's kept claims become served claims."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .cards import Card, ClaimCite, build_cards, document_of
from .coverage import states_no_fact
from .entailment.base import Judgement
from .fragments import LIST_MARK
from .packing import Pack
from .verdict import Verdict


@dataclass(frozen=True, slots=True)
class AnswerClaim:
    text: str
    cards: tuple[int, ...]  # card numbers, in order of citation
    cites: tuple[ClaimCite, ...] = ()  # each valid citation: card, source id, span

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "cards": list(self.cards),
            "cites": [x.to_dict() for x in self.cites],
        }


@dataclass(frozen=True, slots=True)
class Abstention:
    question: str
    searched: tuple[str, ...]  # titles (keys) of the documents that were searched and sent
    missing: str
    next_step: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "searched": list(self.searched),
            "missing": self.missing,
            "next_step": self.next_step,
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """A source the answer does not cite that gives other figures than one of its claims
    (``coverage.disagreeing``): the reader is told to check which applies."""

    claim: int  # 1-based, in the answer's claims
    source: str  # the id it was sent under
    label: str  # its title or document
    updated: str | None
    sentence: str  # as it stands in the sent text

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "source": self.source,
            "label": self.label,
            "updated": self.updated,
            "sentence": self.sentence,
        }


AnswerStatus = Literal["grounded", "partial", "abstained", "provider_error"]


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    status: AnswerStatus
    claims: tuple[AnswerClaim, ...] = ()
    cards: tuple[Card, ...] = ()
    abstention: Abstention | None = None
    trace_id: str | None = None
    model: str | None = None
    repaired: bool = False
    error: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # Parts of the question (or names it asks about) that the sources mention and no kept
    # claim addresses (``coverage.unaddressed``): said to the reader beside the claims.
    unaddressed: tuple[str, ...] = ()
    # The answer check's judgement of the kept claims' quotes (``AskOptions.answer_check``).
    answer_check: Judgement | None = None
    # Sources not cited that give other figures than a kept claim, still after the repair.
    conflicts: tuple[Conflict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        a = self.abstention
        return {
            "question": self.question,
            "status": self.status,
            "unaddressed": list(self.unaddressed),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "answer_check": None if self.answer_check is None else self.answer_check.to_dict(),
            "claims": [c.to_dict() for c in self.claims],
            "cards": [c.to_dict() for c in self.cards],
            "abstention": None if a is None else a.to_dict(),
            "trace_id": self.trace_id,
            "model": self.model,
            "repaired": self.repaired,
            "error": self.error,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "counts": self.counts,
            "timings": self.timings,
        }


def served_text(claim: str) -> str:
    """A verified claim as the answer shows it: its whitespace runs (a PDF's line breaks
    copied with a quote) made one space, a leading list mark dropped. Only the layout: the
    verdict and the trace keep the model's text as written."""
    plain = " ".join(claim.split())
    return LIST_MARK.sub("", plain, count=1) if LIST_MARK.match(plain) else plain


def served_claims(verdict: Verdict, packed: Pack) -> tuple[tuple[AnswerClaim, ...], list[Card]]:
    """The kept claims of ``verdict`` as the answer serves them (``served_text``), and their
    cards. A claim written twice (the same served text, case aside) is served once, where it
    first stood, with the citations of both: a repeat is the model's slip, not a second fact."""
    cards, per_claim = build_cards(verdict, packed.working_set)
    merged: dict[str, tuple[str, list[ClaimCite]]] = {}
    for c, cites in zip(verdict.kept_claims, per_claim, strict=True):
        text = served_text(c.text)
        _, held = merged.setdefault(text.casefold(), (text, []))
        held.extend(x for x in cites if x not in held)
    claims = tuple(
        AnswerClaim(text, tuple(dict.fromkeys(x.card for x in cites)), tuple(cites))
        for text, cites in merged.values()
    )
    return claims, cards


def searched(packed: Pack) -> tuple[str, ...]:
    """The titles (else keys) of the documents sent, each once, in order."""
    return tuple(dict.fromkeys(src.title or document_of(src) for src in packed.working_set))


def abstention(question: str, packed: Pack, final: Verdict | None, error: str | None) -> Abstention:
    """Why nothing is served, said helpfully: what was asked, the documents searched, what was
    missing (the model's note only where it states no fact) and a next step."""
    documents = searched(packed)
    if not documents:
        return Abstention(
            question,
            (),
            "no document you may read matched the question",
            "Check the corpus name and your access groups, or ingest the documents that cover "
            "this topic.",
        )
    if error is not None:
        missing = f"the model could not be reached ({error})"
        step = "Try again later, or use the extractive provider, which needs no model."
    elif final is not None and final.status == "unparseable":
        missing = f"the model's answer could not be read ({final.error})"
        step = "Try again, or use the extractive provider, which always answers verbatim."
    elif final is not None and final.status == "abstained":
        missing = _said(final.missing, question) or "the documents searched do not state this"
        step = "Rephrase with the documents' own terms, or ask the owner of these documents."
    else:
        missing = "no claim in the answer could be verified against the documents searched"
        step = "Rephrase the question more narrowly, or read the documents searched directly."
    return Abstention(question, documents, missing, step)


# What small models write into "missing" when they have nothing to say: field names, fillers.
_EMPTY_NOTES = frozenset({"", "answerable", "missing", "none", "null", "n/a", "na", "unknown", "-"})


def _said(note: str | None, question: str) -> str | None:
    """The model's note on what is missing, only where it says something and states no fact
    (``coverage.states_no_fact``): not a field name or "none", not a guess at the answer."""
    if note is None or note.strip().strip(".").lower() in _EMPTY_NOTES:
        return None
    return note.strip() if states_no_fact(note, question) else None
