"""Quotes an honest writer produces: elisions, editorial brackets, scripts without spaces,
unvocalised Arabic and Hebrew, and sources with markup or layout left in them."""

from __future__ import annotations

import json

import pytest

from kits.verifykit import answer, cit, claim, one, only_citation
from kits.verifykit import check as _check
from quotebound import Policy, Source, Verdict, WorkingSet
from quotebound.cards import build_cards
from quotebound.entailment.tier import evidence_text
from quotebound.ingest import clean_text
from quotebound.text.quoteparts import MAX_PARTS, split_quote

PROTEIN = (
    "Protein X (PROT-7) is found in most cells. Protein X functions as a kinase, and it plays "
    "a critical role in the repair of damaged DNA."
)
OTHER = "In neurons, another enzyme plays a critical role in the repair of synapses."
WS = WorkingSet([Source("S1", PROTEIN), Source("S2", OTHER)])
FLOOR_3 = Policy(min_quote_words=3)


def check(output: str, ws: WorkingSet = WS, policy: Policy | None = None) -> Verdict:
    return _check(output, ws, policy=policy)


def _texts(source: str, parts: tuple[tuple[int, int], ...]) -> list[str]:
    return [source[a:b] for a, b in parts]


# -- elisions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mark", ["...", "…", "[...]", "[…]", ". . .", "(...)"])
def test_an_elided_quote_is_verified_part_by_part(mark: str) -> None:
    quote = f"Protein X functions as a kinase {mark} plays a critical role in the repair"
    c = only_citation(check(one("Protein X plays a critical role in DNA repair.", "S1", quote)))
    assert c.valid, c.message
    assert _texts(PROTEIN, c.parts) == [
        "Protein X functions as a kinase",
        "plays a critical role in the repair",
    ]
    assert c.span == (c.parts[0][0], c.parts[1][1])  # the cover, from first part to last


def test_the_floor_counts_the_whole_quote_and_a_short_part_must_say_something() -> None:
    quote = "Protein X functions ... plays a critical role"  # a 3-word part, 7 words in all
    c = only_citation(check(one("Protein X plays a critical role.", "S1", quote)))
    assert c.valid, c.message
    assert _texts(PROTEIN, c.parts) == ["Protein X functions", "plays a critical role"]
    # linkml-reference-validator's kind of elision: a two-word part at the end
    quote = "Protein X functions as a kinase ... damaged DNA"
    assert only_citation(check(one("Protein X repairs damaged DNA.", "S1", quote))).valid
    # a number alone may be a part; a part of function words alone never counts
    ws = WorkingSet([Source("S1", "Leave is paid for 16 weeks in Germany, and 14 in France.")])
    quote = "Leave is paid for ... 14"
    assert only_citation(check(one("Leave is paid for 14 weeks in France.", "S1", quote), ws)).valid
    for quote in ("Protein X functions as a kinase ... and it", "Protein X functions ... X"):
        c = only_citation(check(one("Protein X is a kinase.", "S1", quote)))
        assert c.reason == "quote_too_short" and "part 2" in (c.message or ""), quote
    # too few words in all
    c = only_citation(check(one("Protein X functions as a kinase.", "S1", "Protein X ... kinase")))
    assert c.reason == "quote_too_short"


def test_a_short_part_must_stand_within_one_passage_of_the_others() -> None:
    far = "Protein X functions as a kinase. " + "Filler words stand here. " * 20
    ws = WorkingSet([Source("S1", far + "It repairs damaged DNA in cells.")])
    close = "Protein X functions as a kinase ... Filler words"
    assert only_citation(check(one("Protein X is a kinase.", "S1", close), ws)).valid
    apart = "Protein X functions as a kinase ... damaged DNA"
    c = only_citation(check(one("Protein X repairs damaged DNA.", "S1", apart), ws))
    assert c.reason == "quote_too_short" and "within 400" in (c.message or "")
    # parts each at the floor may stand anywhere in the source, in order, as before
    whole = "Protein X functions as a kinase ... It repairs damaged DNA"
    assert only_citation(check(one("Protein X repairs damaged DNA.", "S1", whole), ws)).valid


def test_parts_out_of_order_are_not_found() -> None:
    quote = "plays a critical role in the repair ... Protein X functions as a kinase"
    c = only_citation(check(one("Protein X plays a critical role.", "S1", quote)))
    assert c.reason == "quote_not_found"
    assert "part 2 of the quote" in (c.message or "") and "after part 1" in (c.message or "")


