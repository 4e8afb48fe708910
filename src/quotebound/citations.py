"""A citation's own checks, up to the span stage: the id was sent, the source may be cited,
and the quote is there, within the word bounds and verbatim in the *cited* source (as written,
under its inline markup, or in parts around an elision or an editorial bracket); a provider's
own citation (``native``) mapped onto the span it names. ``check_citation`` returns the
checked ``Citation`` and, when it passed, the evidence that the support checks then read
(``verify``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .parsing import ParsedCitation
from .reasons import CitationReason
from .sources import WorkingSet
from .support import SUPPORT_REASON, claim_gap, fact_label
from .text.display import shown
from .text.markup import original_span
from .text.normalize import NormalizedText, normalize
from .text.quoteparts import QuoteParts, adds_polarity, locate_parts, split_quote
from .text.sentences import sentence_spans
from .text.tokens import Evidence
from .text.words import STOPWORDS, UNSPACED, WORD_TOKEN, count_words, on_word_bounds, trimmed
from .verdict import Citation, Policy

Checked = tuple[Citation, Evidence | None]  # a citation checked, and its evidence if it passed


def _failed(cit: ParsedCitation, reason: CitationReason, message: str) -> Checked:
    return Citation(cit.ref, cit.source_id, cit.quote, False, reason, None, message), None


def check_citation(ws: WorkingSet, n: int, cit: ParsedCitation, policy: Policy) -> Checked:
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
) -> Checked:
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


def check_extracted(ws: WorkingSet, n: int, cit: ParsedCitation, policy: Policy) -> Checked:
    """A quote the provider extracted (Anthropic's ``cited_text``): the quote bounds stop a
    model from quoting a page or a scrap, and whole sentences of the document, chosen by the
    API, are neither; so a quote that stands in the cited source as whole sentences of it
    (``_whole_sentences``) passes whatever its length. Anything else (a forged one-word
    ``cited_text``, a piece of a sentence) is held to the bounds as any quote is. Every other
    check applies."""
    free = replace(policy, min_quote_words=1, max_quote_words=_NO_CAP)
    result, found = check_citation(ws, n, cit, free)
    if not result.valid or result.source is None or result.span is None:
        return check_citation(ws, n, cit, policy)
    if _whole_sentences(ws, result.source, result.parts):
        return result, found
    return check_citation(ws, n, cit, policy)


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


def with_native(ws: WorkingSet, result: Citation, said: dict[str, Any]) -> Citation:
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
        return any(w not in STOPWORDS for w in WORD_TOKEN.findall(said))
    return words == 1 and any(ch.isdigit() for ch in said)


def _check_parts(
    ws: WorkingSet,
    n: int,
    cit: ParsedCitation,
    sid: str,
    quote: str,
    q: QuoteParts,
    policy: Policy,
) -> Checked:
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
                f"claim {n}: part {i + 1} of the quote from {sid} ({shown(' '.join(pieces))}) "
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
        said = shown(" ".join(pieces))
        if q.elided:
            where = f" after part {missing}" if missing else ""
            message = f"claim {n}: part {missing + 1} of the quote ({said}) is not in {sid}{where}"
        else:
            message = f"claim {n}: the quote outside its brackets ({said}) is not in {sid}"
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
                f"claim {n}: the quote's bracketed [{ins.text}] names {fact_label(gap)}, "
                f"not found in {sid}"
            )
            return _failed(cit, SUPPORT_REASON[gap.kind], message)
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
