"""One sentence splitter (quotebound.text.sentences) for the chunker, the inline parser, the
contract's quote enum and the extractive provider: they agree on where sentences end."""

from __future__ import annotations

import json
import time

import pytest

from quotebound import Policy, Source, WorkingSet, verify
from quotebound.contract import answer_schema
from quotebound.parsing import parse
from quotebound.text.sentences import reads_as_heading, sentence_spans

STRICT = Policy(strict=True)  # as ask verifies its own model's answers
PROSE = [
    "Leave is 12 weeks in the U.S. The German plan pays 14 weeks. Dr. Smith agrees.",
    "See Fig. 3 for the rates, e.g. the hotel cap. The cap is 180 EUR per night!",
    "Is it paid? Yes. Contractors are not eligible (see No. 4). J. Smith said so.",
    "The U.S. policy applies everywhere. It was set in 2.5 days, resp. three.",
]


@pytest.mark.parametrize("text", PROSE)
def test_the_parser_splits_prose_where_the_splitter_does(text: str) -> None:
    ws = WorkingSet([Source("S1", text)])
    claims = [c.text for c in parse(ws, text, "inline", ()).claims]
    assert claims == [text[a:b] for a, b in sentence_spans(text)]
    # the contract offers those of the sentences that are 4-40 words long as quotes
    schema = answer_schema(ws)
    option = schema["properties"]["claims"]["items"]["properties"]["citations"]["items"]
    enum = option["anyOf"][0]["properties"]["quote"].get("enum", [])
    assert enum and set(enum) <= set(claims)


def test_markers_after_the_stop_stay_with_their_sentence() -> None:
    ws = WorkingSet([Source("S1", "a"), Source("S2", "b")])
    raw = "Leave is 16 weeks. [S1] Contractors get none. [S2][S1] Done."
    claims = parse(ws, raw, "inline", ()).claims
    assert [(c.text, [x.ref for x in c.citations]) for c in claims] == [
        ("Leave is 16 weeks.", ["S1"]),
        ("Contractors get none.", ["S2", "S1"]),
        ("Done.", []),
    ]


def _seconds(raw: str, ws: WorkingSet) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        verify(ws, raw, "inline")
        best = min(best, time.perf_counter() - start)
    return best


def test_inline_parsing_grows_linearly_with_the_paragraph() -> None:
    # The sentence-end look-back once rescanned the paragraph from its start at every stop:
    # ten times the text took a hundred times as long. A generous ratio, in one run.
    ws = WorkingSet([Source("S1", "Employees get 16 weeks of paid leave.")])
    line = "Employees get 16 weeks of paid leave [S1]. "
    small, large = _seconds(line * 1_000, ws), _seconds(line * 10_000, ws)
    assert large < 40 * small, (small, large)
    long_word = "a" * 200_000 + " x. [S1]"
    assert _seconds(long_word, ws) < 40 * _seconds("a" * 20_000 + " x. [S1]", ws) + 0.05


@pytest.mark.parametrize(
    "text",
    [
        "Balance Billing Protection",
        "HOW PROVIDERS AFFECT YOUR COSTS - Balance Billing Protection",
        "Tips for Choosing an In-Network Provider",  # minor words stay lower case
        "Copayments (Copays)",
        "## Parental leave",  # a Markdown heading, whatever its case
        "Contoso Electronics\nEmployee Handbook",  # a title over two lines
    ],
)
def test_headings_read_as_headings(text: str) -> None:
    assert reads_as_heading(text)


@pytest.mark.parametrize(
    "text",
    [
        "Employees get 16 weeks of paid leave",  # sentence case, even without a stop
        "Parental Leave Is 16 Weeks.",  # a sentence's stop
        "What Is Covered?",
        "Receipts Are Uploaded Within 45 Days (Paid.)",
        "#1 priority is safety",  # not a Markdown heading: no space after the hashes
        "# of employees is 500.",  # ends as a sentence does, hashes or not
        "The CEO is Satya Nadella",  # "is" in lower case: a sentence
        "NASA Launched Artemis II in 2026",  # a number is a fact
        "育儿假为十六周",  # a script without case is never a title
        "One Two Three Four Five Six Seven Eight Nine Ten Eleven Twelve Thirteen",
        "",
    ],
)
def test_sentences_do_not_read_as_headings(text: str) -> None:
    assert not reads_as_heading(text)


