"""The checks: parsed claims + WorkingSet -> Verdict.

For each citation, in order (the first failure is the citation's reason):

1. id: the ref resolves to a source of the working set (``unknown_source``);
2. policy: the source is not the user's own message (``cites_user_message``) unless allowed;
3. span (formats that carry quotes): a quote is there (``quote_missing``), has enough and not
   too many words (``quote_too_short``, ``quote_too_long``), and occurs, normalised and on word
   boundaries, in the *cited* source (``quote_not_found``, or ``quote_in_other_source`` when it
   occurs in another source of the set). An accepted quote gets its ``[start, end)`` span.
4. support, against the evidence of the claim's citations that passed 1-3 together (their
   quotes, or the whole cited source where the format has no quotes): every identifier
   (``identifier_not_in_source``), every number (``number_not_in_source``) and every phrase in
   quotation marks (``quoted_text_not_in_source``) of the claim must occur in it.

A claim is kept when at least one citation is valid; otherwise its reason is ``no_citation``,
``unmarked_claim`` (an inline sentence with a number or date and no marker) or
``no_valid_citation``. The verdict's status follows from the claims.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, cast

from .budget import Budget, over_time
from .coverage import nearest_sentences
from .errors import InputError, PolicyError
from .parsing import DEFAULT_SENTINELS, FORMATS, Parsed, ParsedCitation, ParsedClaim, parse
from .reasons import REANCHORABLE, STATUSES
from .sources import WorkingSet
from .support import Missing, claim_gap, missing_names, states_number_or_date
from .text.changes import Words, changed_word
from .text.markup import original_span
from .text.normalize import NORMALIZATION_VERSION, NormalizedText, normalize, scrub
from .text.quoteparts import QuoteParts, adds_polarity, locate_parts, split_quote
from .text.sentences import reads_as_heading, sentence_spans
from .text.tokens import Evidence, digit_tokens
from .text.words import (
    STOPWORDS,
    UNSPACED,
    contains_words,
    content_words,
    count_words,
    on_word_bounds,
    trimmed,
    unspaced_words,
)

# 2: unrelated_evidence (a citation must bear on its claim); 3: claim_fragment; 4: citations the
# code placed (``reanchor``, ``Citation.anchored``, tier "anchor"); 5: quotes in parts
# (``Citation.spans``: elisions and editorial brackets) and providers' own citations
# (``Citation.native``); 6: writing notes on a claim (``Claim.notes``, ``Policy.strict``)
VERDICT_VERSION = 7
DEFAULT_MIN_QUOTE_WORDS = 4
DEFAULT_MAX_QUOTE_WORDS = 40
_T = TypeVar("_T")

Status = Literal["grounded", "partial", "ungrounded", "abstained", "unparseable"]
_SUPPORT_REASON = {
    "identifier": "identifier_not_in_source",
    "number": "number_not_in_source",
    "quoted_text": "quoted_text_not_in_source",
    "name": "name_not_in_source",
}


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
    reason: str | None = None
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
            _optional(d, "reason", str, where),
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
    reason: str | None = None
    message: str | None = None
    # Writing faults that did not decide keep or drop (``Policy.strict`` off): each a sentence
    # such as "a piece of a sentence (it starts mid-sentence)". Empty when there is none.
    notes: tuple[str, ...] = ()
    # The model's claim that this one stands for, in the cited source's own words, where the
    # support tier did not find the model's words in its verbatim quote (``quoted_sentences``).
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
            _optional(d, "reason", str, where),
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


def verify(
    ws: WorkingSet,
    output: str,
    format: str = "auto",
    policy: Policy | None = None,
    budget: Budget | None = None,
) -> Verdict:
    """Check a model's raw output against the working set that was sent with it; with a
    ``budget``, refuse more work than it allows (``WorkLimitError``, ``TimeLimitError``)."""
    if not isinstance(ws, WorkingSet):
        raise InputError(f"verify() needs a WorkingSet, got {type(ws).__name__}")
    if format not in FORMATS:
        raise InputError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if not isinstance(output, str):
        raise InputError(f"model output must be a string, got {type(output).__name__}")
    policy = policy or DEFAULT_POLICY
    if budget is None:
        return _verdict(ws, parse(ws, scrub(output), format, policy.sentinels), policy)
    deadline = budget.deadline()
    parsed = parse(ws, scrub(output), format, policy.sentinels)
    budget.check(parsed)
    over_time(deadline, budget.seconds)
    return _verdict(ws, parsed, policy, deadline, budget.seconds)


def _verdict(
    ws: WorkingSet,
    parsed: Parsed,
    policy: Policy,
    deadline: float | None = None,
    seconds: float | None = None,
) -> Verdict:
    common = {"format": parsed.format, "allowed_ids": ws.ids, "missing": parsed.missing}
    if parsed.error is not None:
        return Verdict("unparseable", error=parsed.error, **common)  # type: ignore[arg-type]
    if parsed.abstained:
        return Verdict("abstained", answerable=False, **common)  # type: ignore[arg-type]
    ws.prime(c.source_id for claim in parsed.claims for c in claim.citations if c.source_id)
    if deadline is None:
        claims = tuple(_check_claim(ws, n, c, policy) for n, c in enumerate(parsed.claims, 1))
    else:
        checked = []
        for n, c in enumerate(parsed.claims, 1):
            over_time(deadline, seconds)
            checked.append(_check_claim(ws, n, c, policy))
        claims = tuple(checked)
    if policy.sentences:
        claims = lean_on_kept(claims, policy.strict)
    status = verdict_status(claims)
    return Verdict(status, claims=claims, answerable=True, **common)  # type: ignore[arg-type]


def _check_claim(ws: WorkingSet, n: int, claim: ParsedClaim, policy: Policy) -> Claim:
    if not claim.citations:
        if claim.unmarked and states_number_or_date(claim.text):
            msg = f"claim {n} states a number or date but cites no source"
            return Claim(claim.text, (), False, "unmarked_claim", msg)
        return Claim(claim.text, (), False, "no_citation", f"claim {n} cites no source")
    results: list[Citation] = []
    evidence: list[Evidence] = []
    passing: list[int] = []  # the citations that passed steps 1-3, with evidence
    for cit in claim.citations:
        if cit.native is not None and cit.quote:
            result, found = _check_extracted(ws, n, cit, policy)
        else:
            result, found = _check_citation(ws, n, cit, policy)
        if cit.native is not None:
            result = _with_native(ws, result, cit.native)
        if found is not None:
            passing.append(len(results))
            evidence.append(found)
        results.append(result)
    normalized: str | None = None  # the claim normalised once, for support and the writing
    if claim.items:  # a list answer: each item against its own citations
        for text, own in claim.items:
            mine = [k for k, i in enumerate(passing) if i in own]
            _support(
                ws,
                n,
                text,
                normalize(text),
                results,
                [passing[k] for k in mine],
                [evidence[k] for k in mine],
                policy,
            )
    elif evidence:
        normalized = normalize(claim.text)
        mark = LIST_MARK.match(claim.text)  # "4. Know what ...": the list's number is no fact
        said = claim.text[mark.end() :] if mark else claim.text
        facts = normalize(said) if mark else normalized
        _support(ws, n, said, facts, results, passing, evidence, policy, claim.context)
    settled = settled_claim(n, claim.text, tuple(results))
    if settled.kept and claim.items:
        for k, (text, own) in enumerate(claim.items, 1):
            if not any(results[i].valid for i in own):
                message = f"claim {n}: item {k} ({_shown(text)}) has no valid citation of its own"
                settled = replace(settled, kept=False, reason="no_valid_citation", message=message)
                break
    # a claim-level fault: strict, its reason whatever its citations' are; else a note on a
    # kept claim (a dropped one is not served: the rule could change nothing there)
    if policy.sentences and (policy.strict or settled.kept):
        why = fragment(claim.text, normalized)
        if why is not None and why != _LEANS_BACK:  # (leaning: ``lean_on_kept`` decides)
            if policy.strict:
                return _refused(n, claim.text, settled, why)
            return replace(settled, notes=(*settled.notes, why))
    return settled


def _support(
    ws: WorkingSet,
    n: int,
    said: str,
    normalized: str,
    results: list[Citation],
    passing: list[int],
    evidence: list[Evidence],
    policy: Policy,
    context: str | None = None,
) -> None:
    """The support checks of a claim (``said``, as written, and ``normalized``) against the
    ``evidence`` of the citations ``passing`` (indexes into ``results``, updated in place): its
    numbers, identifiers and quoted words (``claim_gap``), its proper names
    (``missing_names``: in the evidence or a cited source's title), then relevance
    (``_relevant``, reading ``context`` when given)."""
    if not evidence:
        return
    numbered = digit_tokens(normalized)  # read once: for the facts and for relevance
    gap = claim_gap(normalized, evidence, ignore=ws.id_tokens, tokens=numbered)
    if gap is None:
        gap = missing_names(said, evidence, lambda: _as_written(ws, results, passing))
    if gap is not None:
        message = _support_message(n, gap, [results[i] for i in passing])
        for i in passing:
            results[i] = replace(
                results[i], valid=False, reason=_SUPPORT_REASON[gap.kind], message=message
            )
        return
    said_words: Words | None = None  # the claim's words, read once for its quotes
    for i, found in zip(passing, evidence, strict=True):
        if results[i].quote and results[i].span is not None:
            if said_words is None:
                said_words = Words(normalized)
            change = changed_word(said_words, found.text)
            if change is not None:
                message = (
                    f"claim {n} copies its quote from {results[i].source} but changes what it "
                    f"says: {change}; write what the quote says"
                )
                results[i] = replace(
                    results[i], valid=False, reason="quote_word_changed", message=message
                )
    if policy.relevance:
        if context is None:
            _relevant(n, normalized, results, passing, evidence, numbered)
        else:
            read = normalize(context)
            _relevant(n, read, results, passing, evidence, digit_tokens(read))


def _as_written(ws: WorkingSet, results: list[Citation], passing: list[int]) -> list[str]:
    """The evidence of the ``passing`` citations as written in their sources (the span each
    quote was found at, or the whole source a citation without a quote cites), then the
    titles of those sources."""
    texts, titles = [], []
    for i in passing:
        cited = results[i]
        src = ws.get(cited.source) if cited.source else None
        if src is None:
            continue
        texts.append(src.text if cited.span is None else src.text[cited.span[0] : cited.span[1]])
        if src.title:
            titles.append(src.title)
    return texts + titles


def _refused(n: int, text: str, claim: Claim, why: str) -> Claim:
    message = (
        f"claim {n} ({_shown(text)}) is {why}: write it as one complete sentence that says "
        "what it is about"
    )
    return replace(claim, kept=False, reason="claim_fragment", message=message)


def lean_on_kept(claims: tuple[Claim, ...], strict: bool = True) -> tuple[Claim, ...]:
    """``claims`` with each kept one that leans on the sentence before it (``fragment``: it
    opens with "This", "That", "These" or "Those") dropped as ``claim_fragment`` unless a claim
    kept before it in the answer says what it stands for ("Northwind Standard covers in-network
    providers only." then "These providers have agreed to ..."); a leaning claim whose citations
    failed too is told so as well (``claim_fragment``: the repair names it). ``verify`` settles
    the claims with it, and the entailment tier again after it drops some (re-anchoring needs
    no second pass: it keeps only claims that are not fragments).

    Not ``strict`` (``Policy.strict`` off): a leaning claim is read with the sentence before
    it in the answer, whatever became of that one, and only the answer's first claim, which has
    none, gets a note when it is kept."""
    if not strict:
        if claims and claims[0].kept and _leans_back(claims[0].text.strip()):
            first = claims[0]
            if _LEANS_BACK not in first.notes:
                return (replace(first, notes=(*first.notes, _LEANS_BACK)), *claims[1:])
        return claims
    out: list[Claim] = []
    after_kept = False  # a claim before this one is kept
    for n, claim in enumerate(claims, 1):
        # (not a fragment already: ``fragment``'s other rules passed, only the leaning is left)
        if not after_kept and claim.reason != "claim_fragment" and _leans_back(claim.text.strip()):
            claim = _refused(n, claim.text, claim, _LEANS_BACK)  # (its citations named too)
        after_kept = after_kept or claim.kept
        out.append(claim)
    return tuple(out)


def answer_fragments(texts: Sequence[str]) -> list[str | None]:
    """For the claims an answer serves, in order, why each is not a claim a reader can take
    (``fragment``), None for each that is; a claim leaning on the one before it is read with a
    claim before it, as ``lean_on_kept`` reads it."""
    out: list[str | None] = []
    for i, text in enumerate(texts):
        why = fragment(text)
        out.append(None if why == _LEANS_BACK and i else why)
    return out


MIN_CLAIM_WORDS = 3
_PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$|^\s*one claim\s*$", re.IGNORECASE)


def fragment(text: str, normalized: str | None = None) -> str | None:
    """Why ``text`` is not a claim a reader can take alone, or None when it is one: a question
    (it ends with ``?``), the answer template's placeholder (``<...>``), a piece of a sentence
    (it opens with a lower-case conjunction, preposition, article or "is": "for any costs the
    plan does not cover."), fewer than ``MIN_CLAIM_WORDS`` words (in scripts without spaces,
    counted by characters: see ``_sentence_words``), no content word but numbers ("It is
    14."), a heading (``reads_as_heading``, and with a colon only after a heading in
    capitals: "Balance Billing Protection", "## Leave"), or, those rules passed, a sentence
    that leans on the one before it (``_leans_back``: "This will help you to ensure ...";
    ``lean_on_kept`` reads it with the claims before it). Deterministic and cheap; it does not
    parse grammar, so a long noun phrase passes: the entailment tier and the reader see
    those. ``normalized``: ``normalize(text)``, where the caller has it already."""
    stripped = text.strip()
    if _PLACEHOLDER.match(stripped):
        return "the answer template's placeholder"
    if stripped.rstrip(" \"'»”)").endswith(("?", "？")):
        return "a question, not a statement"
    if _starts_mid_sentence(stripped):
        return _MID_SENTENCE
    if _points_elsewhere(stripped):
        return _POINTER
    why = _word_rules(stripped, normalized)
    return why if why is not None or not _leans_back(stripped) else _LEANS_BACK


def _word_rules(stripped: str, normalized: str | None = None) -> str | None:
    """``fragment``'s rules on the words: too few, none but numbers, a heading."""
    plain = stripped.isascii() and "&" not in stripped  # normalize() would only lower-case it
    if normalized is None:
        normalized = stripped.lower() if plain else normalize(stripped)
    unspaced = not plain and UNSPACED.search(normalized) is not None
    if not unspaced and _says_a_content_word(normalized):
        return _HEADING if _heading(stripped) else None
    tokens = _WORD_TOKEN.findall(normalized)
    if (_sentence_words(normalized) if unspaced else len(tokens)) < MIN_CLAIM_WORDS:
        return "a fragment"
    if unspaced:  # a piece of a script without spaces is a content word, never a number
        return _HEADING if _heading(stripped) else None
    for token in tokens:  # a content word that is not a number (``content_words``' rule)
        if len(token) >= 2 and not token.isdigit() and token not in STOPWORDS:
            return _HEADING if _heading(stripped) else None
    return _NAMES_NOTHING


def _says_a_content_word(normalized: str) -> bool:
    """The usual case of ``_word_rules``, without cutting the text into tokens: at least
    ``MIN_CLAIM_WORDS`` space-separated words hold a letter or digit (each holds a token, so
    there are that many tokens at least), and one of them, edge punctuation aside, is a whole
    run of letters, two or more, and no function word (a content word that is not a number).
    False says nothing: the tokens then decide."""
    words = normalized.split()
    if len(words) < MIN_CLAIM_WORDS:
        return False
    content = False
    counted = 0
    for word in words:
        if (
            counted < MIN_CLAIM_WORDS
            and not word.isalnum()
            and not any(ch.isalnum() for ch in word)
        ):
            continue
        counted += 1
        if not content:
            core = word.strip(_EDGE_PUNCTUATION)
            content = len(core) >= 2 and core.isalpha() and core not in STOPWORDS
        if content and counted >= MIN_CLAIM_WORDS:
            return True
    return False


_NAMES_NOTHING = "a fragment that names nothing (numbers and function words only)"
_MID_SENTENCE = "a piece of a sentence (it starts mid-sentence)"
# Words that, written in lower case at the very start, continue a sentence begun elsewhere
# ("for any additional costs that the plan does not cover.", cut at a PDF's page break):
# conjunctions, prepositions, relatives, articles and the verb "to be"; never a name's particle
# ("van Gogh painted ...", "de Gaulle ...").
_CONTINUING = frozenset(
    "and or but nor for of to in on at by with from into than as which that whom whose who if "
    "so the a an its their is are was were be".split()
)
_FIRST_WORD = re.compile(r"[^\W\d_]+")


def _starts_mid_sentence(stripped: str) -> bool:
    """Whether ``stripped`` opens with a lower-case word that continues a sentence."""
    first = _FIRST_WORD.match(stripped)
    return first is not None and first.group(0) in _CONTINUING


_LEANS_BACK = (
    "a sentence that leans on the one before it (it opens with a word that stands for "
    'something said there: "this", "these", "it", "also", "in addition", ...)'
)
_POINTER = (
    'a pointer to text that is not there (a line ending with a colon, "the following ...", '
    '"... may refer to"), not a statement'
)
# A line that introduces what follows it, or a disambiguation page's line: "Crimean campaign
# can refer to:", "The following lists the number one best-selling singles ...", "Benefits
# include:". (A heading with a colon inside, "Eligibility: All Full-Time Employees", states a
# value and passes: the colon must end the line.)
_FOLLOWING = re.compile(
    r"the following (?:is|are|lists?|table|tables|list|shows?|describes?|gives?|provides?)\b"
)
_REFERS = re.compile(r"\b(?:may|can|might) (?:also )?refer to\b")


def _points_elsewhere(stripped: str) -> bool:
    """Whether ``stripped`` is a lead-in (it ends with a colon, closing marks aside), a
    disambiguation line ("... may refer to") or a pointer to a list ("The following lists
    ..."). String tests first: the patterns run only where they can match."""
    if stripped.rstrip(" \"'\u201d)*_").endswith(":"):
        return True
    if "refer to" in stripped and _REFERS.search(stripped.lower()) is not None:
        return True
    opening = stripped[:40].lstrip("\"'\u201c(*_ ").lower()
    return opening.startswith("the following ") and _FOLLOWING.match(opening) is not None


# Demonstratives opening a claim stand for what a sentence before it said: "This will help you
# to ensure ...", "That's why our plan provides ...", "These sources do not speak of ...".
# Followed by a capitalised word or "'70s" they start a title ("This Is Us was created by
# ...", "That '70s Show aired ..."). A plural personal pronoun is left alone: in an answer it
# mostly stands for what the question named ("They shoot Guy's Grocery Games inside Field's
# Market ..." for "where do they shoot Guy's Grocery Games"); "It" is not (``_IT``). Read
# after any opening quotes, brackets and bullets; matched as written, capitalised.
_LEADING = "\"'\u201c\u2018\u201e\u2039\u00ab([*_> \t\u00a0\u2022\u00b7\u25aa\u25e6\u2023\u2219"
# A list item's mark at the start of a claim copied from a list: "• ", "- ", "3. ", "(b) " (the
# pipeline drops it from the served text: ``pipeline.served_text``).
LIST_MARK = re.compile(r"\s*(?:[•·▪◦‣∙*\-–—]|\(?(?:\d{1,2}|[a-z])[.)])\s+")
_DEMONSTRATIVE = re.compile(
    r"(This|That|These|Those)(?:['\u2019][a-z]{1,2})?(?:\*\*|__)?(?:\s+(\S\S?)|\s*$|[,.;:!?])"
)


# Openings that stand for what a sentence before said, besides the demonstratives: a
# connective ("In addition, Su Mingcheng also broke the news ...", "However, ..."), and "It",
# "He" or "She" as a subject ("It has a length of 365 days ...", "She was the first ever winner
# of this title"), unless it opens "It is important to ..." (an expletive: what follows says
# what it is about) or a title ("It Follows was ...").
_CONNECTIVE = re.compile(
    r"(?:In addition|Additionally|Also(?! known)|Furthermore|Moreover|Besides|However|"
    r"Likewise|Similarly|Therefore|Thus(?! far)|Hence|Consequently|As a result|Nevertheless|"
    r"Nonetheless|Meanwhile|Otherwise|Instead)\b(?!-)"
)
_IT = re.compile(
    r"(?:It(?:['\u2019]s)?|He|She)\s+(?=[a-z])(?!(?:is|was|'s|\u2019s|will be|would be|"
    r"may be|can be|has been|had been)\s+(?:\w+\s+){0,2}?(?:to|that|for|whether)\b)"
)


# The first words of those openings: the patterns run only after one of them.
_OPENING_WORDS = frozenset(
    "In Additionally Also Furthermore Moreover Besides However Likewise Similarly Therefore "
    "Thus Hence Consequently As Nevertheless Nonetheless Meanwhile Otherwise Instead It It's "
    "It\u2019s He She".split()
)


def _leans_back(stripped: str) -> bool:
    """Whether ``stripped`` opens (after quotation marks, brackets and a list mark) with a
    word standing for something said before it: a demonstrative ("This", "That", "These",
    "Those", then anything but a capitalised word or "'70s": those start a title), a
    connective ("In addition", "Also", "However", ...: ``_CONNECTIVE``) or "It", "He" or "She"
    as a subject (``_IT``: "She was the first ever winner of this title ...")."""
    opening = stripped.lstrip(_LEADING)
    mark = LIST_MARK.match(opening)
    if mark:
        opening = opening[mark.end() :].lstrip(_LEADING)
    first = opening[:14].split(" ", 1)[0].rstrip(",")
    if first in _OPENING_WORDS and (
        _CONNECTIVE.match(opening) is not None or _IT.match(opening) is not None
    ):
        return True
    found = _DEMONSTRATIVE.match(opening)
    if found is None:
        return False
    after = found.group(2)  # the next word's first two characters
    title = after is not None and (
        after[0].isupper() or (after[0] in "'\u2019" and after[1:].isdigit())
    )
    return not title


_HEADING = "a heading, not a statement"


def _heading(claim: str) -> bool:
    """A claim that reads as a heading; "Eligibility: All Full-Time Employees" (a label and its
    value) states something, so a colon inside keeps it a claim, unless what stands before it
    is a heading in capitals ("HOW PROVIDERS AFFECT YOUR COSTS: Balance Billing Protection":
    a section's heading, then its subsection's)."""
    if ":" not in claim:
        return reads_as_heading(claim)
    label, _, _ = claim.partition(":")
    return len(label.split()) >= 2 and label.isupper() and reads_as_heading(claim)


def _fragment_by_definition(stripped: str) -> str | None:
    """``fragment``'s word rules, from the definitions (``_sentence_words`` and
    ``content_words``) on the normalised text: its fast paths give the same answers (a
    property test checks it)."""
    if _starts_mid_sentence(stripped):
        return _MID_SENTENCE
    if _points_elsewhere(stripped):
        return _POINTER
    normalized = normalize(stripped)
    if _sentence_words(normalized) < MIN_CLAIM_WORDS:
        return "a fragment"
    if all(word.isdigit() for word in content_words(normalized)):
        return _NAMES_NOTHING
    if _heading(stripped):
        return _HEADING
    return _LEANS_BACK if _leans_back(stripped) else None


def _sentence_words(normalized: str) -> float:
    """Words, where scripts without spaces count by their characters: two Chinese or Japanese
    characters, or five Thai characters (vowel marks included), make about a word."""
    if UNSPACED.search(normalized) is None:
        return len(_WORD_TOKEN.findall(normalized))
    return unspaced_words(normalized) + len(_WORD_TOKEN.findall(UNSPACED.sub(" ", normalized)))


def _shown(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _relevant(
    n: int,
    claim: str,
    results: list[Citation],
    passing: list[int],
    evidence: list[Evidence],
    numbered: list[str],
) -> None:
    """Each passing citation whose own evidence shares no content word, number or identifier
    with its claim is ``unrelated_evidence`` (a verbatim quote about something else: a
    decoration). Run after the claim's facts were found in the evidence: a citation holding
    one of them shares it, so dropping the others loses no fact. A claim with no content word
    is not judged. ``numbered``: the claim's ``digit_tokens``, its numbers and identifiers as
    written (one of them in the evidence shares a content word with it: the first look)."""
    said = _ContentTokens(claim)  # read once, as far as needed, for all of its citations
    wanted: frozenset[str] | None = None  # the claim's stems: only where no word is shared
    for i, found in zip(passing, evidence, strict=True):
        if any(contains_words(found.text, token) for token in numbered) or said.one_in(found.text):
            continue  # a number, identifier or content word of the claim, as written
        if wanted is None:
            wanted = content_words(claim)
            if not wanted:
                return
        if wanted.isdisjoint(found.content):
            cited = results[i].source
            message = f"claim {n}: the evidence from {cited} shares no word with the claim"
            results[i] = replace(
                results[i], valid=False, reason="unrelated_evidence", span=None, message=message
            )


_WORD_TOKEN = re.compile(r"[^\W_]+")
_EDGE_PUNCTUATION = "\"'.,;:!?()[]{}"


class _ContentTokens:
    """The claim's space-separated tokens that are a whole run of letters or digits (edge
    punctuation aside) and no function word: content words as written, each once, read from
    the claim only as far as a question about them needs (most evidence holds one of the first
    few), and kept for the next question."""

    __slots__ = ("_read", "_rest", "_seen")

    def __init__(self, claim: str) -> None:
        self._rest = iter(claim.split())
        self._read: list[str] = []
        self._seen: set[str] = set()

    def one_in(self, text: str) -> bool:
        """Whether one of them occurs in ``text`` on word bounds: then the claim's content
        words and the text's surely meet (the fast half of ``_relevant``)."""
        for word in self._read:
            if contains_words(text, word):
                return True
        seen, read = self._seen, self._read
        for token in self._rest:
            word = token.strip(_EDGE_PUNCTUATION)
            if (
                not word.isalnum()
                or (len(word) < 2 and not word.isdigit())
                or word in STOPWORDS
                or word in seen
            ):
                continue
            seen.add(word)
            read.append(word)
            if contains_words(text, word):
                return True
        return False


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


# How much of a claim's content words the sentence the code cites for it must hold: two thirds
# (three at least) when an entailment tier judges it next, as ``ask`` runs by default; all of
# them when nothing will (``share=1.0``).
ANCHOR_SHARE = 2 / 3
ANCHOR_LEAST = 3  # two shared words are a topic, not a statement
ANCHOR_CANDIDATES = 3  # the nearest sentences tried, most shared words first
_NEGATION = frozenset("not no never none nor neither cannot without".split())


def reanchor(
    verdict: Verdict,
    ws: WorkingSet,
    policy: Policy = DEFAULT_POLICY,
    share: float = ANCHOR_SHARE,
    reasons: frozenset[str] = REANCHORABLE,
) -> Verdict:
    """``verdict`` with each claim that was dropped only because its citations did not carry it
    (a verbatim quote of the wrong sentence or of another source, a number its quote lacks:
    ``reasons.REANCHORABLE``; with ``reasons=AFTER_ENTAILMENT``, also a quote the entailment tier
    found did not say it) checked again against the sentences of ``ws`` nearest to it: those
    holding at least ``share`` of its content words (three at least), with a "not" where the
    claim has one and none where it has none, the model's failed quotes skipped, the nearest
    ``ANCHOR_CANDIDATES`` tried in turn (``coverage.nearest_sentences``); never the user's own
    message. The claim is kept, that sentence its first citation (``anchored``, the model's
    own after it), only when it passes every check a citation the model wrote would: quote
    length, span, numbers, identifiers, relevance, and, in the pipeline, the entailment tier
    after this. A fragment is never re-anchored. The model chose the claim; the code only finds
    where the sources say it."""
    if not any(_reanchorable(c, reasons) for c in verdict.claims):
        return verdict
    sources = [(src.id, src.text) for src in ws.sources if src.kind != "user"]
    claims = list(verdict.claims)
    changed = False
    for i, claim in enumerate(claims):
        if not _reanchorable(claim, reasons):
            continue
        negated = _negated(claim.text)
        # what the model cited and failed (a quote right but in another source is not)
        failed = {(c.source, normalize(c.quote).strip()) for c in claim.citations if c.quote}
        ranked = nearest_sentences(claim.text, sources, (), ANCHOR_LEAST, share)
        tried = [(sid, s) for sid, s in ranked if (sid, normalize(s).strip()) not in failed]
        for sid, sentence in tried[:ANCHOR_CANDIDATES]:
            if _negated(sentence) != negated:
                continue
            cited = ParsedCitation(sid, sid, sentence.strip(), needs_quote=True)
            checked = _check_claim(ws, i + 1, ParsedClaim(claim.text, [cited]), policy)
            if checked.kept:
                placed = replace(checked.citations[0], anchored=True)
                claims[i] = Claim(claim.text, (placed, *claim.citations), True)
                changed = True
                break
    return _with_claims(verdict, claims, "anchor") if changed else verdict


def quoted_sentences(verdict: Verdict, ws: WorkingSet, policy: Policy = DEFAULT_POLICY) -> Verdict:
    """``verdict`` with each claim dropped by the support tier alone (a citation of it passed
    every code check, its quote verbatim and sharing the claim's words, and the tier found the
    quote does not say the claim: ``not_entailed``) served as the cited source's own sentence
    that holds that quote: the source's words, quoted whole (seed 003's quote-then-answer), a
    claim that says exactly what its evidence says. The model's claim is kept beside it
    (``Claim.restates``). Only where that sentence is itself a claim (``fragment`` passes it),
    within the quote bounds, and passes every code check as a quote of itself; the pipeline's
    answer check then decides whether it answers the question. Abstaining is left to evidence
    that the sources do not answer, not to a paraphrase the tier could not follow."""
    claims = list(verdict.claims)
    changed = False
    for i, claim in enumerate(claims):
        if claim.kept:
            continue
        judged = [c for c in claim.citations if c.reason == "not_entailed" and c.span]
        for cited in judged:
            sid = cited.source or ""
            sentence = _sentence_at(ws, sid, cited.span or (0, 0))
            if sentence is None or fragment(sentence) is not None:
                continue
            quote = ParsedCitation(sid, sid, sentence, needs_quote=True)
            checked = _check_claim(ws, i + 1, ParsedClaim(sentence, [quote]), policy)
            if checked.kept:
                claims[i] = replace(checked, restates=claim.text)
                changed = True
                break
    return _with_claims(verdict, claims, "quoted") if changed else verdict


def _with_claims(verdict: Verdict, claims: list[Claim], tier: str) -> Verdict:
    """``verdict`` with ``claims`` in place of its own, its status settled again, and ``tier``
    among the checks that ran."""
    done = tuple(claims)
    tiers = verdict.tiers if tier in verdict.tiers else (*verdict.tiers, tier)
    return replace(verdict, claims=done, status=verdict_status(done), tiers=tiers)


def _sentence_at(ws: WorkingSet, sid: str, span: tuple[int, int]) -> str | None:
    """The whole sentences of source ``sid`` that ``span`` lies in, as written, or None."""
    src = ws.get(sid)
    if src is None or src.kind == "user":
        return None
    start = end = None
    for a, b in sentence_spans(src.text):
        if a <= span[0] < b or (start is None and span[0] < a):
            start = a if start is None else start
        if start is not None:
            end = b
            if b >= span[1]:
                break
    if start is None or end is None:
        return None
    return src.text[start:end].strip() or None


def _negated(text: str) -> bool:
    words = normalize(text).replace("n't", " not").split()
    return any(w.strip(_EDGE_PUNCTUATION) in _NEGATION for w in words)


def _reanchorable(claim: Claim, reasons: frozenset[str]) -> bool:
    if claim.kept or claim.reason == "claim_fragment" or not claim.citations:
        return False
    return all(c.reason in reasons for c in claim.citations)


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


_FACT_NAMES = {
    "identifier": "identifier",
    "number": "number",
    "quoted_text": "quoted words",
    "name": "name",
}


def _fact_label(gap: Missing) -> str:
    """``identifier PROT-X``, ``numbers 14, 16``: the facts a gap names, in words."""
    name = _FACT_NAMES[gap.kind]
    plural = "s" if len(gap.items) > 1 and gap.kind != "quoted_text" else ""
    return f"{name}{plural} {', '.join(gap.items)}"


def _support_message(n: int, gap: Missing, passing: list[Citation]) -> str:
    cited = ", ".join(dict.fromkeys(c.source or "" for c in passing))
    where = "the quotes from" if any(c.quote for c in passing) else ""
    return f"claim {n}: {_fact_label(gap)} not found in {where} {cited}".replace("  ", " ")


_Checked = tuple[Citation, Evidence | None]  # a citation checked, and its evidence if it passed


def _failed(cit: ParsedCitation, reason: str, message: str) -> _Checked:
    return Citation(cit.ref, cit.source_id, cit.quote, False, reason, None, message), None


def _check_citation(ws: WorkingSet, n: int, cit: ParsedCitation, policy: Policy) -> _Checked:
    sid = cit.source_id
    source = None if sid is None else ws.get(sid)
    if sid is None or source is None:
        return _failed(cit, "unknown_source", f"claim {n} cites {cit.ref!r}, which was not sent")
    if source.kind == "user" and not policy.user_is_evidence:
        return _failed(cit, "cites_user_message", f"claim {n} cites {sid}, the user's own message")
    if cit.quote is None or not cit.quote.strip():
        if cit.needs_quote:
            return _failed(cit, "quote_missing", f"claim {n}: citation of {sid} has no quote")
        return Citation(cit.ref, sid, cit.quote, True), ws.evidence(sid)
    return _check_quote(ws, n, cit, sid, cit.quote, policy)


_UNSPACED_COUNT = " (two Chinese or Japanese characters, or five Thai, count as a word)"


def _check_quote(
    ws: WorkingSet, n: int, cit: ParsedCitation, sid: str, quote: str, policy: Policy
) -> _Checked:
    full = normalize(quote)
    trimmed_ = trimmed(full)
    words = count_words(trimmed_)
    if words < policy.min_quote_words:
        counted = _UNSPACED_COUNT if UNSPACED.search(trimmed_) is not None else ""
        return _failed(
            cit,
            "quote_too_short",
            f"claim {n}: quote from {sid} has {words} words{counted}, fewer than "
            f"{policy.min_quote_words}",
        )
    if words > policy.max_quote_words:
        return _failed(
            cit,
            "quote_too_long",
            f"claim {n}: quote from {sid} has {words} words, more than {policy.max_quote_words}",
        )
    candidates = [full] if trimmed_ == full else [full, trimmed_]
    for cand in candidates:
        span = ws.locate(sid, cand)
        if span is not None:
            return Citation(cit.ref, sid, quote, True, None, span), Evidence(cand)
    marked = _locate_in_markup(ws, sid, candidates)
    if marked is not None:
        return Citation(cit.ref, sid, quote, True, None, marked), Evidence(full)
    parts = split_quote(trimmed_)
    if parts is not None:
        return _check_parts(ws, n, cit, sid, quote, parts, policy)
    holder = ws.holder_of(candidates, exclude=sid)
    if holder is not None:
        return _failed(
            cit,
            "quote_in_other_source",
            f"claim {n}: quote is not in the cited {sid} but in {holder}",
        )
    return _failed(cit, "quote_not_found", f"claim {n}: quote not found in {sid}")


def _check_extracted(ws: WorkingSet, n: int, cit: ParsedCitation, policy: Policy) -> _Checked:
    """A quote the provider extracted (Anthropic's ``cited_text``): the quote bounds stop a
    model from quoting a page or a scrap, and whole sentences of the document, chosen by the
    API, are neither; so a quote that stands in the cited source as whole sentences of it
    (``_whole_sentences``) passes whatever its length. Anything else (a forged one-word
    ``cited_text``, a piece of a sentence) is held to the bounds as any quote is. Every other
    check applies."""
    free = replace(policy, min_quote_words=1, max_quote_words=_NO_CAP)
    result, found = _check_citation(ws, n, cit, free)
    if not result.valid or result.source is None or result.span is None:
        return _check_citation(ws, n, cit, policy)
    if _whole_sentences(ws, result.source, result.parts):
        return result, found
    return _check_citation(ws, n, cit, policy)


_NO_CAP = 1 << 30
_OPENING_EDGE = "\"'\u201c\u2018([*_"
_CLOSING_EDGE = "\"'\u201d\u2019)]*_.!?"


def _whole_sentences(ws: WorkingSet, sid: str, parts: tuple[tuple[int, int], ...]) -> bool:
    """Whether each span of ``parts`` starts where a sentence of the source starts and ends
    where one ends (opening and closing marks, and the stop, at the edges aside)."""
    src = ws.get(sid)
    if src is None or not parts:
        return False
    text = src.text
    spans = sentence_spans(text)
    starts = {a for a, _ in spans}
    ends = {b for _, b in spans}
    for a, b in parts:
        while a not in starts and a > 0 and text[a - 1] in _OPENING_EDGE:
            a -= 1
        while b not in ends and b < len(text) and text[b] in _CLOSING_EDGE:
            b += 1
        if a not in starts or b not in ends:
            return False
    return True


def _with_native(ws: WorkingSet, result: Citation, said: dict[str, Any]) -> Citation:
    """``result`` with what the provider said about it, and whether that agrees with what the
    verifier found: character offsets against the verified span (the provider's own place is
    kept when the quote stands there too: a quote may occur twice), a page range against the
    source's page."""
    native = dict(said)
    src = ws.get(result.source) if result.source else None
    offsets, pages = native.get("offsets"), native.get("pages")
    agrees: bool | None = None
    found = result.span
    if offsets is not None and found is not None and src is not None:
        start, end = offsets
        agrees = (start, end) == found
        if not agrees and result.quote and result.spans is None:
            at = _quote_at(ws.normalized(src.id), trimmed(normalize(result.quote)), start, end)
            if at is not None:  # the quote stands, whole words, where the provider says too
                agrees, result = True, replace(result, span=at)
        if not agrees:
            native["found"] = list(found)
    elif pages is not None and src is not None and src.page is not None:
        # ``page`` is where the source starts: it may run on to later pages, never earlier
        agrees = (
            True if pages[0] <= src.page < pages[1] else (False if src.page >= pages[1] else None)
        )
    native["agrees"] = agrees
    return replace(result, native=native)


def _quote_at(nt: NormalizedText, quoted: str, start: int, end: int) -> tuple[int, int] | None:
    """The original span of the normalised ``quoted`` where it starts at original ``start``
    (edge spaces aside) and ends by ``end``, on word bounds; None if it does not stand there."""
    if not quoted or not 0 <= start < end <= len(nt.original):
        return None
    at = nt.normalized_at(start)
    if at is None:
        return None
    while at < len(nt.text) and nt.text[at] == " ":
        at += 1
    stop = at + len(quoted)
    if not nt.text.startswith(quoted, at):
        return None
    if not on_word_bounds(nt.text, at, stop, quoted[0].isalnum(), quoted[-1].isalnum()):
        return None
    span = nt.span(at, stop)
    return span if span is not None and span[1] <= end else None


def _locate_in_markup(ws: WorkingSet, sid: str, candidates: list[str]) -> tuple[int, int] | None:
    """The original span of a quote that occurs in the cited source once its inline markup is
    left out (``**16 weeks** of leave`` quoted as ``16 weeks of leave``), else None."""
    view = ws.markup_view(sid)
    if view is None:
        return None
    nt, keep = view
    for cand in candidates:
        span = nt.locate(cand)
        if span is not None:
            return original_span(keep, span)
    return None


# With a part below the word floor, an elided quote's parts must stand within this many
# characters of the cited source, first part's start to last part's end: one passage, a few
# sentences ("BRCA1 plays a critical role in DNA repair ... homologous recombination").
ELISION_WINDOW = 400


def _short_part_counts(pieces: tuple[str, ...], words: int) -> bool:
    """Whether a part below the word floor still says something: two words or more, not all
    function words, or one word that is a number or identifier (it holds a digit)."""
    said = " ".join(trimmed(p) for p in pieces)
    if words >= 2:
        return any(w not in STOPWORDS for w in _WORD_TOKEN.findall(said))
    return words == 1 and any(ch.isdigit() for ch in said)


def _check_parts(
    ws: WorkingSet,
    n: int,
    cit: ParsedCitation,
    sid: str,
    quote: str,
    q: QuoteParts,
    policy: Policy,
) -> _Checked:
    """A quote with an elision or a bracketed insertion inside it, not found as written: each
    part (the text between elisions) meets the word floor and occurs in the cited source, in
    order, not overlapping (``text.quoteparts``); what a bracket adds may not negate or
    quantify, and its identifiers and numbers must be in the cited source; it is not evidence
    (the claim's facts must be in the verbatim pieces). One span per part."""
    total = 0
    short = False  # a part below the floor: the parts must then stand close together
    for i, pieces in enumerate(q.parts):
        words = sum(count_words(trimmed(p)) for p in pieces)
        total += words
        if words >= policy.min_quote_words:
            continue
        if not q.elided:
            return _failed(
                cit,
                "quote_too_short",
                f"claim {n}: the quote outside its brackets from {sid} has {words} words, "
                f"fewer than {policy.min_quote_words}",
            )
        if not _short_part_counts(pieces, words):
            return _failed(
                cit,
                "quote_too_short",
                f"claim {n}: part {i + 1} of the quote from {sid} ({_shown(' '.join(pieces))}) "
                "is too short to stand for anything: a short part needs two words that are not "
                "all function words, or one number or identifier",
            )
        short = True
    if total < policy.min_quote_words:
        return _failed(
            cit,
            "quote_too_short",
            f"claim {n}: quote from {sid} has {total} words in its parts, fewer than "
            f"{policy.min_quote_words}",
        )
    spans, missing = locate_parts(ws.normalized(sid), q)
    view = ws.markup_view(sid) if missing is not None else None
    if view is not None:  # the parts may stand in the source with its markup left out
        in_markup, not_placed = locate_parts(view[0], q)
        if not_placed is None:
            spans, missing = [original_span(view[1], x) for x in in_markup], None
    if missing is not None:
        pieces = q.parts[missing]
        shown = _shown(" ".join(pieces))
        if q.elided:
            where = f" after part {missing}" if missing else ""
            message = f"claim {n}: part {missing + 1} of the quote ({shown}) is not in {sid}{where}"
        else:
            message = f"claim {n}: the quote outside its brackets ({shown}) is not in {sid}"
        holder = ws.holder_of([max(pieces, key=len)], exclude=sid)
        if holder is not None:
            message += f"; it is in {holder}: every part must come from the source cited"
        return _failed(cit, "quote_not_found", message)
    for text in q.insertions:
        if adds_polarity(text):
            message = (
                f"claim {n}: the quote's bracketed [{text}] negates or quantifies what the "
                f"source says: quote {sid}'s own words for that"
            )
            return _failed(cit, "quote_not_found", message)
    insertions = [Evidence(text) for text in q.insertions]
    source = ws.evidence(sid)
    for ins in insertions:
        gap = claim_gap(ins.text, [source], ignore=ws.id_tokens)
        if gap is not None:
            message = (
                f"claim {n}: the quote's bracketed [{ins.text}] names {_fact_label(gap)}, "
                f"not found in {sid}"
            )
            return _failed(cit, _SUPPORT_REASON[gap.kind], message)
    cover = (spans[0][0], spans[-1][1])
    if short and cover[1] - cover[0] > ELISION_WINDOW:
        message = (
            f"claim {n}: the quote's parts span {cover[1] - cover[0]} characters of {sid}; with "
            f"a short part they must stand within {ELISION_WINDOW}: quote more of each part"
        )
        return _failed(cit, "quote_too_short", message)
    citation = Citation(
        cit.ref, sid, quote, True, None, cover, spans=tuple(spans) if len(spans) > 1 else None
    )
    return citation, Evidence(q.verbatim)  # what the brackets say is not evidence
