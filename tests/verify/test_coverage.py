"""What of the question an answer leaves out, and which notes on what is missing state a fact."""

from __future__ import annotations

import pytest

from quotebound.coverage import (
    borrowings,
    describe,
    disagreeing,
    document_name,
    mentioned_in,
    named_documents,
    nearest_sentence,
    question_names,
    question_parts,
    restatements,
    states_no_fact,
    unaddressed,
)

HOTEL = "The hotel cap is 180 EUR per night in tier 1 cities and 140 EUR per night elsewhere."
RECEIPTS = "Receipts must be uploaded to the expense portal within 45 days of the purchase."
LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = (
    "In Germany, the company tops up parental allowance to full salary for the first 14 weeks."
)


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "What is the hotel cap in tier 1 cities, and how soon must receipts be uploaded?",
            ["What is the hotel cap in tier 1 cities", "how soon must receipts be uploaded"],
        ),
        ("Who founded it? When did it close?", ["Who founded it", "When did it close"]),
        ("What is the cap; who approves more?", ["What is the cap", "who approves more"]),
        # "and" inside one question is not a new part
        (
            "What are the rules for hotels and flights?",
            ["What are the rules for hotels and flights"],
        ),
        (
            "How many weeks do employees get in Germany?",
            ["How many weeks do employees get in Germany"],
        ),
    ],
)
def test_question_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


def test_question_names_skip_the_first_word_of_each_sentence() -> None:
    assert question_names("How many weeks do employees get in Germany?") == ["Germany"]
    assert question_names("When did the Cubs win? Who was Their manager?") == ["Cubs"]
    assert question_names("what is the cap?") == []
    assert question_names("Employees get how many weeks?") == []  # a capital, not a name


def test_question_names_are_whole_names() -> None:
    assert question_names("What is the copay for Northwind Health Plus?") == [
        "Northwind Health Plus"
    ]
    assert question_names("Does Contoso cover gender affirming care?") == ["Contoso"]
    assert question_names("Northwind Standard covers what?") == ["Northwind Standard"]
    assert question_names(
        "What are the limits of the Right of Recovery in Northwind Standard?"
    ) == [
        "Right of Recovery",
        "Northwind Standard",
    ]
    # two names joined by "and" stay two
    assert question_names("Do Northwind Standard and Northwind Health Plus cover it?") == [
        "Northwind Standard",
        "Northwind Health Plus",
    ]


def test_a_part_the_sources_mention_and_the_answer_leaves_out() -> None:
    question = "What is the hotel cap in tier 1 cities, and how soon must receipts be uploaded?"
    sources = [HOTEL, RECEIPTS]
    assert unaddressed(question, sources, [HOTEL]) == ("how soon must receipts be uploaded",)
    assert unaddressed(question, sources, [HOTEL, RECEIPTS]) == ()
    # forms of a word meet: "uploaded" in the question, "upload" in the answer
    assert unaddressed(question, sources, [HOTEL, "Receipts must be upload in 45 days."]) == ()


def test_a_part_no_source_mentions_is_not_asked_for() -> None:
    question = "What is the hotel cap in tier 1 cities, and who cleans the office windows?"
    assert unaddressed(question, [HOTEL, RECEIPTS], [HOTEL]) == ()


def test_the_general_rule_without_the_named_one() -> None:
    question = "How many weeks of parental leave do employees get in Germany?"
    assert unaddressed(question, [LEAVE, GERMANY], [LEAVE]) == ("Germany",)
    assert unaddressed(question, [LEAVE, GERMANY], [LEAVE, GERMANY]) == ()
    # no source names Germany: the general rule is all there is, nothing is asked for
    assert unaddressed(question, [LEAVE], [LEAVE]) == ()


PLUS = "Northwind Health Plus has a copay of $20 for primary care visits."
STANDARD = "Northwind Standard has a copay of $30 for primary care visits."