def test_a_heading_is_no_quote_to_offer_and_no_claim() -> None:
    heading = "HOW PROVIDERS AFFECT YOUR COSTS - Balance Billing Protection"  # quote-long
    text = f"{heading}\n\nThe plan protects you from balance billing in-network."
    ws = WorkingSet([Source("S1", text)])
    option = answer_schema(ws)["properties"]["claims"]["items"]["properties"]["citations"]
    enum = option["items"]["anyOf"][0]["properties"]["quote"]["enum"]
    assert enum == ["The plan protects you from balance billing in-network."]
    raw = f'{{"answerable": true, "missing": "", "claims": [{{"text": "{heading}",'
    raw += f' "citations": [{{"source": "S1", "quote": "{heading}"}}]}}]}}'
    verdict = verify(ws, raw, "json", STRICT)
    assert [(c.kept, c.reason) for c in verdict.claims] == [(False, "claim_fragment")]
    assert "is a heading, not a statement" in (verdict.claims[0].message or "")
    assert verify(ws, raw, "json").claims[0].notes == ("a heading, not a statement",)


@pytest.mark.parametrize(
    "line", ["Step 2: Prepare Your Appeal", "When Prior Authorization is Required"]
)
def test_a_line_standing_alone_may_hold_a_number_or_a_lower_case_verb(line: str) -> None:
    assert reads_as_heading(line, alone=True) and not reads_as_heading(line)


@pytest.mark.parametrize(
    "claim", ["Eligibility: All Full-Time Employees", "Out-of-Pocket Maximum: $6,000"]
)
def test_a_label_and_its_value_is_a_claim(claim: str) -> None:
    from quotebound.fragments import fragment

    assert fragment(claim) is None
    assert fragment("Balance Billing Protection") == "a heading, not a statement"
    # a section's heading in capitals, a colon, then its subsection's: headings, not a value
    heading = "HOW PROVIDERS AFFECT YOUR COSTS: Balance Billing Protection"
    assert fragment(heading) == "a heading, not a statement"
    assert fragment("PLAN ELIGIBILITY: All full-time employees qualify after 30 days.") is None


@pytest.mark.parametrize(
    "piece",
    [
        "for any additional costs that Northwind Health does not cover.",
        "and the company tops up pay to full salary for 14 weeks.",
        "which is paid by the employer.",
    ],
)
def test_a_piece_of_a_sentence_is_no_claim(piece: str) -> None:
    from quotebound.fragments import fragment

    assert fragment(piece) == "a piece of a sentence (it starts mid-sentence)"
    assert fragment(piece[0].upper() + piece[1:]) is None  # the same words, a sentence
    assert fragment("van Gogh painted The Starry Night in 1889.") is None  # a name's particle
    assert fragment("iPhone sales rose by 5 percent in 2024.") is None


@pytest.mark.parametrize(
    "leaning",
    [
        "This will help you to ensure that balance billing protection applies.",
        "That\u2019s why our plan provides coverage for organ and tissue transplants.",
        "That's why we offer a Chronic Condition Management Program.",
        "These sources do not speak of adding anything to the ashes.",
        "Those plans cost more each month than the standard one.",
        "This plan covers hearing aids every three years.",
        "\u2022These programs may not be available in all areas.",  # after a bullet
        "\u201cThis will help you,\u201d the handbook says.",  # after a quotation mark
        "This, however, is not covered.",
        "(b) This will help you to ensure coverage.",  # after a list mark
        "3. These 12 providers are in the network.",  # a number is no title
        # issue 53: connectives and "It" as a subject stand for what was said before too
        "In addition, Su Mingcheng also broke the news in 2019.",
        "Also, the plan covers vision care.",
        "However, contractors are not eligible for the bonus.",
        "It has a length of 365 days in a common year.",
        "It was released on November 9, 1988, to critical acclaim.",
        "\u2022 It\u2019s open to every employee after 90 days.",
        "She was the first ever winner of this title and of the pageant.",
        "He served as governor from 1905 to 1907.",
        # after an opening phrase that names no one, as at the start
        "Though he has been considered a pupil of Rembrandt, he lived and worked in Haarlem.",
        "As of March 2015[update], it had control over territory in Iraq and Syria.",
        "In 2010, it became the largest port in the region.",
        "Despite this, he has become a symbol of the underdog for many people.",
        "On the other hand, it can make exports less competitive.",
        "In the 1990s, it grew quickly into the largest port.",
        "During this period, she wrote three novels.",
        # a demonstrative after "of" in the opening phrase
        "One result of this was a campaign of attacks on government officials.",
        "Because of this, the company moved to Ohio.",
        "Some of these are found only in Asia.",
        "The first of those was built in 1920.",
        "Of these, three were women.",
    ],
)
def test_a_sentence_leaning_on_the_one_before_it_is_no_claim(leaning: str) -> None:
    from quotebound.fragments import LEANS_BACK, fragment

    assert fragment(leaning) == LEANS_BACK
    assert "leans on the one before it" in LEANS_BACK