def test_a_part_found_only_in_another_source_fails_and_says_where() -> None:
    quote = "Protein X functions as a kinase ... a critical role in the repair of synapses"
    c = only_citation(check(one("Protein X repairs synapses.", "S1", quote)))
    assert c.reason == "quote_not_found"
    assert "it is in S2" in (c.message or "")


def test_parts_may_not_overlap() -> None:
    ws = WorkingSet([Source("S1", "Employees are entitled to sixteen weeks of paid leave.")])
    quote = "are entitled to sixteen weeks ... sixteen weeks of paid leave"
    c = only_citation(check(one("Employees get sixteen weeks of leave.", "S1", quote), ws))
    assert c.reason == "quote_not_found"


def test_an_elision_never_splices_two_half_sentences() -> None:
    source = (
        "Contractors in France receive no benefits of any kind. Full-time employees receive "
        "16 weeks of paid leave. Leave may be taken in blocks."
    )
    ws = WorkingSet([Source("S1", source)])
    spliced = "Contractors in France receive ... 16 weeks of paid leave"
    c = only_citation(check(one("Contractors in France get 16 weeks of leave.", "S1", spliced), ws))
    assert c.reason == "quote_not_found"
    # across a sentence boundary where a part ends its sentence or the next begins one: honest
    whole = "Full-time employees receive 16 weeks of paid leave. ... Leave may be taken in blocks"
    c = only_citation(check(one("Employees get 16 weeks, taken in blocks.", "S1", whole), ws))
    assert c.valid, c.message
    begins = "receive no benefits of any kind ... Full-time employees receive 16 weeks"
    c = only_citation(check(one("Employees get 16 weeks; contractors nothing.", "S1", begins), ws))
    assert c.valid, c.message


def test_a_number_in_the_elided_middle_is_not_evidence() -> None:
    ws = WorkingSet(
        [Source("S1", "Employees are entitled to paid leave of 16 weeks in total, as HR says.")]
    )
    quote = "Employees are entitled to paid leave ... in total, as HR says"
    c = only_citation(check(one("Employees get 16 weeks of paid leave.", "S1", quote), ws))
    assert c.reason == "number_not_in_source"  # 16 was left out of what was quoted
    assert c.span is not None  # found, then failed support: the reviewer sees where


def test_a_quote_found_as_written_is_never_read_in_parts() -> None:
    source = "He paused... then said the contract [3] was signed on Monday."
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(one("The contract was signed on Monday.", "S1", source[:-1]), ws))
    assert c.valid and c.spans is None
    assert c.span == (0, len(source) - 1)


def test_too_many_parts_are_read_as_written_and_work_is_bounded() -> None:
    quote = " ... ".join(["Protein X functions as a kinase"] * (MAX_PARTS + 1))
    assert split_quote(quote.lower()) is None
    # hostile: every piece occurs at every word of the source, and no placement fits
    ws = WorkingSet([Source("S1", "a " * 20000 + "b")])
    hostile = " [x] ".join(["a"] * 11) + " [x] c"
    c = only_citation(check(one("The letter a is everywhere.", "S1", hostile), ws))
    assert c.reason == "quote_not_found"
    # hostile: every piece everywhere but the last, at the very end: one placement
    ws = WorkingSet([Source("S1", "ab " * 20000 + "cd")])
    spread = " [x] ".join(["ab"] * 11) + " [x] cd"
    c = only_citation(check(one("The word ab comes before cd.", "S1", spread), ws))
    assert c.valid and c.span is not None and c.span[1] == 60002
    # hostile: the first pieces everywhere, the last only at the end, far from them all
    ws = WorkingSet([Source("S1", "alpha beta gamma delta " * 8000 + "epsilon zeta eta.")])
    c = only_citation(
        check(one("Alpha is eta.", "S1", "alpha beta gamma delta [X] epsilon zeta eta"), ws)
    )
    assert c.valid  # the one placement, found without scanning every gap to the end


# -- editorial brackets -----------------------------------------------------------------------


def test_a_bracketed_insertion_is_not_part_of_the_match_nor_evidence() -> None:
    quote = "Protein X functions [PROT-7] as a kinase"
    c = only_citation(check(one("Protein X functions as a kinase.", "S1", quote)))
    assert c.valid, c.message
    assert _texts(PROTEIN, c.parts) == ["Protein X functions as a kinase"]
    # what the bracket says is checked, never evidence: the claim's facts need verbatim words
    c = only_citation(check(one("PROT-7 functions as a kinase.", "S1", quote)))
    assert c.reason == "identifier_not_in_source"