def test_an_answer_for_another_plan_of_the_same_name_leaves_the_asked_one_out() -> None:
    question = "What is the copay for primary care under Northwind Health Plus?"
    # the kept claim speaks of Northwind Standard: "Northwind" is said, the plan asked is not
    assert unaddressed(question, [PLUS, STANDARD], [STANDARD]) == ("Northwind Health Plus",)
    assert unaddressed(question, [PLUS, STANDARD], [PLUS]) == ()
    # a word of the name no source sent is not asked for ("Plus" alone is enough to tell)
    assert unaddressed("What is the copay under Northwind Plus Gold?", [PLUS], [PLUS]) == ()


def test_mentioned_in_points_at_the_sources_with_the_most_shared_words() -> None:
    sources = [("S1", HOTEL), ("S2", RECEIPTS), ("S3", LEAVE)]
    assert mentioned_in("how soon must receipts be uploaded", sources) == ["S2"]
    assert mentioned_in("pensions", sources) == []


@pytest.mark.parametrize(
    "note",
    [
        "The documents do not mention a pension plan.",
        "The sources do not say whether the company offers a pension plan.",
        "No information about pension plans in the provided documents.",
    ],
)
def test_a_note_that_only_says_what_the_documents_lack(note: str) -> None:
    assert states_no_fact(note, "Does the company offer a pension plan?")


@pytest.mark.parametrize(
    "note",
    [
        "The company does not offer a pension plan.",  # a claim, no word about the documents
        "the Yellow River",
        "14",
        "The documents say the plan starts in 2027.",  # a fact beside the documents
        "The documents do not mention it, but the Yellow River is likely.",
        "",
    ],
)
def test_a_note_that_states_a_fact(note: str) -> None:
    assert not states_no_fact(note, "Does the company offer a pension plan?")


def test_describe() -> None:
    assert describe(["a"]) == '"a"'
    assert describe(["a", "b", "c"]) == '"a", "b" and "c"'


def test_the_nearest_sentence_to_a_claim_its_quote_did_not_carry() -> None:
    sources = [("S1", f"{LEAVE} {GERMANY}"), ("S2", HOTEL)]
    claim = "In Germany the company tops up pay to full salary for 14 weeks."
    assert nearest_sentence(claim, sources) == ("S1", GERMANY)
    # the quote that already failed is not offered again, nor one sharing a single word
    assert nearest_sentence(claim, sources, skip=[GERMANY]) is None
    assert nearest_sentence("Leave is 16 weeks.", sources, skip=[GERMANY]) == ("S1", LEAVE)
    assert nearest_sentence("Pensions vest after five years.", sources) is None


OLD_POLICY = "Employees get 12 weeks of paid parental leave. Leave is booked in the HR portal."
NEW_POLICY = "From 2026, employees get 16 weeks of paid parental leave."


def test_a_source_not_cited_that_gives_other_figures_disagrees() -> None:
    sources = [("S1", OLD_POLICY), ("S2", NEW_POLICY)]
    claim = ("Employees get 12 weeks of paid parental leave.", ["S1"])
    assert disagreeing([claim], sources) == [(0, "S2", NEW_POLICY)]


def test_an_answer_that_cites_both_sources_reports_both() -> None:
    sources = [("S1", OLD_POLICY), ("S2", NEW_POLICY)]
    claims = [
        ("Employees got 12 weeks of paid parental leave before 2026.", ["S1"]),
        ("From 2026, employees get 16 weeks of paid parental leave.", ["S2"]),
    ]
    assert disagreeing(claims, sources) == []


@pytest.mark.parametrize(
    "other",
    [
        "Employees get 12 weeks of paid parental leave in every country.",  # the same figure
        "Expense reports are due within 30 days of travel.",  # other figures, another topic
        "Employees get paid parental leave.",  # no figure at all
        "Employees get 16 days of paid parental leave per child.",  # counts another thing
    ],
)
def test_what_does_not_disagree(other: str) -> None:
    claim = ("Employees get 12 weeks of paid parental leave.", ["S1"])
    assert disagreeing([claim], [("S1", OLD_POLICY), ("S2", other)]) == []


def test_a_claim_without_a_figure_is_not_compared() -> None:
    claim = ("Leave is booked in the HR portal.", ["S1"])
    assert disagreeing([claim], [("S1", OLD_POLICY), ("S2", NEW_POLICY)]) == []


