"""Names held to the evidence: a claim that renames what its quote is about is dropped
(``name_not_in_source``); the forms a reader accepts are kept."""

from __future__ import annotations

import pytest

from kits.verifykit import answer, check, cit, claim, one, only_citation
from quotebound import Policy, Source, WorkingSet
from quotebound.text.names import ClaimName, NameIndex, claim_names, name_swapped

PASSAGES = WorkingSet(
    [
        Source(
            "S1",
            "Estadio Maracaná is a multi-purpose stadium in Panama City, Panama. It holds "
            "5,500 people and is used mostly for football matches.",
            title="Estadio Maracaná",
        ),
        Source(
            "S2",
            "Robert John Kerr (born c. 1943) is a former Northern Irish politician, born in "
            "Portadown.",
        ),
        Source(
            "S3",
            "Isabella II was three years old when she ascended the throne of Spain in 1833.",
        ),
        Source(
            "S4",
            "Dr. A. P. J. Abdul Kalam launched the autobiography of the scientist in 2010. "
            "Kalam's speech was short.",
        ),
        Source(
            "S5",
            "Norman Ernest Borlaug was an agronomist. Borlaug received the Nobel Peace Prize "
            "in 1970 for his work on wheat.",
            title="Norman Borlaug",
        ),
        Source(
            "S6",
            "The Honorable Justice Philomena Mwilu is the Deputy Chief Justice of Kenya; "
            "the Bantu Education Act, a South African law, was enacted in 1953.",
        ),
    ]
)


def _reason(text: str, source: str, quote: str) -> str | None:
    verdict = check(one(text, source, quote), PASSAGES)
    return only_citation(verdict).reason


@pytest.mark.parametrize(
    ("text", "source", "quote"),
    [
        # the subject renamed to the one asked about (issue 53's swaps)
        (
            "Maracanã Stadium is in Panama City, Panama.",
            "S1",
            "Estadio Maracaná is a multi-purpose stadium in Panama City, Panama.",
        ),
        (
            "Sir John Robert Kerr was born in Portadown.",
            "S2",
            "Robert John Kerr (born c. 1943) is a former Northern Irish politician, born in "
            "Portadown.",
        ),
        (
            "Queen Elizabeth II was three years old when she ascended the throne of Spain.",
            "S3",
            "Isabella II was three years old when she ascended the throne of Spain",
        ),
    ],
)
def test_a_claim_naming_its_subject_otherwise_than_its_quote_is_dropped(
    text: str, source: str, quote: str
) -> None:
    verdict = check(one(text, source, quote), PASSAGES)
    assert not verdict.claims[0].kept
    cited = only_citation(verdict)
    assert cited.reason == "name_not_in_source"
    assert "name" in (cited.message or "")


@pytest.mark.parametrize(
    ("text", "source", "quote"),
    [
        # the name as the quote writes it, with a diacritic dropped
        (
            "Estadio Maracana is in Panama City.",
            "S1",
            "Estadio Maracaná is a multi-purpose stadium in Panama City",
        ),
        # initials and a title: "A P J Abdul Kalam" for "Dr. A. P. J. Abdul Kalam"
        (
            "In 2010 A P J Abdul Kalam launched the autobiography of the scientist.",
            "S4",
            "Dr. A. P. J. Abdul Kalam launched the autobiography of the scientist in 2010",
        ),
        # a possessive
        ("The speech by Kalam was short.", "S4", "Kalam's speech was short"),
        # a shorter form, and the full name from the source's title
        (
            "In 1970 Norman Borlaug received the Nobel Peace Prize.",
            "S5",
            "Borlaug received the Nobel Peace Prize in 1970",
        ),
        # a title and the person's name told in pieces; a country for its demonym
        (
            "The Deputy Chief Justice is Philomena Mwilu.",
            "S6",
            "The Honorable Justice Philomena Mwilu is the Deputy Chief Justice of Kenya",
        ),
        (
            "The Bantu Education Act was enacted in South Africa in 1953.",
            "S6",
            "the Bantu Education Act, a South African law, was enacted in 1953",
        ),
        # a name the evidence does not speak of is context, not a swap (relevance decides)
        (
            "In Panama City the stadium holds 5,500 people, as FIFA records show.",
            "S1",
            "It holds 5,500 people",
        ),
        # a sentence's capitalised first word is no name ("Perform", "Different")
        (
            "Different stadiums exist, and Estadio Maracaná holds 5,500 people.",
            "S1",
            "Estadio Maracaná is a multi-purpose stadium in Panama City, Panama. "
            "It holds 5,500 people",
        ),
    ],
)
def test_the_forms_a_reader_accepts_are_kept(text: str, source: str, quote: str) -> None:
    assert _reason(text, source, quote) is None


def test_names_in_quotation_marks_are_left_to_the_quoted_words_check() -> None:
    names = [
        n.text
        for n in claim_names(
            "He sang 'If Loving You Is Wrong I Don't Want to Be Right' in Memphis."
        )
    ]
    assert names == ["Memphis"]


def test_claim_names_reads_runs_particles_and_titles() -> None:
    assert claim_names("The crown went to Isabella II of Spain, then to Dr. Vincent van Gogh.") == (
        ClaimName("Isabella II of Spain", False),
        ClaimName("Vincent van Gogh", False),
    )
    assert claim_names("Maracanã Stadium is in Panama.") == (
        ClaimName("Maracanã Stadium", True),
        ClaimName("Panama", False),
    )
    assert claim_names("employees get 16 weeks of leave.") == ()


def test_a_first_word_counts_only_where_the_evidence_has_it_as_a_name() -> None:
    evidence = NameIndex("Use the STA Tools to perform checks; perform them daily.")
    assert not name_swapped(evidence, ClaimName("Perform STA", True))
    assert name_swapped(
        NameIndex("Estadio Maracaná is a stadium."), ClaimName("Maracanã Stadium", True)
    )


def test_a_list_answer_holds_each_item_to_its_own_names() -> None:
    ws = WorkingSet(
        [
            Source("S1", "The 2006 cup was won by Italy after a final in Berlin."),
            Source("S2", "The 2010 cup was won by Spain after a final in Johannesburg."),
        ]
    )
    raw = answer(
        claim(
            "The cup was won by Italy in 2006 and by Spain in 2010.",
            cit("S1", "The 2006 cup was won by Italy after a final in Berlin"),
            cit("S2", "The 2010 cup was won by Spain after a final in Johannesburg"),
        )
    )
    assert check(raw, ws).claims[0].kept


def test_strict_and_default_policies_agree_on_names() -> None:
    raw = one(
        "Maracanã Stadium is in Panama City, Panama.",
        "S1",
        "Estadio Maracaná is a multi-purpose stadium in Panama City, Panama.",
    )
    for policy in (Policy(), Policy(strict=True)):
        assert not check(raw, PASSAGES, policy=policy).claims[0].kept