@pytest.mark.parametrize(
    ("source", "quote", "claim_text"),
    [
        # a bracket standing for a number, an identifier or a negation is never accepted
        (
            "Staff get 8 weeks of paid leave. Contractors get 16 weeks of unpaid leave.",
            "Staff get [16] weeks of paid leave",
            "Staff get 16 weeks of paid leave.",
        ),
        (
            "Protein PROT-7 binds DNA in most cells. Protein PROT-9 is toxic to cells.",
            "Protein [PROT-9] binds DNA in most cells",
            "Protein PROT-9 binds DNA.",
        ),
        (
            "The vaccine is safe for children over 12 years of age.",
            "The vaccine is [not] safe for children over 12",
            "The vaccine is not safe for children over 12.",
        ),
        (
            "The drug is highly effective in adults with mild symptoms.",
            "The drug is [never] effective in adults with mild symptoms",
            "The drug is never effective in adults.",
        ),
        (
            "The drug is highly effective in adults with mild symptoms.",
            "The drug is highly [in]effective in adults",
            "The drug is ineffective in adults.",
        ),
        (
            "Some employees may work remotely on Fridays.",
            "[All] employees may work remotely on Fridays",
            "All employees may work remotely on Fridays.",
        ),
        (
            "Staff are not allowed to carry over leave into the next year.",
            "Staff are [permitted] to carry over leave into the next year",
            "Staff may carry over leave.",
        ),
    ],
)
def test_a_bracket_never_changes_a_fact(source: str, quote: str, claim_text: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(one(claim_text, "S1", quote), ws))
    assert not c.valid, c


def test_a_bracket_glued_to_a_word_edits_that_word() -> None:
    ws = WorkingSet([Source("S1", "Finance said the company pays claims within 30 days.")])
    c = only_citation(
        check(
            one(
                "The company pays within 30 days.", "S1", "[T]he company pays claims within 30 days"
            ),
            ws,
        )
    )
    assert c.valid and c.spans is None
    c = only_citation(
        check(
            one(
                "The company pays within 30 days.",
                "S1",
                "the compan[ies] pay claims within 30 days",
            ),
            ws,
        )
    )
    assert c.reason == "quote_not_found"


def test_a_bracket_may_stand_for_a_few_words() -> None:
    quote = "[Protein X] plays a critical role in the repair of damaged DNA"
    c = only_citation(check(one("Protein X plays a critical role in DNA repair.", "S1", quote)))
    assert c.valid
    quote = "and it [Protein X] plays a critical role in the repair"
    c = only_citation(check(one("Protein X plays a critical role in DNA repair.", "S1", quote)))
    assert c.valid
    assert _texts(PROTEIN, c.parts) == ["and it plays a critical role in the repair"]


def test_a_bracket_does_not_bridge_a_long_gap() -> None:
    quote = "Protein X is found [PROT-7] a critical role in the repair"
    c = only_citation(check(one("Protein X plays a critical role.", "S1", quote)))
    assert c.reason == "quote_not_found"
    assert "outside its brackets" in (c.message or "")


def test_what_a_bracket_adds_is_checked_as_claim_content() -> None:
    quote = "Protein X functions [PROT-8] as a kinase"
    c = only_citation(check(one("Protein X functions as a kinase.", "S1", quote)))
    assert c.reason == "identifier_not_in_source"
    assert "bracketed [prot-8]" in (c.message or "")
    quote = "Protein X functions [in 9 organs] as a kinase"
    c = only_citation(check(one("Protein X functions as a kinase.", "S1", quote)))
    assert c.reason == "number_not_in_source"


def test_sic_and_a_bracket_with_an_elision() -> None:
    text = "The comittee approved the budget of 2 million in March after a long debate."
    ws = WorkingSet([Source("S1", text)])
    quote = "The comittee [sic] approved the budget of 2 million"
    c = only_citation(check(one("The committee approved a 2 million budget.", "S1", quote), ws))
    assert c.valid, c.message
    assert _texts(text, c.parts) == ["The comittee approved the budget of 2 million"]
    quote = "The comittee [sic] approved the budget [...] in March after a long debate"
    c = only_citation(check(one("The committee approved the budget in March.", "S1", quote), ws))
    assert c.valid and c.spans is not None and len(c.spans) == 2