@pytest.mark.parametrize(
    ("claim", "other"),
    [  # sentences on the same subject with other numbers that are not a disagreement
        ("The Berlin Wall fell on 9 November 1989.", "The Berlin Wall was built in August 1961."),
        ("The Eiffel Tower is 330 metres tall.", "The Eiffel Tower was completed in 1889."),
        ("Python 3.12 removed the distutils module.", "Python 3.11 added the tomllib module."),
        (  # another case of the same rule: two counts differ
            "The hotel cap is 180 EUR per night in tier 1 cities.",
            "The hotel cap is 150 EUR per night in tier 2 cities.",
        ),
    ],
)
def test_other_numbers_on_the_same_subject_are_not_a_disagreement(claim: str, other: str) -> None:
    assert disagreeing([(claim, ["S1"])], [("S1", claim), ("S2", other)]) == []


def test_each_disagreeing_sentence_is_named_once_and_at_most_three() -> None:
    claims = [
        ("Employees get 12 weeks of paid parental leave.", ["S1"]),
        ("Full-time employees get 12 weeks of paid parental leave.", ["S1"]),
    ]
    others = [
        (f"S{n}", f"Employees get {n + 12} weeks of paid parental leave.") for n in range(2, 7)
    ]
    found = disagreeing(claims, [("S1", OLD_POLICY), *others])
    assert [(n, sid) for n, sid, _ in found] == [(0, "S2"), (0, "S3"), (0, "S4")]


PLANS = [
    "contoso:Northwind_Health_Plus_Benefits_Details.pdf",
    "contoso:plans/Northwind_Standard_Benefits_Details.pdf",
    "contoso:Benefit_Options.pdf",
    "hr:employee-handbook.md",
]


def test_a_document_is_called_by_its_title_else_its_file_name() -> None:
    assert [document_name(k) for k in PLANS] == [
        "Northwind Health Plus Benefits Details",
        "Northwind Standard Benefits Details",
        "Benefit Options",
        "employee handbook",
    ]
    assert document_name("hr:leave.txt", "Leave policy") == "Leave policy"
    assert document_name("hr:v1.2 notes") == "v1.2 notes"  # no extension to drop
    assert document_name("wiki:C#_basics.md") == "C# basics"  # a '#' is part of the name


@pytest.mark.parametrize(
    ("question", "picked"),
    [
        ("what is copay for Northwind Health Plus?", {0}),
        ("what is northwind standard benefits details?", {1}),  # in any case
        ("How do Northwind Standard and Northwind Health Plus differ?", {0, 1}),
        ("What does the employee handbook say about leave?", {3}),
        ("What does Northwind Health cover?", set()),  # Plus's words are not all asked
        ("What protection does Contoso offer against balance billing?", set()),
    ],
)
def test_the_documents_a_question_names(question: str, picked: set[int]) -> None:
    names = [document_name(k) for k in PLANS]
    assert named_documents(question, names) == picked


def test_one_document_or_names_alike_are_never_picked() -> None:
    assert named_documents("What is in the Benefit Options?", ["Benefit Options"]) == set()
    assert named_documents("What is in the Benefit Options?", ["Benefit Options"] * 2) == set()


def test_question_names_are_read_as_claim_names_are() -> None:
    """One reader of names (``text.names``): titles and a leading article aside, a name with
    periods whole."""
    assert question_names("Who was Sir John Kerr?") == ["John Kerr"]
    assert question_names("How many ships does the U.S. Navy have?") == ["U.S. Navy"]
    assert question_names("What did The Beatles release in 1965?") == ["Beatles"]


