"""What a verification says, and its JSON: ``Policy`` (what counts as a valid citation),
``Citation``, ``Claim`` and ``Verdict`` (with ``to_dict`` and ``from_dict``, the one reader of
stored verdicts), and how checked claims settle into a status.

The checks that make a verdict are ``verify``'s; this module holds only the values they hand
on, so that the tier, the pipeline, the cards and the store read a verdict without the checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, cast

from .errors import InputError, PolicyError
from .parsing import DEFAULT_SENTINELS
from .reasons import CITATION_REASONS, CLAIM_REASONS, STATUSES, CitationReason, ClaimReason
from .text.normalize import NORMALIZATION_VERSION, normalize

# 2: unrelated_evidence (a citation must bear on its claim); 3: claim_fragment; 4: citations the
# code placed (``reanchor``, ``Citation.anchored``, tier "anchor"); 5: quotes in parts
# (``Citation.spans``: elisions and editorial brackets) and providers' own citations
# (``Citation.native``); 6: writing notes on a claim (``Claim.notes``, ``Policy.strict``);
# 7: a claim served in its source's own sentence (``Claim.restates``, tier "quoted"); 8: a claim
# dropped for restating the question (``restates_question``: ``ask`` only)
VERDICT_VERSION = 8
DEFAULT_MIN_QUOTE_WORDS = 4
DEFAULT_MAX_QUOTE_WORDS = 40
_T = TypeVar("_T")


Status = Literal["grounded", "partial", "ungrounded", "abstained", "unparseable"]


@dataclass(frozen=True, slots=True)
class Policy:
    """What counts as a valid citation. Every field is documented in docs/verify.md."""

    min_quote_words: int = DEFAULT_MIN_QUOTE_WORDS
    max_quote_words: int = DEFAULT_MAX_QUOTE_WORDS
    user_is_evidence: bool = False
    sentinels: tuple[str, ...] = DEFAULT_SENTINELS
    # A citation must share a content word, number or identifier with its own claim
    # (``unrelated_evidence`` otherwise): off only to study answers without the rule.
    relevance: bool = True
    # The writing rules: a claim should be a statement that says what it is about ("16
    # weeks", a question, "This will help ..." with nothing before it, a piece of a sentence,
    # the template's placeholder are not): off only to study answers without them.
    sentences: bool = True
    # What a writing fault does. False (``verify``'s default): a note on the claim
    # (``Claim.notes``), which is kept or dropped on what it cites alone. True: the claim is
    # dropped as ``claim_fragment``, as ``ask`` does with its own model's answers (the repair
    # turn names it).
    strict: bool = False

    def __post_init__(self) -> None:
        for name in ("min_quote_words", "max_quote_words"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PolicyError(f"{name} must be an integer, got {value!r}")
        for flag in ("relevance", "sentences", "strict"):
            if not isinstance(getattr(self, flag), bool):
                raise PolicyError(f"{flag} must be true or false, got {getattr(self, flag)!r}")
        if not isinstance(self.user_is_evidence, bool):
            raise PolicyError(
                f"user_is_evidence must be true or false, got {self.user_is_evidence!r}"
            )
        if isinstance(self.sentinels, str) or not all(isinstance(s, str) for s in self.sentinels):
            raise PolicyError("sentinels must be a list of strings")
        if self.min_quote_words < 1:
            raise PolicyError("min_quote_words must be at least 1")
        if self.max_quote_words < self.min_quote_words:
            raise PolicyError(
                f"max_quote_words ({self.max_quote_words}) is below "
                f"min_quote_words ({self.min_quote_words})"
            )
        clean = tuple(s.strip() for s in self.sentinels)
        if any(not s for s in clean):
            raise PolicyError("an abstention sentinel cannot be empty")
        object.__setattr__(self, "sentinels", clean)

    def with_sentinel(self, sentinel: str) -> Policy:
        return replace(self, sentinels=(*self.sentinels, sentinel))

    @classmethod
    def from_options(
        cls,
        min_quote_words: int | None = None,
        max_quote_words: int | None = None,
        allow_user_evidence: bool = False,
        sentinels: Iterable[str] = (),
        strict: bool = False,
    ) -> Policy:
        """The default policy with what a caller set (None: the default), ``sentinels`` added
        to the default ones: what the CLI's options and the HTTP ``policy`` object mean, read
        in one place so that neither restates a default."""
        policy = cls(
            min_quote_words=DEFAULT_MIN_QUOTE_WORDS if min_quote_words is None else min_quote_words,
            max_quote_words=DEFAULT_MAX_QUOTE_WORDS if max_quote_words is None else max_quote_words,
            user_is_evidence=allow_user_evidence,
            strict=strict,
        )
        for sentinel in sentinels:
            policy = policy.with_sentinel(sentinel)
        return policy


DEFAULT_POLICY = Policy()  # frozen: one shared instance serves every call without a policy


@dataclass(frozen=True, slots=True)
class Citation:
    ref: str
    source: str | None
    quote: str | None
    valid: bool
    reason: CitationReason | None = None
    span: tuple[int, int] | None = None
    message: str | None = None
    # The entailment tier's judgement of this citation (a Judgement's to_dict()), when it ran
    # and the citation had passed the code checks; None otherwise.
    entailment: dict[str, Any] | None = None
    # True for a citation the code placed (``reanchor``): the sentence of the sources sent that
    # carries the claim, where the model's own citations did not. Checked like any other.
    anchored: bool = False
    # A quote in parts (an elision inside it): one [start, end) per part, in order; ``span`` is
    # then from the first part's start to the last one's end. None for a quote in one piece.
    spans: tuple[tuple[int, int], ...] | None = None
    # What a provider's own citation said (vendor formats, ``native``): its kind, offsets,
    # pages or answer span, and ``agrees``: whether its offsets (or pages) match what the
    # verifier found (None where nothing could be compared). None for every other format.
    native: dict[str, Any] | None = None

    @property
    def parts(self) -> tuple[tuple[int, int], ...]:
        """The verified spans to show: each part of an elided quote, else ``span`` (or none)."""
        if self.spans is not None:
            return self.spans
        return (self.span,) if self.span is not None else ()

    @classmethod
    def from_dict(cls, data: Any, where: str = "citation") -> Citation:
        """A citation from its JSON form (``to_dict()``)."""
        d = _object(data, where)
        span = d.get("span")
        if span is not None and not (
            isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)
        ):
            raise InputError(f"{where}: span must be [start, end] or null, got {span!r}")
        entailment = d.get("entailment")
        if entailment is not None and not isinstance(entailment, dict):
            raise InputError(f"{where}: entailment must be an object or null")
        spans = d.get("spans")
        if spans is not None and not (
            isinstance(spans, list)
            and spans
            and all(
                isinstance(x, list) and len(x) == 2 and all(_is_int(v) for v in x) for x in spans
            )
        ):
            raise InputError(f"{where}: spans must be a list of [start, end] or null")
        native = d.get("native")
        if native is not None and not isinstance(native, dict):
            raise InputError(f"{where}: native must be an object or null")
        return cls(
            _field(d, "ref", str, where),
            _optional(d, "source", str, where),
            _optional(d, "quote", str, where),
            _field(d, "valid", bool, where),
            _reason(d, CITATION_REASONS, where),
            None if span is None else (span[0], span[1]),
            _optional(d, "message", str, where),
            entailment,
            _flag(d, "anchored", where),
            None if spans is None else tuple((x[0], x[1]) for x in spans),
            native,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "source": self.source,
            "quote": self.quote,
            "valid": self.valid,
            "reason": self.reason,
            "span": list(self.span) if self.span is not None else None,
            "message": self.message,
            "entailment": self.entailment,
            "anchored": self.anchored,
            "spans": None if self.spans is None else [list(x) for x in self.spans],
            "native": self.native,
        }


@dataclass(frozen=True, slots=True)
class Claim:
    text: str
    citations: tuple[Citation, ...]
    kept: bool
    reason: ClaimReason | None = None
    message: str | None = None
    # Writing faults that did not decide keep or drop (``Policy.strict`` off): each a sentence
    # such as "a piece of a sentence (it starts mid-sentence)". Empty when there is none.
    notes: tuple[str, ...] = ()
    # The model's claim that this one stands for, in the cited source's own words, where the
    # support tier did not find the model's words in its verbatim quote, or the model wrote the
    # question's words where its quote has others (``reanchor.quoted_sentences``).
    restates: str | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "claim") -> Claim:
        """A claim from its JSON form (``to_dict()``)."""
        d = _object(data, where)
        cits = _field(d, "citations", list, where)
        return cls(
            _field(d, "text", str, where),
            tuple(Citation.from_dict(c, f"{where}.citations[{i}]") for i, c in enumerate(cits)),
            _field(d, "kept", bool, where),
            _reason(d, CLAIM_REASONS, where),
            _optional(d, "message", str, where),
            _strings(d, "notes", (), where),
            _optional(d, "restates", str, where),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kept": self.kept,
            "reason": self.reason,
            "message": self.message,
            "notes": list(self.notes),
            "restates": self.restates,
            "citations": [c.to_dict() for c in self.citations],
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    format: str
    claims: tuple[Claim, ...] = ()
    answerable: bool | None = None
    missing: str | None = None
    error: str | None = None
    allowed_ids: tuple[str, ...] = field(default=())
    tiers: tuple[str, ...] = ("code",)  # the checks that ran: "code", "entailment:heuristic"
    # The normalisation policy the quotes were matched under: a stored verdict read back
    # (``from_dict``) keeps the one it was made with.
    normalization: str = NORMALIZATION_VERSION

    @property
    def kept_claims(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.kept)

    @property
    def failures(self) -> list[str]:
        """One sentence per failure, naming claim and source: the repair step's input."""
        out: list[str] = []
        if self.error:
            out.append(f"the output could not be read: {self.error}")
        for claim in self.claims:
            if claim.kept:
                continue
            # (a citation the code placed is not the model's to mend: its own are named)
            named = [c.message for c in claim.citations if c.message and not c.anchored]
            if claim.reason == "claim_fragment" and claim.message:
                out.append(claim.message)  # the claim must change whatever its citations
                out.extend(named)
            elif named:  # each citation's own failure says more than "no valid citation"
                out.extend(named)
            elif claim.message:
                out.append(claim.message)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "verdict") -> Verdict:
        """A verdict from its JSON form (``to_dict()``, as traces store it): the one reader of
        stored verdicts. A malformed one, or one of a newer ``version``, is an InputError
        naming what is wrong; fields that older verdicts lack take their defaults."""
        d = _object(data, where)
        version = d.get("version", VERDICT_VERSION)
        if not _is_int(version) or version > VERDICT_VERSION:
            raise InputError(
                f"{where}: version {version!r} is newer than this quotebound reads "
                f"({VERDICT_VERSION}); upgrade quotebound"
            )
        status = _field(d, "status", str, where)
        if status not in STATUSES:
            raise InputError(f"{where}: unknown status {status!r}")
        claims = d.get("claims", [])
        if not isinstance(claims, list):
            raise InputError(f"{where}: claims must be a list")
        answerable = d.get("answerable")
        if answerable is not None and not isinstance(answerable, bool):
            raise InputError(f"{where}: answerable must be true, false or null")
        return cls(
            cast(Status, status),
            _field(d, "format", str, where),
            tuple(Claim.from_dict(c, f"{where}.claims[{i}]") for i, c in enumerate(claims)),
            answerable,
            _optional(d, "missing", str, where),
            _optional(d, "error", str, where),
            _strings(d, "allowed_ids", (), where),
            _strings(d, "tiers", ("code",), where),
            _optional(d, "normalization", str, where) or NORMALIZATION_VERSION,
        )

    def counts(self) -> dict[str, int]:
        """Claims kept and dropped, citations and valid ones (the ``counts`` of ``to_dict``)."""
        cits = [c for claim in self.claims for c in claim.citations]
        kept = len(self.kept_claims)
        return {
            "claims": len(self.claims),
            "kept": kept,
            "dropped": len(self.claims) - kept,
            "citations": len(cits),
            "valid_citations": sum(c.valid for c in cits),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": VERDICT_VERSION,
            "normalization": self.normalization,
            "status": self.status,
            "format": self.format,
            "answerable": self.answerable,
            "missing": self.missing,
            "error": self.error,
            "allowed_ids": list(self.allowed_ids),
            "tiers": list(self.tiers),
            "counts": self.counts(),
            "claims": [c.to_dict() for c in self.claims],
            "failures": self.failures,
        }