# -- the parts reach the verdict, the cards and the evidence ----------------------------------


def test_parts_round_trip_and_reach_cards_and_evidence() -> None:
    quote = "Protein X functions as a kinase … plays a critical role in the repair"
    verdict = check(one("Protein X plays a critical role in DNA repair.", "S1", quote))
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["claims"][0]["citations"][0]["spans"] == [
        list(p) for p in verdict.claims[0].citations[0].parts
    ]
    again = Verdict.from_dict(data)
    assert again.to_dict() == verdict.to_dict()
    cards, per_claim = build_cards(verdict, WS)
    q = cards[0].quotes[0]
    assert q.text == "Protein X functions as a kinase … plays a critical role in the repair"
    assert q.spans == verdict.claims[0].citations[0].spans
    assert per_claim[0][0].spans == q.spans
    c = verdict.claims[0].citations[0]
    assert evidence_text(WS, "S1", c.quote, c.parts) == q.text


@pytest.mark.parametrize("bad", [[], [[1]], [[1, "2"]], "0-3", [[0, 3], None]])
def test_a_malformed_spans_field_is_refused(bad: object) -> None:
    verdict = check(
        one("Protein X functions as a kinase.", "S1", "Protein X functions as a kinase")
    )
    data = verdict.to_dict()
    data["claims"][0]["citations"][0]["spans"] = bad
    with pytest.raises(Exception, match="spans must be"):
        Verdict.from_dict(data)


# -- scripts without spaces -------------------------------------------------------------------

CHINESE = "员工享有十六周带薪育儿假。在德国，公司在前十四周将工资补足至全额。"
JAPANESE = "従業員は十六週間の有給育児休暇を取得できます。ドイツでは最初の十四週間は全額支給です。"
THAI = "พนักงานมีสิทธิ์ลาเลี้ยงดูบุตรได้สิบหกสัปดาห์โดยได้รับค่าจ้าง ส่วนในเยอรมนีบริษัทจ่ายเต็มจำนวน"


@pytest.mark.parametrize(
    ("source", "quote", "short"),
    [
        (CHINESE, "员工享有十六周带薪育儿假", "员工享有"),
        (JAPANESE, "従業員は十六週間の有給育児休暇を取得できます", "従業員は"),
        (THAI, "พนักงานมีสิทธิ์ลาเลี้ยงดูบุตรได้สิบหกสัปดาห์", "พนักงานมีสิทธิ์"),
    ],
)
def test_a_whole_sentence_in_a_script_without_spaces_passes_the_floor(
    source: str, quote: str, short: str
) -> None:
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(answer(claim(quote + "。", cit("S1", quote))), ws))
    assert c.valid, c.message
    assert source[c.span[0] : c.span[1]] == quote
    c = only_citation(check(answer(claim(quote + "。", cit("S1", short))), ws))
    assert c.reason == "quote_too_short"
    assert "count as a word" in (c.message or "")


def test_a_quote_may_start_and_end_inside_a_run_of_chinese_but_never_cut_a_number() -> None:
    ws = WorkingSet([Source("S1", "员工享有十六周带薪育儿假，合同工享有二十六周无薪假期和培训。")])
    c = only_citation(
        check(answer(claim("员工享有带薪育儿假。", cit("S1", "员工享有十六周带薪育儿"))), ws)
    )
    assert c.valid, c.message
    c = only_citation(
        check(answer(claim("合同工有十六周无薪假。", cit("S1", "十六周无薪假期和培训"))), ws)
    )
    assert c.reason == "quote_not_found"  # 十六 inside 二十六 is another number
    c = only_citation(check(answer(claim("育儿假。", cit("S1", "员工享有带薪 […] 育儿假"))), ws))
    assert c.reason in {"quote_too_short", "quote_not_found"}


def test_marks_and_punctuation_are_not_words_of_an_unspaced_script() -> None:
    ws = WorkingSet([Source("S1", "セールーーーーーーーーーです。")])
    c = only_citation(check(answer(claim("セールです。", cit("S1", "ーーーーーーーー"))), ws))
    assert c.reason == "quote_too_short"