@pytest.mark.parametrize(
    "pointer",
    [
        "Crimean campaign can refer to:",
        "Mercury may refer to the planet or the element.",
        "The following lists the number one best-selling singles in Japan.",
        "The following table shows the limits per plan.",
        "Employees are eligible for these benefits:",
        "HOW PROVIDERS AFFECT YOUR COSTS:",
    ],
)
def test_a_pointer_to_text_that_is_not_there_is_no_claim(pointer: str) -> None:
    """Issue 53: lead-ins, disambiguation lines and pointers to a list are not statements
    (the extractive fallback serves none of them: it keeps only what ``fragment`` passes)."""
    from quotebound.fragments import fragment

    assert fragment(pointer) is not None
    assert "pointer" in fragment(pointer) or "heading" in fragment(pointer)


@pytest.mark.parametrize(
    "alone",
    [
        "It is important to note that Northwind Standard does not cover travel.",
        # a personal pronoun mostly stands for what the question named: left to the reader
        "They shoot Guy's Grocery Games inside Field's Market in West Hills, California.",
        "It Follows was released in 2014 to critical acclaim.",  # a title
        "Helen was born in 1950 in a small town.",  # a name that starts like one
        "He Who Gets Slapped is a 1924 film by Victor Sjöström.",
        "There are two plans for employees to choose from.",
        "Also known as the Maracanã, the stadium opened in 1950.",
        "Thus far, five players have scored in the final.",
        "The following benefits are covered: dental and vision care.",
        "Eligibility: All Full-Time Employees",
        "Benefits include: dental and vision care for staff.",
        "Thistle grows wild in Scotland.",  # a word that starts like one
        "This Is Us was created by Dan Fogelman.",  # a title
        "That's So Raven premiered on Disney Channel in 2003.",
        "That \u201970s Show aired on Fox for eight seasons.",
        "THIS plan is the one for you.",  # in capitals: a heading's style, not a demonstrative
        "The company says this plan covers it.",
        "You can find a list of in-network providers on the website.",
        # the opening names whom the pronoun stands for, or "it" is an expletive
        "When Smith joined the firm, he became its chief executive.",
        "In 2010, it was reported that the plan covers vision care.",
        "According to the handbook, it is required to file a claim within 30 days.",
        "When it comes to leave, employees get 16 weeks.",
        "Employees, it says, get 16 weeks of paid leave.",  # one word before the comma
        "For centuries, they could be owned only by members of the palace.",  # plural: as "They"
        # a clause before the comma may hold what the pronoun stands for (AttributionBench)
        "As pressure increases, it can trigger nearby faults to jump.",
        "If a vessel detects another nearby vessel, it must determine the risk.",
        "Even if a tire does go flat, it is much easier to replace.",
        "Since the museum reopened, it has drawn record crowds.",
        "After the drug is absorbed, it is broken down in the liver.",
        "In the handbook, it says that leave is paid.",
        "In a 2010 interview, he said the plan was sound.",  # "a": it may introduce him
        "At that time of the same year, it rained.",  # seven words: no short opening
        # "it" that stands for nothing; a name after the clause; the policies' "he or she"
        "On average, it takes 5 to 7 business days to process a claim.",
        "It takes 5 to 7 business days to process a claim.",
        "In 2015, it\u2019s estimated that 5 million people moved.",
        "Though he was born in Ohio, Smith grew up in Texas.",
        "If he or she is under 18, a parent must sign the form.",
        # "of this" before a title or a number, or after the opening's first words
        "Much of this Act was repealed in 1990.",
        "Many of these 1990s films were remade.",
        "Employees are entitled to 16 weeks of this leave.",
        # a demonstrative before a noun says what it is; a clause after "those" defines them
        "The capital of this country is Paris.",
        "Each of these drugs lowers blood pressure.",
        "Most of those who died were children.",
        "Many of those surveyed said yes.",
    ],
)
def test_a_sentence_that_says_what_it_is_about_is_a_claim(alone: str) -> None:
    from quotebound.fragments import fragment

    assert fragment(alone) is None