@pytest.mark.parametrize(
    ("question", "claim", "restates"),
    [
        (
            "Who led the British forces in the Battle of Morval?",
            "The British forces led the British forces in the Battle of Morval.",
            True,
        ),
        (
            "What fruit takes the scientific name Mangifera indica?",
            "The fruit takes the scientific name Mangifera indica.",
            True,
        ),
        ("What is the PerksPlus program?", "PerksPlus is a program.", True),
        # one word more may be the answer
        (
            "How many member states adopted the Social Charter in 1989?",
            "11 member states adopted the Social Charter in 1989.",
            False,
        ),
        (
            "What continent are the Canarian Islands off the coast of?",
            "The Canarian Islands are off the coast of Africa.",
            False,
        ),
        # a question offering alternatives, or asking yes or no, is answered by its own words
        (
            "Is Wellington in the North or South Island?",
            "Wellington is in the North Island.",
            False,
        ),
        ("Do employees get paid parental leave?", "Employees get paid parental leave.", False),
        ("What did they say?", "", False),
        # a question word in a relative clause, or in a second part, does not ask
        (
            "Are employees who have children entitled to paid parental leave?",
            "Employees are entitled to paid parental leave.",
            False,
        ),
        (
            "Are employees entitled to paid parental leave, and when does it start?",
            "Employees are entitled to paid parental leave.",
            False,
        ),
        ("In which year did the leave start?", "The leave did start.", True),
        ("who led the british forces at morval", "The British forces led at Morval.", True),
        # choices offered otherwise than with "or"
        ("Which plan is cheaper, Standard vs Plus?", "Standard is cheaper.", False),
        ("Which plan is cheaper between Standard and Plus?", "Standard is cheaper.", False),
        ("Which of vision and dental is covered?", "Vision is covered.", False),
        ("Where was Obama born, Hawaii?", "Obama was born in Hawaii.", False),
    ],
)
def test_a_claim_that_only_restates_the_question(question: str, claim: str, restates: bool) -> None:
    assert restatements(question)(claim) is restates


def test_a_question_is_told_from_a_placeholder_or_an_instruction() -> None:
    from quotebound.coverage import reads_as_question

    assert reads_as_question("where do they shoot guy's grocery games")
    assert reads_as_question("Leave in Germany?")
    assert not reads_as_question("(an assistant's answer, verified over MCP)")
    assert not reads_as_question("Tell me about parental leave.")
    assert not reads_as_question("")


HUGUENOTS = (
    "A small group of Huguenots also settled on the south shore of Staten Island along the New "
    "York Harbor, for which the current neighborhood of Huguenot was named."
)


@pytest.mark.parametrize(
    ("question", "claim", "evidence", "borrowed"),
    [
        # the question's words where the quote has others: named as the claim writes them
        (
            "Where did the fewest Huguenots stay?",
            "The fewest Huguenots stayed on the south shore of Staten Island.",
            [HUGUENOTS],
            ("fewest", "stayed"),
        ),
        (
            "Which famous artist recorded the theme song for Goldeneye?",
            "Éric Serra composed and performed the theme song for Goldeneye.",
            ['The soundtrack to "GoldenEye" was composed and performed by Éric Serra.'],
            ("theme", "song"),
        ),
        # the quote's own words, in any form: nothing borrowed
        (
            "Where did a small group of Huguenots settle?",
            "A small group of Huguenots settled on the south shore of Staten Island.",
            [HUGUENOTS],
            (),
        ),
        # a word in the title of the cited source is held by it
        (
            "Which famous artist recorded the theme song for Goldeneye?",
            "Éric Serra recorded the theme song.",
            ["Éric Serra recorded it in 1995.", "GoldenEye theme song"],
            (),
        ),
        # a word neither the question's nor the evidence's is a paraphrase (the tier's)
        (
            "Where did the Huguenots go?",
            "The Huguenots dwelt on the south shore of Staten Island.",
            [HUGUENOTS],
            (),
        ),
        # a name (capitalised), a number, a short word: held by other checks, or phrasing
        (
            "When did the Normans take Dyrrachium?",
            "Dyrrachium was lost to the Normans in 1082.",
            ["Dyrrachium was betrayed in February 1082."],
            (),
        ),
        ("Who does Santana end up with?", "Santana ends up with Brittany.", ["X"], ("ends",)),
        # a contraction's piece is no word ("don't": "don")
        ("Why don't staff get leave?", "Staff don't get leave.", ["No leave."], ("get",)),
        # no question, no borrowing (a placeholder, an instruction)
        (
            "(an assistant's answer, verified over MCP)",
            "The answer was verified over MCP.",
            ["Nothing here."],
            (),
        ),
    ],
)
def test_the_words_a_claim_takes_from_the_question_that_its_evidence_lacks(
    question: str, claim: str, evidence: list[str], borrowed: tuple[str, ...]
) -> None:
    assert borrowings(question)(claim, evidence) == borrowed
