"""The verdict's closed vocabulary: statuses and reason codes, each reason with its stage.

Written once, here: the verifier, the entailment tier, evaluation and the docs tests read these
tables, and ``docs/reasons.md`` documents every entry (a test checks it).

A citation's checks run in stage order and the first failure is its reason:

- ``id``: the ref names a source of the working set;
- ``policy``: the source may be cited (not the user's own message, unless allowed);
- ``span``: the quote is there, of an allowed length, and verbatim in the *cited* source;
- ``support``: each citation's own evidence bears on its claim (shares a content word, number
  or identifier with it), and the claim's identifiers, numbers and quoted words are in the
  evidence of the citations that passed;
- ``entailment``: (the optional tier) the evidence entails the claim.

A citation that failed at ``id``, ``policy`` or ``span`` carries no text that was checked;
one that failed later did pass those.
"""

from __future__ import annotations

from typing import Literal, get_args

Stage = Literal["id", "policy", "span", "support", "entailment"]
STAGES: tuple[Stage, ...] = ("id", "policy", "span", "support", "entailment")

STATUSES: dict[str, str] = {
    "grounded": "every claim was kept",
    "partial": "some claims were kept and some dropped",
    "ungrounded": "no claim was kept (or the answer made none)",
    "abstained": "the model said the sources do not answer the question",
    "unparseable": "the output could not be read in the expected format",
}

# The codes, as types: a verdict's ``Citation.reason`` and ``Claim.reason`` (mypy checks each
# code the checks write); the tables below say each one's stage and meaning, and hold exactly
# these (checked when this module loads).
CitationReason = Literal[
    "unknown_source",
    "cites_user_message",
    "quote_missing",
    "quote_too_short",
    "quote_too_long",
    "quote_not_found",
    "quote_in_other_source",
    "unrelated_evidence",
    "identifier_not_in_source",
    "number_not_in_source",
    "quoted_text_not_in_source",
    "quote_word_changed",
    "name_not_in_source",
    "contradicted",
    "not_entailed",
    "entailment_error",
]
ClaimReason = Literal[
    "no_citation", "unmarked_claim", "no_valid_citation", "claim_fragment", "restates_question"
]

# code -> (stage, what it means)
_CITATION: dict[CitationReason, tuple[Stage, str]] = {
    "unknown_source": ("id", "the cited id is not in the working set that was sent"),
    "cites_user_message": (
        "policy",
        "the citation points at the user's own message, which is not evidence",
    ),
    "quote_missing": ("span", "the format requires a verbatim quote and the citation has none"),
    "quote_too_short": ("span", "the quote has fewer words than the policy's minimum"),
    "quote_too_long": ("span", "the quote has more words than the policy's maximum"),
    "quote_not_found": ("span", "the quote does not occur in the cited source"),
    "quote_in_other_source": (
        "span",
        "the quote occurs in another source of the set, not the cited one",
    ),
    "unrelated_evidence": (
        "support",
        "the cited evidence shares no content word, number or identifier with the claim",
    ),
    "identifier_not_in_source": (
        "support",
        "an identifier in the claim is not in the cited evidence",
    ),
    "number_not_in_source": ("support", "a number in the claim is not in the cited evidence"),
    "quoted_text_not_in_source": (
        "support",
        "words the claim puts in quotation marks are not in the evidence",
    ),
    "quote_word_changed": (
        "support",
        "the claim copies its quote but changes a word that reverses or narrows it",
    ),
    "name_not_in_source": (
        "support",
        "a proper name the claim states is not in the cited evidence or its source's title",
    ),
    "contradicted": (
        "entailment",
        "the entailment tier judged that the quote contradicts the claim",
    ),
    "not_entailed": (
        "entailment",
        "the entailment tier judged that the quote does not support the claim",
    ),
    "entailment_error": (
        "entailment",
        "the entailment tier could not check the quote (it fails closed)",
    ),
}

CITATION_REASONS: dict[CitationReason, str] = {code: text for code, (_, text) in _CITATION.items()}
REASON_STAGES: dict[CitationReason, Stage] = {code: stage for code, (stage, _) in _CITATION.items()}
CLAIM_REASONS: dict[ClaimReason, str] = {
    "no_citation": "the claim cites nothing",
    "unmarked_claim": "a sentence stating a number or date carries no citation marker",
    "no_valid_citation": "every citation of the claim failed a check",
    "claim_fragment": "the claim is not a statement a reader can take alone (a fragment such "
    'as "16 weeks", a question, a sentence opening with "This" that no claim before it '
    "explains, or the answer template's placeholder)",
    "restates_question": "the claim only restates the question (every content word of it is "
    "the question's): it answers nothing, whatever it cites (ask only)",
}


if set(get_args(CitationReason)) != set(_CITATION) or set(get_args(ClaimReason)) != set(
    CLAIM_REASONS
):  # pragma: no cover - a code added to a type and not to its table, or the other way
    raise ImportError("reasons.py: a reason code's type and its table disagree")


def reasons_of(*stages: Stage) -> frozenset[CitationReason]:
    """The citation reason codes of these stages."""
    return frozenset(code for code, stage in REASON_STAGES.items() if stage in stages)


# A citation that failed with one of these carries no text that was checked.
ID_SPAN_FAILURES = reasons_of("id", "policy", "span")

# The groupings the pipeline acts on, written here once.
# A claim dropped only for these had a verbatim quote (or one in another source) that did not
# carry it: the sentence that does may be elsewhere in the sources sent, and re-anchoring looks
# for it (``reanchor.reanchor``). A quote the model made up, ``quote_not_found``, is not among
# them: that is the repair turn's to name.
REANCHORABLE: frozenset[CitationReason] = frozenset(
    {
        "unrelated_evidence",
        "number_not_in_source",
        "identifier_not_in_source",
        "name_not_in_source",
        "quote_word_changed",
        "quote_in_other_source",
    }
)
# Also re-anchored when an entailment tier judges the placed sentence next: a verbatim quote
# the tier found did not say what the claim says.
AFTER_ENTAILMENT: frozenset[CitationReason] = REANCHORABLE | {"not_entailed"}
# A claim dropped for one of these had evidence that did not carry it: its quote was verbatim
# but said something else; the repair turn points the model at the sentence nearest the claim.
NOT_CARRIED: frozenset[CitationReason] = (REANCHORABLE - {"quote_in_other_source"}) | {
    "not_entailed"
}