@pytest.mark.parametrize(
    "odd", ['"\n, it was a good year for the plan."', "*\u3000, it was a day."]
)
def test_an_opening_of_nothing_but_marks_is_read_without_error(odd: str) -> None:
    from quotebound.fragments import fragment

    assert fragment(odd) is None or isinstance(fragment(odd), str)


def test_a_source_of_headings_alone_keeps_its_quote_enum() -> None:
    heading = "HOW PROVIDERS AFFECT YOUR COSTS - Balance Billing Protection"
    ws = WorkingSet([Source("S1", heading)])
    option = answer_schema(ws)["properties"]["claims"]["items"]["properties"]["citations"]
    assert option["items"]["anyOf"][0]["properties"]["quote"] == {"enum": [heading]}


def test_a_claim_may_lean_on_a_kept_claim_before_it() -> None:
    ws = WorkingSet(
        [
            Source("S1", "Northwind Standard covers in-network providers only."),
            Source("S2", "These providers have agreed to charge lower rates for members."),
        ]
    )
    first = "Northwind Standard covers in-network providers only [S1]."
    leaning = "These providers have agreed to charge lower rates for members [S2]."
    both = verify(ws, f"{first} {leaning}", policy=STRICT)
    assert both.status == "grounded"
    alone = verify(ws, leaning, policy=STRICT)  # nothing before it says what "these" are
    assert [(c.kept, c.reason) for c in alone.claims] == [(False, "claim_fragment")]
    dropped_first = f"Northwind Standard covers 12 providers [S1]. {leaning}"
    after_a_dropped_one = verify(ws, dropped_first, policy=STRICT)
    assert [(c.kept, c.reason) for c in after_a_dropped_one.claims] == [
        (False, "no_valid_citation"),
        (False, "claim_fragment"),
    ]
    assert verify(ws, leaning, policy=Policy(sentences=False)).status == "grounded"
    too_short = verify(ws, f"{first} That's it [S2].", policy=STRICT)  # the other rules hold
    assert [(c.kept, c.reason) for c in too_short.claims] == [
        (True, None),
        (False, "claim_fragment"),
    ]
    # verify's default reads it with the sentence before it in the answer, whatever became
    # of that one, and notes only a leaning claim that opens the answer
    assert [c.notes for c in verify(ws, f"{first} {leaning}").claims] == [(), ()]
    assert [(c.kept, c.notes) for c in verify(ws, dropped_first).claims] == [
        (False, ()),
        (True, ()),
    ]
    alone = verify(ws, leaning).claims[0]
    assert alone.kept and len(alone.notes) == 1 and "leans on the one before" in alone.notes[0]


def lewy_body_sources() -> WorkingSet:
    """Two sources: S1 about the LBDA; S2 a sentence about the Lewy Body Society, then one
    leaning on it ("These organizations ...")."""
    return WorkingSet(
        [
            Source("S1", "The LBDA promotes awareness of the disease in the United States."),
            Source(
                "S2",
                "The Lewy Body Society works in the United Kingdom. These organizations help "
                "families with LBD become advocates.",
            ),
        ]
    )