def _object(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InputError(f"{where} must be a JSON object, got {type(data).__name__}")
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field(d: dict[str, Any], name: str, kind: type[_T], where: str) -> _T:
    value = d.get(name)
    if not isinstance(value, kind):
        raise InputError(f"{where}: {name} must be a {kind.__name__}, got {value!r}")
    return value


def _optional(d: dict[str, Any], name: str, kind: type[_T], where: str) -> _T | None:
    return None if d.get(name) is None else _field(d, name, kind, where)


_Code = TypeVar("_Code", CitationReason, ClaimReason)


def _reason(d: dict[str, Any], codes: dict[_Code, str], where: str) -> _Code | None:
    """A stored reason code, one of ``codes`` (``reasons.py``), or None."""
    value = _optional(d, "reason", str, where)
    if value is None:
        return None
    for code in codes:  # (the code as its type: a closed vocabulary, read back checked)
        if code == value:
            return code
    raise InputError(f"{where}: unknown reason {value!r}")


def _flag(d: dict[str, Any], name: str, where: str) -> bool:
    value = d.get(name, False)
    if not isinstance(value, bool):
        raise InputError(f"{where}: {name} must be true or false, got {value!r}")
    return value


def _strings(d: dict[str, Any], name: str, default: tuple[str, ...], where: str) -> tuple[str, ...]:
    value = d.get(name)
    if value is None:
        return default
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {name} must be a list of strings")
    return tuple(value)


def verdict_status(claims: tuple[Claim, ...]) -> Status:
    """The status that checked ``claims`` give a verdict: ``grounded`` when every claim was
    kept, ``partial`` when some were, ``ungrounded`` when none was (or there is none)."""
    kept = sum(c.kept for c in claims)
    return "grounded" if claims and kept == len(claims) else "partial" if kept else "ungrounded"


def settled_claim(n: int, text: str, citations: tuple[Citation, ...]) -> Claim:
    """The ``n``-th claim with its checked ``citations``: kept when one of them is valid, else
    dropped as ``no_valid_citation``."""
    for c in citations:  # (a loop, not any() over a generator: this runs per claim)
        if c.valid:
            return Claim(text, citations, True)
    return Claim(text, citations, False, "no_valid_citation", f"claim {n} has no valid citation")


def with_kept_from(first: Verdict, repaired: Verdict) -> Verdict:
    """``repaired`` with every claim ``first`` kept put before its own, in their order, and
    its own claims that restate one of them (by normalised text) left out: what an answer
    serves after a repair turn. Each claim was verified on its own against the same working
    set, so what either attempt kept stands; and what the first attempt kept leads, so that
    the claims streamed before the repair (``ask``'s ``claims`` stage) are the answer's first."""
    if not first.kept_claims:
        return repaired
    said = {normalize(c.text) for c in first.kept_claims}
    claims = (*first.kept_claims, *(c for c in repaired.claims if normalize(c.text) not in said))
    tiers = (*repaired.tiers, *(t for t in first.tiers if t not in repaired.tiers))
    return replace(repaired, claims=claims, status=verdict_status(claims), tiers=tiers)
