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

from dataclasses import replace

from .budget import Budget, over_time
from .citations import check_citation, check_extracted, with_native
from .errors import InputError
from .fragments import LEANS_BACK, LIST_MARK, fragment, lean_on_kept, refused
from .parsing import FORMATS, Parsed, ParsedClaim, parse
from .sources import WorkingSet
from .support import (
    SUPPORT_REASON,
    Missing,
    claim_gap,
    fact_label,
    missing_names,
    states_number_or_date,
)
from .text.changes import Words, approximation_left_out, changed_word
from .text.display import shown
from .text.normalize import normalize, scrub
from .text.tokens import Evidence, digit_tokens
from .text.words import EDGE_PUNCTUATION, STOPWORDS, contains_words, content_words
from .verdict import DEFAULT_POLICY, Citation, Claim, Policy, Verdict, settled_claim, verdict_status


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
        claims = tuple(check_claim(ws, n, c, policy) for n, c in enumerate(parsed.claims, 1))
    else:
        checked = []
        for n, c in enumerate(parsed.claims, 1):
            over_time(deadline, seconds)
            checked.append(check_claim(ws, n, c, policy))
        claims = tuple(checked)
    if policy.sentences:
        claims = lean_on_kept(claims, policy.strict, ws if policy.strict else None)
    status = verdict_status(claims)
    return Verdict(status, claims=claims, answerable=True, **common)  # type: ignore[arg-type]


def check_claim(ws: WorkingSet, n: int, claim: ParsedClaim, policy: Policy) -> Claim:
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
            result, found = check_extracted(ws, n, cit, policy)
        else:
            result, found = check_citation(ws, n, cit, policy)
        if cit.native is not None:
            result = with_native(ws, result, cit.native)
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
                message = f"claim {n}: item {k} ({shown(text)}) has no valid citation of its own"
                settled = replace(settled, kept=False, reason="no_valid_citation", message=message)
                break
    # a claim-level fault: strict, its reason whatever its citations' are; else a note on a
    # kept claim (a dropped one is not served: the rule could change nothing there)
    if policy.sentences and (policy.strict or settled.kept):
        why = fragment(claim.text, normalized)
        if why is not None and why != LEANS_BACK:  # (leaning: ``lean_on_kept`` decides)
            if policy.strict:
                return refused(n, claim.text, settled, why)
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
                results[i], valid=False, reason=SUPPORT_REASON[gap.kind], message=message
            )
        return
    said_words: Words | None = None  # the claim's words, read once for its quotes
    for i, found in zip(passing, evidence, strict=True):
        if results[i].quote and results[i].span is not None:
            if said_words is None:
                said_words = Words(normalized)
            change = changed_word(said_words, found.text)
            if change is None and numbered:
                change = approximation_left_out(normalized, found.text)
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
            word = token.strip(EDGE_PUNCTUATION)
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


def _support_message(n: int, gap: Missing, passing: list[Citation]) -> str:
    cited = ", ".join(dict.fromkeys(c.source or "" for c in passing))
    where = "the quotes from" if any(c.quote for c in passing) else ""
    return f"claim {n}: {fact_label(gap)} not found in {where} {cited}".replace("  ", " ")