def test_a_leaning_claim_copied_from_the_middle_of_a_source_leans_on_that_source() -> None:
    """A claim that leans on the sentence before its quote in its source is read with a kept
    claim before it only when that claim cites the same source (strict: what ``ask`` serves);
    copied after a claim about another source, it is refused and told why."""
    ws = lewy_body_sources()

    def answer(*claims: tuple[str, str]) -> str:  # (text, source): each quoting itself
        cited = [
            {"text": text, "citations": [{"source": sid, "quote": text.rstrip(".")}]}
            for text, sid in claims
        ]
        return json.dumps({"answerable": True, "claims": cited})

    other = ("The LBDA promotes awareness of the disease in the United States.", "S1")
    own = ("The Lewy Body Society works in the United Kingdom.", "S2")
    leaning = ("These organizations help families with LBD become advocates.", "S2")
    refused = verify(ws, answer(other, leaning), policy=STRICT)
    assert [(c.kept, c.reason) for c in refused.claims] == [
        (True, None),
        (False, "claim_fragment"),
    ]
    assert "in its source, which the answer does not give" in (refused.claims[1].message or "")
    read_with_it = verify(ws, answer(other, own, leaning), policy=STRICT)
    assert [c.kept for c in read_with_it.claims] == [True, True, True]
    # verify's default reads it with the sentence before it in the answer: no drop, no note
    default = verify(ws, answer(other, leaning))
    assert [(c.kept, c.notes) for c in default.claims] == [(True, ()), (True, ())]
    # a quote with no sentence before it in its source may lean on any kept claim: it opens its
    # source (a chunk: what it leans on is in another), only a title stands before it, or it
    # opens mid-sentence after an opening phrase
    lean = leaning[0]
    for n, text in enumerate(
        (lean, f"Lewy Body Society\n\n{lean}", f"According to the 2014 review, t{lean[1:]}"), 3
    ):
        other_ws = WorkingSet([*ws, Source(f"S{n}", text)])
        chunked = verify(other_ws, answer(other, (lean, f"S{n}")), policy=STRICT)
        assert [c.kept for c in chunked.claims] == [True, True], text


def test_a_leaning_claim_citing_the_wrong_source_is_told_it_leans_and_is_never_placed() -> None:
    from quotebound.reanchor import reanchor

    ws = WorkingSet(
        [
            Source("S1", "Northwind Standard covers in-network providers only."),
            Source("S2", "These providers have agreed to charge lower rates for members."),
        ]
    )
    raw = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": "These providers have agreed to charge lower rates for members.",
                    "citations": [
                        {
                            "source": "S1",
                            "quote": "These providers have agreed to charge lower rates",
                        }
                    ],
                }
            ],
        }
    )
    verdict = verify(ws, raw, policy=STRICT)
    assert [(c.kept, c.reason) for c in verdict.claims] == [(False, "claim_fragment")]
    assert any("leans on the one before it" in f for f in verdict.failures)
    assert any("S2" in f for f in verdict.failures)  # its citation's own failure is named too
    assert reanchor(verdict, ws, STRICT).claims[0].kept is False  # never placed alone


def test_an_answer_reads_a_leaning_claim_with_the_one_before_it() -> None:
    from quotebound.fragments import answer_fragments

    first = "Northwind Standard covers in-network providers only."
    leaning = "These providers have agreed to charge lower rates."
    assert answer_fragments([first, leaning]) == [None, None]
    assert answer_fragments([leaning, first])[0] is not None
    assert answer_fragments([first, "16 weeks"])[1] == "a fragment"


# Where a period is not a sentence's end (issue 49): the splitter once cut "the U.S." off
# "Navy concluded ...", and the fallback served "In the spring of 1943, the U.S." as a claim.
ONE_SENTENCE = [
    "In the spring of 1943, the U.S. Navy concluded that the tenders were too small.",
    "Apple's $500 Billion U.S. Investment Plan creates 20,000 jobs.",
    "Bring a receipt, e.g. Form No. 5, to the office on St. Mary's Road.",
    "Dr. Jones and Mr. Smith met Prof. Ng at 2.5 p.m. sharp.",
    "J. R. R. Tolkien wrote The Hobbit in the U.K. before 1937.",
    "Version 3.11.2 of the tool fixes the bug that 3.10 had, i.e. the crash.",
    "The E.U. Commission and the U.N. Security Council both met.",
]
TWO_SENTENCES = [
    ("Leave is 16 weeks in the U.S.", "The plan pays the rest."),
    ("Most staff moved to the U.K.", "It was cheaper."),
    ("The answer is no.", "Then the plan pays."),
    ("He won in 2004.", "Smith came second."),
]