# -- optional vowel marks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "quote"),
    [
        ("قَالَ الْمُدِيرُ: يَحْصُلُ الْمُوَظَّفُونَ عَلَى إِجَازَةٍ مَدْفُوعَةِ الْأَجْرِ.", "يحصل الموظفون على إجازة مدفوعة"),
        ("הָעוֹבְדִים זַכָּאִים לְשִׁשָּׁה עָשָׂר שָׁבוּעוֹת שֶׁל חֻפְשָׁה בְּתַשְׁלוּם.", "העובדים זכאים לששה עשר שבועות"),
    ],
)
def test_an_unvocalised_quote_of_a_vocalised_source(source: str, quote: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(answer(claim(quote + ".", cit("S1", quote))), ws))
    assert c.valid, c.message
    start, end = c.span
    assert source[start] != " " and source[end - 1] != " "
    verdict = check(answer(claim(quote + ".", cit("S1", quote))), ws)
    assert verdict.normalization == "qb-norm-2"


def test_latin_accents_are_not_optional() -> None:
    ws = WorkingSet([Source("S1", "Le café est fermé le lundi toute la journée.")])
    c = only_citation(check(one("Le café est fermé.", "S1", "Le cafe est ferme le lundi"), ws))
    assert c.reason == "quote_not_found"


# -- what renderers and layout do to sources --------------------------------------------------


@pytest.mark.parametrize(
    ("source", "quote", "highlighted"),
    [
        (
            "Employees get **16 weeks** of _paid_ parental leave, as HR says.",
            "Employees get 16 weeks of paid parental leave",
            "Employees get **16 weeks** of _paid_ parental leave",
        ),
        (
            "See [the leave policy](https://intranet.example/leave) for the 16 weeks rule.",
            "See the leave policy for the 16 weeks rule",
            "See [the leave policy](https://intranet.example/leave) for the 16 weeks rule",
        ),
        (
            "Run `quotebound verify` on the 16 weeks answer before shipping.",
            "Run quotebound verify on the 16 weeks answer",
            "Run `quotebound verify` on the 16 weeks answer",
        ),
        (
            "Employees get 16 weeks of paid paren\u00adtal leave in total.",  # a soft hyphen
            "Employees get 16 weeks of paid parental leave",
            "Employees get 16 weeks of paid paren\u00adtal leave",
        ),
        (
            "Employees get 16 weeks of ﬁnancially paid leave in total.",  # a ligature
            "Employees get 16 weeks of financially paid leave",
            "Employees get 16 weeks of ﬁnancially paid leave",
        ),
    ],
)
def test_quotes_survive_markup_and_layout(source: str, quote: str, highlighted: str) -> None:
    ws = WorkingSet([Source("S1", source)])
    c = only_citation(check(one("Employees get 16 weeks of leave.", "S1", quote), ws))
    assert c.valid, c.message
    assert source[c.span[0] : c.span[1]] == highlighted


def test_struck_through_text_is_not_the_sources_word() -> None:
    ws = WorkingSet(
        [Source("S1", "Effective 2025 the parental leave is ~~16~~ 20 weeks for all staff.")]
    )
    c = only_citation(
        check(one("The parental leave is 16 weeks.", "S1", "the parental leave is 16 weeks"), ws)
    )
    assert c.reason == "quote_not_found"
    c = only_citation(
        check(one("The parental leave is 20 weeks.", "S1", "the parental leave is 20 weeks"), ws)
    )
    assert c.valid
    ws = WorkingSet([Source("S1", "Refunds take ~5 business days to reach the card.")])
    c = only_citation(check(one("Refunds take 5 days.", "S1", "Refunds take 5 business days"), ws))
    assert c.reason == "quote_not_found"  # "~5" is "about 5": the tilde is a word of it


def test_markup_inside_a_word_is_not_taken_out() -> None:
    ws = WorkingSet([Source("S1", "Set the flag max_leave_weeks to 16 for every employee.")])
    c = only_citation(check(one("The flag is 16.", "S1", "Set the flag maxleaveweeks to 16"), ws))
    assert c.reason == "quote_not_found"


def test_pdf_line_break_hyphenation_is_cleaned_at_ingest_and_the_span_maps() -> None:
    page = (
        "Employees are entitled to sixteen weeks of paid paren-\ntal leave unless local law\n"
        "provides more."
    )
    text = clean_text(page)
    ws = WorkingSet([Source("S1", text)])
    quote = "entitled to sixteen weeks of paid parental leave unless local law provides more"
    c = only_citation(check(one("Employees get sixteen weeks of paid leave.", "S1", quote), ws))
    assert c.valid, (text, c.message)
    assert " ".join(text[c.span[0] : c.span[1]].split()) == quote