@pytest.mark.parametrize("text", ONE_SENTENCE)
def test_abbreviations_initials_and_numbers_end_no_sentence(text: str) -> None:
    assert sentence_spans(text) == [(0, len(text))]


@pytest.mark.parametrize(("first", "second"), TWO_SENTENCES)
def test_a_sentence_after_an_abbreviation_still_starts_a_new_one(first: str, second: str) -> None:
    text = f"{first} {second}"
    assert [text[a:b] for a, b in sentence_spans(text)] == [first, second]


def test_an_answers_layout_tells_structure_from_statements() -> None:
    from quotebound.text.layout import layout

    text = (
        "Here is what changed:\n\n## Chips\n\n**Huawei**\n\n1. Production:\n"
        "Yields doubled. The line\nis profitable.\n- [Source](https://x.example)\n\n"
        "## Phones\nSales fell."
    )
    shape = layout(text)
    got = [(text[u.start : u.end], u.kind, u.rank) for u in shape.units]
    assert got == [
        ("Here is what changed:", "structure", 0),  # opens the answer: it scopes over all
        ("Chips", "structure", 2),
        ("**Huawei**", "structure", 7),
        ("Production:", "structure", 9),  # a lead-in inside a list item
        ("Yields doubled.", "statement", 99),
        ("The line\nis profitable.", "statement", 99),  # a wrapped line stays in its sentence
        ("[Source](https://x.example)", "statement", 99),  # (a link list: native drops it)
        ("Phones", "structure", 2),
        ("Sales fell.", "statement", 99),
    ]
    assert list(shape.scope(0)) == list(range(1, 9))
    assert list(shape.scope(1)) == [2, 3, 4, 5, 6]  # "## Chips" runs to "## Phones"
    assert list(shape.scope(3)) == [4, 5, 6]
    assert shape.block_at(text.index("Yields")) == shape.units[4].block


@pytest.mark.parametrize(
    ("text", "question", "leans"),
    [
        ("They lost Dyrrachium and Valona in 1085.", "When did Dyrrachium fall?", True),
        ("For centuries, they could be owned only by the palace.", "What breed was sacred?", True),
        ("\u2022 They're covered after 90 days.", "Which plans cover dental care?", True),
        # the question says "they": the claim's may be the question's
        ("They shoot Guy's Grocery Games inside Field's Market.", "where do they shoot it", False),
        # a title, a name that starts like it, "they" not the subject, a phrase that may name
        ("They Might Be Giants released Flood in 1990.", "When was Flood released?", False),
        ("Theydon Bois is a village in Essex.", "Where is Theydon Bois?", False),
        ("Employees say they like the plan.", "What do employees think?", False),
        ("For employees, they offer dental care.", "What do they offer?", False),
        ("For employees, they offer dental care.", "What is offered?", False),
        # the clause after the opening names them
        ("When they retire, employees keep their pension.", "What about pensions?", False),
        ("After they signed with EMI, the Beatles toured.", "When was the tour?", False),
        ("When they retired, they kept their pension.", "What about pensions?", True),
    ],
)
def test_they_leans_on_what_came_before_unless_the_question_says_it(
    text: str, question: str, leans: bool
) -> None:
    from quotebound.fragments import fragment, leans_unasked

    assert leans_unasked(text, question) is leans
    assert fragment(text) is None  # without the question, a plural pronoun is left alone


def test_the_fallback_never_copies_a_sentence_whose_they_the_question_did_not_ask() -> None:
    from quotebound.providers.extractive import ExtractiveProvider

    ws = WorkingSet(
        [
            Source(
                "S1",
                "The Normans took Dyrrachium in 1081 after a long siege. They lost Dyrrachium "
                "and Valona in 1085 after the death of Robert.",
            )
        ]
    )
    asked = ExtractiveProvider(max_claims=3, min_coverage=0.1)
    chosen = [s.text for s in asked.select("When did the Normans lose Dyrrachium?", ws)]
    assert chosen and not any(text.startswith("They") for text in chosen)
    said = [s.text for s in asked.select("When did they lose Dyrrachium and Valona?", ws)]
    assert any(text.startswith("They lost") for text in said)
