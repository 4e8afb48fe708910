"""The answer pipeline with the scripted model, branch by branch, and the extractive provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quotebound.cards import text_fragment
from quotebound.corpus import Chunk, LoadedDocument, Page
from quotebound.entailment.base import Judgement
from quotebound.pipeline import AnswerCheck, AskOptions, ask, reverify
from quotebound.providers.base import ProviderError
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.providers.scripted import ScriptedProvider
from quotebound.store import Store, open_store
from quotebound.traceview import served_verdict

LEAVE = "Employees are entitled to 16 weeks of paid parental leave unless local law provides more."
GERMANY = (
    "In Germany, the company tops up statutory parental allowance to full salary for the "
    "first 14 weeks."
)
CONTRACTORS = "Contractors are not eligible for company-paid parental leave."
FILLER = [
    "Expense reports are due within 30 days of travel.",
    "Laptops are replaced every four years by the IT team.",
    "The office is closed on public holidays in each country.",
]


def _doc(name: str, *paras: str, pdf: bool = False) -> tuple[LoadedDocument, list[Chunk]]:
    text = "\n\n".join(paras)
    chunks, pages, at = [], [], 0
    for n, para in enumerate(paras, 1):
        start = text.index(para, at)
        chunks.append(Chunk(para, start, start + len(para), pages=(n,) if pdf else ()))
        pages.append(Page(n, start, start + len(para)))
        at = start + len(para)
    media = "application/pdf" if pdf else "text/html"
    return LoadedDocument(
        name, text, media, title=name.split(".")[0].title(), pages=tuple(pages) if pdf else ()
    ), chunks


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as opened:
        opened.ingest(
            "hr", *_doc("leave.pdf", LEAVE, GERMANY, pdf=True), url="https://hr.example/leave.pdf"
        )
        opened.ingest(
            "hr", *_doc("contractors.html", CONTRACTORS), url="https://hr.example/contractors.html"
        )
        for n, para in enumerate(FILLER):
            opened.ingest("hr", *_doc(f"other{n}.txt", para))
        yield opened


def sid_of(provider: ScriptedProvider, text: str) -> str:
    ws = provider.requests[0].working_set
    return next(s.id for s in ws if text in s.text)


def answer_json(*claims: tuple[str, str, str], answerable: bool = True, missing: str = "") -> str:
    return json.dumps(
        {
            "answerable": answerable,
            "missing": missing,
            "claims": [{"text": t, "citations": [{"source": s, "quote": q}]} for t, s, q in claims],
        }
    )


QUESTION = "How many weeks of parental leave do employees get in Germany?"


def _scripted_for(store: Store, make: list) -> ScriptedProvider:  # type: ignore[type-arg]
    """A scripted model whose outputs are built once the working set's ids are known."""
    probe = ScriptedProvider(["{}", "{}"])
    ask(QUESTION, store, probe)
    ids = {text: sid_of(probe, text) for text in (LEAVE, GERMANY)}
    return ScriptedProvider([m(ids) if callable(m) else m for m in make])


def test_valid_first_time(store: Store) -> None:
    provider = _scripted_for(
        store,
        [
            lambda ids: answer_json(
                (
                    "Employees get 16 weeks of paid parental leave.",
                    ids[LEAVE],
                    "entitled to 16 weeks of paid parental leave",
                ),
                (
                    "In Germany pay is topped up to full salary for the first 14 weeks.",
                    ids[GERMANY],
                    "to full salary for the first 14 weeks",
                ),
            )
        ],
    )
    answer = ask(QUESTION, store, provider)
    assert answer.status == "grounded" and not answer.repaired
    assert [c.cards for c in answer.claims] == [(1,), (1,)]  # one card per document
    [card] = answer.cards
    assert card.document == "hr:leave.pdf" and card.url == "https://hr.example/leave.pdf"
    assert [q.link for q in card.quotes] == [
        "https://hr.example/leave.pdf#page=1",
        "https://hr.example/leave.pdf#page=2",
    ]
    assert [q.text for q in card.quotes] == [
        "entitled to 16 weeks of paid parental leave",
        "to full salary for the first 14 weeks",
    ]
    trace = store.get_trace(answer.trace_id or "")
    assert trace.status == "grounded" and len(trace.attempts) == 1
    assert trace.counts["first_pass_valid_citations"] == 2 and trace.counts["repaired"] == 0
    system = provider.requests[0].messages[0].content
    assert all(sid in system for sid in provider.requests[0].working_set.ids)


def test_a_claim_copied_from_a_list_is_served_without_its_mark_or_line_breaks(
    store: Store,
) -> None:
    raw = "• In Germany pay is topped up to full salary\nfor the first 14 weeks."
    provider = _scripted_for(
        store,
        [lambda ids: answer_json((raw, ids[GERMANY], "to full salary for the first 14 weeks"))],
    )
    answer = ask(QUESTION, store, provider, AskOptions(entailment=None))
    assert [c.text for c in answer.claims] == [
        "In Germany pay is topped up to full salary for the first 14 weeks."
    ]
    trace = store.get_trace(answer.trace_id or "")
    assert json.loads(trace.attempts[0].output)["claims"][0]["text"] == raw  # as written


def test_a_claim_written_twice_is_served_once_with_both_citations(store: Store) -> None:
    claim = "In Germany pay is topped up to full salary for the first 14 weeks."
    provider = _scripted_for(
        store,
        [
            lambda ids: answer_json(
                (claim, ids[GERMANY], "to full salary for the first 14 weeks"),
                (
                    "Employees get 16 weeks of paid parental leave.",
                    ids[LEAVE],
                    "entitled to 16 weeks of paid parental leave",
                ),
                (
                    claim.replace(" to ", "\nto "),
                    ids[GERMANY],
                    "parental allowance to full salary for the first 14 weeks",
                ),
                (claim.replace("Germany", "germany"), ids[GERMANY], "for the first 14 weeks"),
                (claim, ids[GERMANY], "to full salary for the first 14 weeks"),
            )
        ],
    )
    answer = ask(QUESTION, store, provider, AskOptions(entailment=None))
    assert answer.status == "grounded" and not answer.repaired
    assert [c.text for c in answer.claims] == [
        claim,
        "Employees get 16 weeks of paid parental leave.",
    ]
    repeated, leave = answer.claims
    # where it first stood, with each distinct citation of its repeats once
    assert len(repeated.cites) == 3 and len({x.span for x in repeated.cites}) == 3
    assert len(leave.cites) == 1
    assert len(answer.verdicts[-1].kept_claims) == 5  # the verdict keeps what was written


def test_repaired_after_naming_the_failure(store: Store) -> None:
    def germany(weeks: int) -> object:
        claim = f"In Germany pay is topped up for the first {weeks} weeks."
        quote = f"to full salary for the first {weeks} weeks"
        return lambda ids: answer_json((claim, ids[GERMANY], quote))

    provider = _scripted_for(store, [germany(16), germany(14)])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "grounded" and answer.repaired
    repair_turn = provider.requests[1].messages[-1].content
    assert "claim 1: quote not found in" in repair_turn
    assert provider.requests[1].messages[-2].role == "assistant"
    assert provider.requests[1].working_set is provider.requests[0].working_set
    trace = store.get_trace(answer.trace_id or "")
    assert [a.verdict["status"] for a in trace.attempts] == ["ungrounded", "grounded"]  # type: ignore[index]
    assert trace.counts["repaired"] == 1 and trace.counts["first_pass_valid_citations"] == 0


def test_a_claim_that_only_restates_the_question_is_repaired_into_an_answer(
    store: Store,
) -> None:
    """A verified claim whose every word is the question's answers nothing: it is dropped as
    ``restates_question`` and the repair turn asks for the answer (a test that fails when the
    restated claim is served)."""
    question = "How many weeks of paid parental leave do employees get?"
    restated = "Employees get weeks of paid parental leave."
    answered = "Employees get 16 weeks of paid parental leave."
    quote = "entitled to 16 weeks of paid parental leave"
    provider = _scripted_for(
        store,
        [
            lambda ids: answer_json((restated, ids[LEAVE], quote)),
            lambda ids: answer_json((answered, ids[LEAVE], quote)),
        ],
    )
    answer = ask(question, store, provider)
    assert answer.status == "grounded" and answer.repaired
    assert [c.text for c in answer.claims] == [answered]
    repair_turn = provider.requests[1].messages[-1].content
    assert "only restates the question" in repair_turn and restated in repair_turn
    trace = store.get_trace(answer.trace_id)
    first = trace.attempts[0].verdict or {}
    assert [c["reason"] for c in first["claims"]] == ["restates_question"]


def test_they_for_what_the_source_named_before_is_repaired_unless_the_question_says_it(
    store: Store,
) -> None:
    """A claim opening with "They" stands for what was named before it, unless the question
    says "they" itself: ``ask`` refuses it as leaning and the repair turn names it."""
    leaning = "They get 16 weeks of paid parental leave."
    whole = "Employees get 16 weeks of paid parental leave."
    quote = "entitled to 16 weeks of paid parental leave"
    for question, first_served in (
        ("How many weeks of paid parental leave are granted?", False),
        ("How many weeks of paid parental leave do they get?", True),
    ):
        provider = _scripted_for(
            store,
            [
                lambda ids: answer_json((leaning, ids[LEAVE], quote)),
                lambda ids: answer_json((whole, ids[LEAVE], quote)),
            ],
        )
        answer = ask(question, store, provider)
        assert [c.text for c in answer.claims] == [leaning if first_served else whole]
        assert answer.repaired is not first_served
        if not first_served:
            assert 'opens with "they"' in provider.requests[1].messages[-1].content
    # an answer checked against a text that is no question (a placeholder) reads no "they"
    from quotebound import Source, WorkingSet
    from quotebound.pipeline import check_answer

    ws = WorkingSet([Source("S1", LEAVE)])
    checked = check_answer(
        "(an assistant's answer, verified over MCP)", ws, answer_json((leaning, "S1", quote))
    )
    assert [c.text for c in checked.claims] == [leaning]


def test_partially_dropped_after_repair(store: Store) -> None:
    bad = lambda ids: answer_json(  # noqa: E731
        (
            "Employees get 16 weeks of paid parental leave.",
            ids[LEAVE],
            "entitled to 16 weeks of paid parental leave",
        ),
        ("Germany pays 20 weeks.", ids[GERMANY], "to full salary for the first 20 weeks"),
    )
    provider = _scripted_for(store, [bad, bad])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "partial" and answer.repaired
    assert [c.text for c in answer.claims] == ["Employees get 16 weeks of paid parental leave."]
    assert store.get_trace(answer.trace_id or "").counts["dropped_claims"] == 1


def test_model_abstains_helpfully(store: Store) -> None:
    note = "The documents do not mention a parental leave policy for Japan."
    provider = ScriptedProvider([answer_json(answerable=False, missing=note)])
    answer = ask("What is the parental leave policy in Japan?", store, provider)
    assert answer.status == "abstained" and answer.claims == ()
    assert answer.abstention is not None
    assert answer.abstention.missing == note  # it states no fact: shown
    assert "Leave" in answer.abstention.searched
    trace = store.get_trace(answer.trace_id or "")
    assert trace.retrieved and all("#c" in key for key in trace.retrieved)
    assert trace.counts["abstained"] == 1


def test_unparseable_twice_abstains(store: Store) -> None:
    provider = ScriptedProvider(['{"answerable": true, "claims": [', "still not json {"])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "abstained" and answer.repaired
    assert "could not be read" in answer.abstention.missing  # type: ignore[union-attr]
    assert "could not be read" in provider.requests[1].messages[-1].content


def test_provider_error_is_a_status_and_the_trace_is_kept(store: Store) -> None:
    provider = ScriptedProvider([ProviderError("timeout", "the model did not answer in 60 s")])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "provider_error"
    assert answer.error == "timeout: the model did not answer in 60 s"
    trace = store.get_trace(answer.trace_id or "")
    assert trace.status == "provider_error"
    # the error is a field of the attempt, not a marker in its output
    [attempt] = trace.attempts
    assert attempt.error == "timeout: the model did not answer in 60 s"
    assert attempt.output == "" and attempt.verdict is None


def test_provider_error_on_repair_keeps_the_first_verdict(store: Store) -> None:
    provider = _scripted_for(
        store,
        [
            lambda ids: answer_json(
                (
                    "Employees get 16 weeks of paid parental leave.",
                    ids[LEAVE],
                    "entitled to 16 weeks of paid parental leave",
                ),
                ("Germany pays 20 weeks.", ids[GERMANY], "for the first 20 weeks"),
            ),
            ProviderError("http_error", "HTTP 503"),
        ],
    )
    answer = ask(QUESTION, store, provider)
    assert answer.status == "partial" and len(answer.claims) == 1
    assert answer.error == "http_error: HTTP 503"


def test_nothing_retrieved_abstains_without_a_model_call(store: Store) -> None:
    provider = ScriptedProvider([])
    answer = ask("quantum chromodynamics", store, provider)
    assert answer.status == "abstained" and provider.requests == []
    assert answer.abstention is not None and answer.abstention.searched == ()
    assert "ingest" in answer.abstention.next_step


def test_acl_and_corpus_reach_the_working_set(store: Store, tmp_path: Path) -> None:
    store.ingest(
        "secret", *_doc("exec.txt", "Executives get 52 weeks of parental leave."), acl=["exec"]
    )
    provider = ScriptedProvider(["{}", "{}"])
    ask("parental leave weeks executives", store, provider, AskOptions(groups=["staff"]))
    assert all("52" not in s.text for s in provider.requests[0].working_set)
    provider = ScriptedProvider(["{}", "{}"])
    ask(
        "parental leave weeks executives",
        store,
        provider,
        AskOptions(corpora=["secret"], groups=["exec"]),
    )
    assert [s.text for s in provider.requests[0].working_set] == [
        "Executives get 52 weeks of parental leave."
    ]


def test_extractive_answers_verbatim_and_abstains(store: Store) -> None:
    answer = ask(QUESTION, store, ExtractiveProvider())
    assert answer.status == "grounded"
    assert any("14 weeks" in c.text for c in answer.claims)
    off_topic = ask("Who won the football world cup?", store, ExtractiveProvider())
    assert off_topic.status == "abstained"


@pytest.mark.parametrize(
    ("sections", "label"),
    [
        (("Parental Leave", "Parental Leave"), "Parental Leave"),  # one section: its title
        (("Parental Leave", "Travel"), "policy.pdf"),  # two: the document's name
    ],
)
def test_a_card_is_titled_by_its_sources_only_when_they_share_a_title(
    sections: tuple[str, str], label: str
) -> None:
    from quotebound import Source, WorkingSet, verify
    from quotebound.cards import build_cards

    texts = ("Parental leave lasts sixteen weeks.", "Hotels are capped at 180 EUR a night.")
    ws = WorkingSet(
        [
            Source(f"S{n}", text, key=f"hr:policy.pdf#c{n}", title=title, page=n)
            for n, (text, title) in enumerate(zip(texts, sections, strict=True), 1)
        ]
    )
    claims = [
        {"text": text, "citations": [{"source": f"S{n}", "quote": text}]}
        for n, text in enumerate(texts, 1)
    ]
    raw = json.dumps({"answerable": True, "claims": claims, "missing": ""})
    cards, _ = build_cards(verify(ws, raw, "json"), ws)
    assert [(c.document, c.label, len(c.quotes)) for c in cards] == [("hr:policy.pdf", label, 2)]


def test_html_cards_link_to_a_text_fragment(store: Store) -> None:
    provider = ScriptedProvider(["{}"])
    ask("contractors parental leave", store, provider)
    sid = sid_of(provider, CONTRACTORS)
    provider = ScriptedProvider(
        [
            answer_json(
                (
                    "Contractors get no company-paid parental leave.",
                    sid,
                    "Contractors are not eligible for company-paid parental leave.",
                )
            )
        ]
    )
    answer = ask("contractors parental leave", store, provider)
    [card] = answer.cards
    link = card.quotes[0].link or ""
    assert link.startswith("https://hr.example/contractors.html#:~:text=")
    assert "%2D" in link  # the dash in company-paid is encoded, as text directives require
    assert text_fragment("a-b, c & d") == "a%2Db%2C%20c%20%26%20d"


def test_native_citation_provider_is_repaired_in_its_own_words(store: Store) -> None:
    from quotebound.providers.base import Capabilities

    class NativeScripted(ScriptedProvider):
        capabilities = Capabilities(native_citations=True)

    probe = ScriptedProvider(["{}", "{}"])
    ask(QUESTION, store, probe)
    gid = sid_of(probe, GERMANY)
    provider = NativeScripted(
        [
            answer_json(("Germany pays 16 weeks.", gid, "to full salary for the first 16 weeks")),
            answer_json(("Germany pays 14 weeks.", gid, "to full salary for the first 14 weeks")),
        ]
    )
    answer = ask(QUESTION, store, provider)
    assert answer.status == "grounded" and answer.repaired
    shown, request_again = provider.requests[1].messages[-2:]
    assert shown.content == "Germany pays 16 weeks."  # its own words, not our JSON mapping
    assert "plain sentences, citing the documents" in request_again.content


@pytest.mark.parametrize("note", ["answerable", "None", " n/a. ", ""])
def test_an_abstention_note_that_says_nothing_is_replaced(store: Store, note: str) -> None:
    provider = ScriptedProvider([json.dumps({"answerable": False, "missing": note, "claims": []})])
    result = ask(QUESTION, store, provider)
    assert result.status == "abstained" and result.abstention is not None
    assert result.abstention.missing == "the documents searched do not state this"


@pytest.mark.parametrize(
    "note",
    [
        "pension plans",  # a topic, or a guess at the answer: the code cannot tell them apart
        "the Yellow River",
        "14",
        "Employees in Germany get 14 weeks.",
        "The company does not offer parental leave in Germany.",  # an unverified negative claim
        "The documents do not say, but it is probably 14 weeks.",
    ],
)
def test_an_abstention_note_that_states_a_fact_is_not_shown(store: Store, note: str) -> None:
    provider = ScriptedProvider([json.dumps({"answerable": False, "missing": note, "claims": []})])
    result = ask(QUESTION, store, provider)
    assert result.abstention is not None
    assert result.abstention.missing == "the documents searched do not state this"
    assert note not in json.dumps(result.to_dict()["abstention"])


def test_an_abstention_note_that_only_says_what_the_documents_lack_is_shown(store: Store) -> None:
    note = "The sources do not say how many weeks of parental leave employees get in Germany."
    provider = ScriptedProvider([json.dumps({"answerable": False, "missing": note, "claims": []})])
    result = ask(QUESTION, store, provider)
    assert result.abstention is not None and result.abstention.missing == note


# -- what of the question the answer leaves out: named in the repair turn, then to the reader ---

TWO_PARTS = "How many weeks of parental leave do employees get, and when are expense reports due?"
EXPENSES = FILLER[0]


def _ids(store: Store, question: str) -> dict[str, str]:
    probe = ScriptedProvider(["{}", "{}"])
    ask(question, store, probe)
    ws = probe.requests[0].working_set
    return {text: s.id for text in (LEAVE, GERMANY, EXPENSES) for s in ws if text in s.text}


def test_a_part_of_the_question_left_out_is_named_in_the_repair(store: Store) -> None:
    ids = _ids(store, TWO_PARTS)
    leave = ("Employees get 16 weeks of paid parental leave.", ids[LEAVE], LEAVE)
    expenses = ("Expense reports are due within 30 days of travel.", ids[EXPENSES], EXPENSES)
    provider = ScriptedProvider([answer_json(leave), answer_json(leave, expenses)])
    answer = ask(TWO_PARTS, store, provider)
    assert answer.status == "grounded" and answer.repaired
    repair_turn = provider.requests[1].messages[-1].content
    assert (
        'does not address "when are expense reports due" from the question, although '
        f"{ids[EXPENSES]} mentions it" in repair_turn
    )
    assert [c.text for c in answer.claims] == [leave[0], expenses[0]]
    assert answer.unaddressed == ()
    assert store.get_trace(answer.trace_id or "").counts["unaddressed"] == 0


def test_a_part_still_left_out_after_the_repair_is_named_to_the_reader(store: Store) -> None:
    ids = _ids(store, TWO_PARTS)
    leave = ("Employees get 16 weeks of paid parental leave.", ids[LEAVE], LEAVE)
    provider = ScriptedProvider([answer_json(leave), answer_json(leave)])
    answer = ask(TWO_PARTS, store, provider)
    assert answer.status == "grounded" and len(provider.requests) == 2  # one repair, no more
    assert answer.unaddressed == ("when are expense reports due",)
    assert answer.to_dict()["unaddressed"] == ["when are expense reports due"]
    assert store.get_trace(answer.trace_id or "").counts["unaddressed"] == 1


def test_the_general_rule_without_the_one_for_the_name_asked_about_is_repaired(
    store: Store,
) -> None:
    ids = _ids(store, QUESTION)
    general = ("Employees are entitled to 16 weeks of paid parental leave.", ids[LEAVE], LEAVE)
    germany = (
        "In Germany, the company tops up pay to full salary for the first 14 weeks.",
        ids[GERMANY],
        GERMANY,
    )
    # the repair answers the part it was asked for, and drops the claim that had passed
    provider = ScriptedProvider([answer_json(general), answer_json(germany)])
    answer = ask(QUESTION, store, provider)
    repair_turn = provider.requests[1].messages[-1].content
    assert f'does not address "Germany" from the question, although {ids[GERMANY]}' in repair_turn
    # what either attempt kept is served: the general rule, then the one for Germany
    assert [c.text for c in answer.claims] == [general[0], germany[0]]
    assert answer.unaddressed == () and answer.status == "grounded"
    trace = store.get_trace(answer.trace_id or "")
    assert trace.counts["served_attempt"] == 2 and trace.counts["kept_from_first_attempt"] == 1
    shown = served_verdict(trace)
    assert shown is not None and [c.text for c in shown.kept_claims] == [general[0], germany[0]]


def test_an_answer_that_addresses_everything_is_not_repaired(store: Store) -> None:
    ids = _ids(store, QUESTION)
    germany = (
        "In Germany, the company tops up pay to full salary for the first 14 weeks.",
        ids[GERMANY],
        GERMANY,
    )
    provider = ScriptedProvider([answer_json(germany)])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "grounded" and not answer.repaired and len(provider.requests) == 1


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("14 weeks", "claim 1 ('14 weeks') is a fragment: write it as one complete sentence"),
        (  # leans on the sentence before it: the repair asks it to name its subject
            "This lasts 14 weeks at full salary.",
            "claim 1 ('This lasts 14 weeks at full salary.') is a sentence that leans on",
        ),
    ],
)
def test_a_fragment_claim_is_refused_and_repaired_into_a_sentence(
    store: Store, written: str, said: str
) -> None:
    ids = _ids(store, QUESTION)
    sentence = (
        "In Germany, the company tops up pay to full salary for the first 14 weeks.",
        ids[GERMANY],
        GERMANY,
    )
    provider = ScriptedProvider(
        [answer_json((written, ids[GERMANY], GERMANY)), answer_json(sentence)]
    )
    answer = ask(QUESTION, store, provider)
    first = answer.verdicts[0]
    assert [(c.kept, c.reason) for c in first.claims] == [(False, "claim_fragment")]
    repair_turn = provider.requests[1].messages[-1].content
    assert said in repair_turn and "says what it is about" in repair_turn
    assert [c.text for c in answer.claims] == [sentence[0]]


def test_fragments_are_never_served(store: Store) -> None:
    ids = _ids(store, QUESTION)
    provider = ScriptedProvider(
        [
            answer_json(("14 weeks", ids[GERMANY], GERMANY), ("one claim", ids[LEAVE], LEAVE)),
            answer_json(("16 weeks.", ids[LEAVE], LEAVE)),
        ]
    )
    answer = ask(QUESTION, store, provider)
    assert answer.status == "abstained" and answer.claims == () and answer.cards == ()
    assert answer.abstention is not None
    assert "could be verified" in answer.abstention.missing


def test_the_support_tier_never_brings_a_fragment_back(store: Store) -> None:
    from quotebound.entailment.heuristic import HeuristicBackend

    ids = _ids(store, QUESTION)
    provider = ScriptedProvider([answer_json(("14 weeks", ids[GERMANY], GERMANY))] * 2)
    answer = ask(QUESTION, store, provider, AskOptions(entailment=HeuristicBackend()))
    assert answer.status == "abstained" and answer.claims == ()
    for verdict in answer.verdicts:
        assert [c.reason for c in verdict.claims] == ["claim_fragment"]
        assert verdict.claims[0].citations[0].entailment is None  # not judged at all


# -- a paraphrase the support tier cannot follow: the source's own sentence is served --------


def test_a_paraphrase_failing_only_support_is_served_as_its_quotes_sentence(
    store: Store,
) -> None:
    """Issue 45: the quote is verbatim and on the claim's words; the tier did not follow the
    model's paraphrase. The answer serves the cited source's sentence (its own words), not an
    abstention; the model's claim is kept beside it (``restates``)."""
    from quotebound.entailment.heuristic import HeuristicBackend

    paraphrase = "The firm supplements state benefits in Germany so pay stays whole for 14 weeks."
    quote = "tops up statutory parental allowance to full salary for the first 14 weeks"
    provider = _scripted_for(store, [lambda ids: answer_json((paraphrase, ids[GERMANY], quote))])
    answer = ask(QUESTION, store, provider, AskOptions(entailment=HeuristicBackend()))
    assert answer.status == "grounded" and not answer.repaired
    [claim] = answer.claims
    assert claim.text == GERMANY
    final = answer.verdicts[-1]
    [kept] = final.kept_claims
    assert kept.restates == paraphrase and "quoted" in final.tiers
    assert kept.citations[0].quote == GERMANY and kept.citations[0].valid
    # off: the claim is dropped and the answer abstains (the repair turn has the same output)
    provider = _scripted_for(
        store, [lambda ids: answer_json((paraphrase, ids[GERMANY], quote))] * 2
    )
    off = AskOptions(entailment=HeuristicBackend(), source_sentences=False)
    assert ask(QUESTION, store, provider, off).status == "abstained"


def test_a_source_sentence_that_is_a_fragment_is_never_served_in_a_claims_place(
    store: Store,
) -> None:
    from quotebound import Source, WorkingSet, verify
    from quotebound.entailment.heuristic import HeuristicBackend
    from quotebound.entailment.tier import check_entailment
    from quotebound.reanchor import quoted_sentences

    ws = WorkingSet(
        [Source("S1", "It tops up statutory parental allowance to full salary for 14 weeks.")]
    )
    raw = answer_json(
        (
            "The firm supplements state benefits in Germany so pay stays whole for 14 weeks.",
            "S1",
            "tops up statutory parental allowance to full salary for 14 weeks",
        )
    )
    judged = check_entailment(verify(ws, raw), ws, HeuristicBackend())
    assert [c.reason for c in judged.claims[0].citations] == ["not_entailed"]
    assert quoted_sentences(judged, ws) is judged  # "It ...": leans on what is not there
    # "They ...": it leans unless the question says "they" (only ``ask`` knows the question)
    they = WorkingSet(
        [Source("S1", "They top up statutory parental allowance to full salary for 14 weeks.")]
    )
    raw = raw.replace("tops up", "top up")
    judged = check_entailment(verify(they, raw), they, HeuristicBackend())
    assert [c.reason for c in judged.claims[0].citations] == ["not_entailed"]
    unasked = "How long is parental allowance topped up to full salary?"
    assert quoted_sentences(judged, they, question=unasked) is judged
    asked = "How long do they top up parental allowance to full salary?"
    served = quoted_sentences(judged, they, question=asked)
    assert served.claims[0].kept and served.claims[0].text.startswith("They top up")


def test_a_claim_in_the_questions_words_is_served_in_its_quotes_words(store: Store) -> None:
    """Issue 53: a kept claim that says words of the question its quoted sentence lacks ("get"
    for the source's "entitled to") is served as that sentence, the model's claim beside it
    (``restates``), though the tier passed it; a claim in its quote's own words is served as
    written."""
    from quotebound.entailment import make_backend

    question = "How many weeks of paid parental leave do employees get?"
    quote = "entitled to 16 weeks of paid parental leave"
    for written, served in (
        ("Employees get 16 weeks of paid parental leave.", LEAVE),
        (
            "Employees are entitled to 16 weeks of paid parental leave.",
            "Employees are entitled to 16 weeks of paid parental leave.",
        ),
    ):
        provider = _scripted_for(
            store, [lambda ids, w=written: answer_json((w, ids[LEAVE], quote))]
        )
        tier = make_backend("judge", provider=ScriptedProvider(["supported"] * 10))
        answer = ask(question, store, provider, AskOptions(entailment=tier))
        assert answer.status == "grounded" and not answer.repaired
        assert [c.text for c in answer.claims] == [served]
        [kept] = answer.verdicts[-1].kept_claims
        assert kept.restates == (written if served != written else None)


def test_a_claim_in_the_questions_words_stays_when_its_sentence_cannot_be_served() -> None:
    """The quoted sentence is served only where it is a claim itself: "It entitles ..." leans
    on what is not there, and the model's claim stays as it was (kept: the rule moves words,
    it drops nothing)."""
    from quotebound import Source, WorkingSet, verify
    from quotebound.reanchor import quoted_sentences

    ws = WorkingSet([Source("S1", "It entitles employees to 16 weeks of paid parental leave.")])
    raw = answer_json(
        (
            "Employees get 16 weeks of paid parental leave.",
            "S1",
            "entitles employees to 16 weeks of paid parental leave",
        )
    )
    verdict = verify(ws, raw)
    question = "How many weeks of paid parental leave do employees get?"
    assert quoted_sentences(verdict, ws, question=question) is verdict
    # and without the question nothing is read as borrowed
    whole = WorkingSet([Source("S1", "The plan entitles employees to 16 weeks of leave.")])
    raw = raw.replace('paid parental leave"}', 'leave"}').replace(
        "16 weeks of paid parental leave.", "16 weeks of leave."
    )
    verdict = verify(whole, raw)
    assert verdict.claims[0].kept
    assert quoted_sentences(verdict, whole) is verdict
    swapped = quoted_sentences(verdict, whole, question="How many weeks do employees get?")
    assert swapped.claims[0].text == "The plan entitles employees to 16 weeks of leave."
    assert swapped.claims[0].restates == "Employees get 16 weeks of leave."


def test_a_claim_in_the_questions_words_is_swapped_only_for_one_whole_sentence() -> None:
    """Served as one sentence, a claim citing two would lose what the other says; a quote
    across two sentences is no one sentence's; and no sentence is served twice."""
    from quotebound import Source, WorkingSet, verify
    from quotebound.reanchor import quoted_sentences

    def claims(*made: tuple[str, list[tuple[str, str]]]) -> str:
        return json.dumps(
            {
                "answerable": True,
                "claims": [
                    {"text": t, "citations": [{"source": s, "quote": q} for s, q in cites]}
                    for t, cites in made
                ],
            }
        )

    ws = WorkingSet(
        [
            Source("S1", "The plan entitles employees to 16 weeks of leave, paid at 80 percent."),
            Source("S2", "Staff also receive a 500 euro bonus at birth."),
            Source("S3", "The plan started in 2020. It entitles staff to 12 weeks of leave."),
        ]
    )
    question = "How many weeks of leave and what bonus do employees get?"
    two_sources = claims(
        (
            "Employees get 16 weeks of leave and a 500 euro bonus.",
            [
                ("S1", "entitles employees to 16 weeks of leave"),
                ("S2", "a 500 euro bonus at birth"),
            ],
        )
    )
    verdict = verify(ws, two_sources)
    assert verdict.claims[0].kept
    assert quoted_sentences(verdict, ws, question=question) is verdict
    across = claims(
        (
            "The plan started in 2020 and staff get 12 weeks of leave.",
            [("S3", "started in 2020. It entitles staff to 12 weeks of leave")],
        )
    )
    verdict = verify(ws, across)
    assert verdict.claims[0].kept
    assert quoted_sentences(verdict, ws, question=question) is verdict
    twice = claims(
        ("Employees get 16 weeks of leave.", [("S1", "entitles employees to 16 weeks of leave")]),
        ("The leave employees get is paid at 80 percent.", [("S1", "paid at 80 percent")]),
    )
    verdict = verify(ws, twice)
    assert [c.kept for c in verdict.claims] == [True, True]
    swapped = quoted_sentences(verdict, ws, question=question)
    assert [c.text for c in swapped.claims] == [
        ws.get("S1").text,  # type: ignore[union-attr]
        "The leave employees get is paid at 80 percent.",
    ]


# -- the answer check: verified quotes on the topic that do not answer the question -----------


def _check(verdicts: dict[str, bool], seen: list[tuple[str, str]]) -> AnswerCheck:
    """An answer check that answers from a table of question parts (and records its calls)."""

    def check(question: str, evidence: str) -> Judgement:
        seen.append((question, evidence))
        label = "supported" if verdicts.get(question, False) else "unrelated"
        return Judgement(label, 0.9, "judge", "judge-2+table")

    return check


def test_an_answer_the_check_refuses_becomes_an_abstention(store: Store) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    seen: list[tuple[str, str]] = []
    options = AskOptions(answer_check=_check({}, seen))
    answer = ask(QUESTION, store, ScriptedProvider([answer_json(germany)]), options)
    assert answer.status == "abstained" and answer.claims == () and answer.cards == ()
    assert (
        answer.abstention is not None
        and "do not answer what was asked" in answer.abstention.missing
    )
    assert seen == [(QUESTION.rstrip("?"), GERMANY)]  # the verified quote is the evidence
    assert answer.answer_check is not None and not answer.answer_check.supported
    trace = store.get_trace(answer.trace_id or "")
    assert trace.status == "abstained" and trace.counts["answer_check_refused"] == 1
    assert trace.attempts[0].verdict["status"] == "grounded"  # what the model said, kept
    assert "answer_check_ms" in trace.timings
    # why it abstained, kept with the trace: the check's judgement of attempt 1
    assert trace.answer_checks == ({"attempt": 1, **answer.answer_check.to_dict()},)
    assert trace.answer_checks[0]["label"] == "unrelated"


def test_an_answer_the_check_accepts_is_served(store: Store) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    options = AskOptions(answer_check=_check({QUESTION.rstrip("?"): True}, []))
    answer = ask(QUESTION, store, ScriptedProvider([answer_json(germany)]), options)
    assert answer.status == "grounded" and [c.text for c in answer.claims] == [germany[0]]
    assert answer.to_dict()["answer_check"]["label"] == "supported"
    assert store.get_trace(answer.trace_id or "").counts["answer_check_refused"] == 0


def test_one_answered_part_of_a_question_is_enough(store: Store) -> None:
    ids = _ids(store, TWO_PARTS)
    leave = ("Employees get 16 weeks of paid parental leave.", ids[LEAVE], LEAVE)
    expenses = ("Expense reports are due within 30 days of travel.", ids[EXPENSES], EXPENSES)
    seen: list[tuple[str, str]] = []
    check = _check({"when are expense reports due": True}, seen)
    provider = ScriptedProvider([answer_json(leave, expenses)])
    answer = ask(TWO_PARTS, store, provider, AskOptions(answer_check=check))
    assert answer.status == "grounded" and len(answer.claims) == 2
    assert [q for q, _ in seen] == [
        "How many weeks of parental leave do employees get",
        "when are expense reports due",
    ]
    assert seen[0][1] == f"{LEAVE} {EXPENSES}"


def test_a_check_that_takes_documents_is_sent_the_cited_sources_titles(store: Store) -> None:
    from quotebound.entailment.base import reads_documents

    ids = _ids(store, TWO_PARTS)
    leave = ("Employees get 16 weeks of paid parental leave.", ids[LEAVE], LEAVE)
    expenses = ("Expense reports are due within 30 days of travel.", ids[EXPENSES], EXPENSES)
    sent: list[tuple[str, tuple[str, ...]]] = []

    def check(question: str, evidence: str, documents: tuple[str, ...] = ()) -> Judgement:
        sent.append((evidence, tuple(documents)))
        return Judgement("supported", 0.9, "judge", "judge-2+titles")

    provider = ScriptedProvider([answer_json(leave, expenses)])
    answer = ask(TWO_PARTS, store, provider, AskOptions(answer_check=check))
    assert answer.status == "grounded"
    titles = {s.id: s.title for s in provider.requests[0].working_set}
    # each cited document's title once, in the order the claims cite them; the quotes alone
    # are still the evidence
    assert sent == [(f"{LEAVE} {EXPENSES}", (titles[ids[LEAVE]], titles[ids[EXPENSES]]))]
    assert titles[ids[LEAVE]] and titles[ids[LEAVE]] != titles[ids[EXPENSES]]
    assert reads_documents(check) and not reads_documents(_check({}, []))
    assert not reads_documents(max)  # a builtin whose signature Python cannot read: no titles


def test_the_check_is_not_run_on_an_abstention(store: Store) -> None:
    seen: list[tuple[str, str]] = []
    provider = ScriptedProvider([answer_json(answerable=False)])
    answer = ask(QUESTION, store, provider, AskOptions(answer_check=_check({}, seen)))
    assert answer.status == "abstained" and seen == [] and answer.answer_check is None


def test_the_repair_points_a_claim_its_quote_did_not_carry_at_the_nearest_sentence(
    store: Store,
) -> None:
    ids = _ids(store, QUESTION)
    wrong = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[LEAVE], LEAVE)
    right = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    provider = ScriptedProvider([answer_json(wrong), answer_json(right)])
    answer = ask(QUESTION, store, provider, AskOptions(reanchor=False))
    first = answer.verdicts[0].claims[0]
    assert [c.reason for c in first.citations] == ["number_not_in_source"]
    repair_turn = provider.requests[1].messages[-1].content
    assert f'claim 1: the sentence of {ids[GERMANY]} nearest to it is "{GERMANY}"' in repair_turn
    assert answer.status == "grounded" and answer.claims[0].text == right[0]


def test_a_claim_its_quote_did_not_carry_is_cited_to_the_sentence_that_does(store: Store) -> None:
    ids = _ids(store, QUESTION)
    # Every word of it in the GERMANY sentence: with no entailment tier to judge it next
    # (AskOptions' default), the code places a sentence only when it holds all of them.
    text = (
        "In Germany, the company tops up parental allowance to full salary for the first 14 weeks."
    )
    wrong = (text, ids[LEAVE], LEAVE)
    provider = ScriptedProvider([answer_json(wrong)])
    answer = ask(QUESTION, store, provider)
    assert len(provider.requests) == 1  # nothing to repair: the code found the sentence
    assert answer.status == "grounded" and answer.claims[0].text == wrong[0]
    placed, own = answer.verdicts[0].claims[0].citations
    assert placed.anchored and placed.valid and placed.source == ids[GERMANY]
    assert placed.quote == GERMANY
    assert not own.anchored and own.reason == "number_not_in_source"  # the model's, kept as written
    assert [c.source for c in answer.claims[0].cites] == [ids[GERMANY]]  # the card: that sentence
    assert "anchor" in answer.verdicts[0].tiers
    stored = served_verdict(store.get_trace(answer.trace_id))
    assert stored is not None and stored.claims[0].citations[0].anchored


def test_a_claim_no_sentence_carries_is_not_reanchored(store: Store) -> None:
    ids = _ids(store, QUESTION)
    invented = ("In Germany, pay is topped up to full salary for 18 weeks.", ids[LEAVE], LEAVE)
    provider = ScriptedProvider([answer_json(invented), answer_json(invented)])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "abstained"  # 18 is in no sentence: the nearest one cannot carry it
    assert not any(c.anchored for v in answer.verdicts for cl in v.claims for c in cl.citations)


def test_a_fragment_is_never_reanchored(store: Store) -> None:
    ids = _ids(store, QUESTION)
    fragment = ("14 weeks", ids[LEAVE], LEAVE)
    provider = ScriptedProvider([answer_json(fragment), answer_json(fragment)])
    answer = ask(QUESTION, store, provider)
    assert answer.status == "abstained"
    assert answer.verdicts[0].claims[0].reason == "claim_fragment"
    assert len(answer.verdicts[0].claims[0].citations) == 1


OLD_POLICY = "Employees get 12 weeks of paid parental leave under the 2024 policy."
NEW_POLICY = "From 2026, employees get 16 weeks of paid parental leave."
POLICY_QUESTION = "How many weeks of paid parental leave do employees get?"


@pytest.fixture
def policies(tmp_path: Path) -> Iterator[Store]:
    """Two policies that disagree: the 2024 one and its 2026 successor."""
    with open_store(f"sqlite:///{tmp_path / 'policies.db'}") as opened:
        for name, text, updated in (
            ("policy-2024.txt", OLD_POLICY, "2024-01-10"),
            ("policy-2026.txt", NEW_POLICY, "2026-01-05"),
        ):
            doc = LoadedDocument(name, text, "text/plain", title=name[:-4], updated=updated)
            opened.ingest("hr", doc, [Chunk(text, 0, len(text))])
        yield opened


def _policy_ids(store: Store) -> dict[str, str]:
    probe = ScriptedProvider(["{}", "{}"])
    ask(POLICY_QUESTION, store, probe)
    ws = probe.requests[0].working_set
    return {s.text: s.id for s in ws}


def test_sources_that_disagree_are_named_in_the_repair_and_reported_both(policies: Store) -> None:
    ids = _policy_ids(policies)
    old = ("Employees get 12 weeks of paid parental leave.", ids[OLD_POLICY], OLD_POLICY)
    new = ("From 2026, employees get 16 weeks of paid parental leave.", ids[NEW_POLICY], NEW_POLICY)
    provider = ScriptedProvider([answer_json(old), answer_json(old, new)])
    answer = ask(POLICY_QUESTION, policies, provider)
    repair_turn = provider.requests[1].messages[-1].content
    assert (
        f"claim 1 gives other figures than {ids[NEW_POLICY]} (updated 2026-01-05), which says "
        f'"{NEW_POLICY}"'
    ) in repair_turn
    assert [c.text for c in answer.claims] == [old[0], new[0]]
    assert answer.conflicts == ()  # both reported, each with its own card and date
    assert sorted(c.updated or "" for c in answer.cards) == ["2024-01-10", "2026-01-05"]
    assert answer.counts["conflicts"] == 0


def test_a_disagreement_left_out_after_the_repair_is_said_beside_the_answer(
    policies: Store,
) -> None:
    ids = _policy_ids(policies)
    old = ("Employees get 12 weeks of paid parental leave.", ids[OLD_POLICY], OLD_POLICY)
    provider = ScriptedProvider([answer_json(old), answer_json(old)])
    answer = ask(POLICY_QUESTION, policies, provider)
    assert answer.status == "grounded" and len(answer.claims) == 1
    [conflict] = answer.conflicts
    assert (conflict.claim, conflict.source, conflict.updated) == (1, ids[NEW_POLICY], "2026-01-05")
    assert conflict.sentence == NEW_POLICY and conflict.label == "policy-2026"
    assert answer.to_dict()["conflicts"][0]["sentence"] == NEW_POLICY
    assert answer.counts["conflicts"] == 1
    from quotebound.cli.ask import answer_report

    assert (
        f"Check which applies: {ids[NEW_POLICY]} (policy-2026, updated 2026-01-05), not cited, "
        f'gives other figures than claim 1: "{NEW_POLICY}"'
    ) in answer_report(answer)


def test_a_conflict_in_the_repair_turn_is_numbered_as_the_other_failures(policies: Store) -> None:
    ids = _policy_ids(policies)
    invented = ("Employees get parental leave in every country.", "S9", OLD_POLICY)
    old = ("Employees get 12 weeks of paid parental leave.", ids[OLD_POLICY], OLD_POLICY)
    provider = ScriptedProvider([answer_json(invented, old), answer_json(old)])
    ask(POLICY_QUESTION, policies, provider)
    repair_turn = provider.requests[1].messages[-1].content
    assert "claim 1 cites 'S9'" in repair_turn
    assert f"claim 2 gives other figures than {ids[NEW_POLICY]}" in repair_turn


def test_the_anthropic_provider_is_verified_on_its_own_response(store: Store) -> None:
    """The real adapter over a fake Messages API: its citations read as received, its offsets
    compared, and the trace holding the response exactly as it came."""
    import httpx

    from quotebound.providers.anthropic import AnthropicProvider

    replies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        documents = [
            b
            for b in json.loads(request.content)["messages"][0]["content"]
            if b["type"] == "document"
        ]
        index = next(i for i, d in enumerate(documents) if GERMANY in d["source"]["data"])
        quote = "tops up statutory parental allowance to full salary for the first 14 weeks"
        reply = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {
                    "type": "text",
                    "text": "In Germany the company pays full salary for 14 weeks.",
                    "citations": [
                        {
                            "type": "char_location",
                            "cited_text": quote,
                            "document_index": index,
                            "document_title": None,
                            "start_char_index": 0,
                            "end_char_index": len(quote),
                        }
                    ],
                }
            ],
        }
        replies.append(reply)
        return httpx.Response(200, json=reply)

    provider = AnthropicProvider(
        "claude-test", base_url="http://claude.test", transport=httpx.MockTransport(handler)
    )
    answer = ask(QUESTION, store, provider, AskOptions(entailment=None))
    assert answer.status == "grounded" and len(replies) == 1
    trace = store.get_trace(answer.trace_id or "")
    assert json.loads(trace.attempts[0].output) == replies[0]
    verdict = served_verdict(trace)
    assert verdict is not None and verdict.format == "anthropic"
    citation = verdict.claims[0].citations[0]
    assert citation.native is not None and citation.native["agrees"] is False  # offsets were off
    assert GERMANY[slice(*citation.native["found"])].startswith("tops up")


def test_ask_sources_cuts_a_source_longer_than_a_chunk_so_that_it_fits() -> None:
    import json as _json

    from quotebound import Source
    from quotebound.pipeline import ask_sources
    from quotebound.providers.scripted import ScriptedProvider

    filler = " ".join(f"Clause {n} covers office supplies and desk lamps." for n in range(300))
    long = f"{filler} Employees are entitled to 16 weeks of paid parental leave."
    assert len(long) > 12_000  # more than the whole budget as one source
    probe = ScriptedProvider(["{}"])
    ask_sources("How long is parental leave?", [Source("a", long, key="handbook")], probe)
    sent = probe.requests[0].working_set
    assert len(sent) > 1 and all(len(s.text) <= 1200 and s.key == "handbook" for s in sent)
    sid = next(s.id for s in sent if "16 weeks" in s.text)
    claim = {
        "text": "Employees get 16 weeks of paid parental leave.",
        "citations": [{"source": sid, "quote": "entitled to 16 weeks of paid parental leave"}],
    }
    model = ScriptedProvider([_json.dumps({"answerable": True, "claims": [claim]})])
    answer = ask_sources("How long is parental leave?", [Source("a", long, key="handbook")], model)
    assert answer.status == "grounded" and answer.counts["retrieved"] == 1


# -- reverify: a traced answer verified again under other settings, no model call ---------------


def test_reverify_gives_the_traced_answer_under_the_same_settings_and_writes_nothing(
    store: Store,
) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    wrong = ("In Germany, employees get 16 weeks of leave.", ids[GERMANY], GERMANY)
    provider = ScriptedProvider([answer_json(germany, wrong), answer_json(wrong)])
    answer = ask(QUESTION, store, provider, AskOptions())
    assert len(answer.verdicts) == 2  # the repair turn was taken, and is replayed
    traces = len(store.list_traces(None))
    trace = store.get_trace(answer.trace_id or "")
    again = reverify(trace, AskOptions())
    assert again.status == answer.status
    assert [c.text for c in again.claims] == [c.text for c in answer.claims] == [germany[0]]
    assert [v.to_dict() for v in again.verdicts] == [v.to_dict() for v in answer.verdicts]
    assert again.trace_id is None and len(store.list_traces(None)) == traces


def test_reverify_under_an_answer_check_turns_the_traced_answer_into_an_abstention(
    store: Store,
) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    answer = ask(QUESTION, store, ScriptedProvider([answer_json(germany)]), AskOptions())
    assert answer.status == "grounded"
    seen: list[tuple[str, str]] = []
    trace = store.get_trace(answer.trace_id or "")
    again = reverify(trace, AskOptions(answer_check=_check({}, seen)))
    assert again.status == "abstained" and again.claims == () and seen
    assert again.verdicts[0].status == "grounded"  # what the model wrote still verifies


def test_reverify_keeps_a_traced_provider_error(store: Store) -> None:
    failing = ScriptedProvider([ProviderError("timeout", "the model took too long")])
    answer = ask(QUESTION, store, failing, AskOptions())
    trace = store.get_trace(answer.trace_id or "")
    again = reverify(trace, AskOptions())
    assert again.status == answer.status == "provider_error" and again.verdicts == ()


# -- the fallback: the documents' own sentences when the model's answer does not pass ----------


class _Counting(ExtractiveProvider):
    """The extractive provider, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def complete(self, request: Any) -> Any:
        self.calls += 1
        return super().complete(request)


def test_when_nothing_verifies_the_fallback_serves_the_documents_own_sentence(
    store: Store,
) -> None:
    ids = _ids(store, QUESTION)
    wrong = ("In Germany, employees get 30 weeks of leave at full salary.", ids[GERMANY], GERMANY)
    provider = ScriptedProvider([answer_json(wrong), answer_json(wrong)])
    fallback = _Counting()
    answer = ask(QUESTION, store, provider, AskOptions(fallback=fallback))
    assert fallback.calls == 1 and answer.status in ("grounded", "partial")
    assert answer.claims and all(c.text.strip() in (LEAVE, GERMANY) for c in answer.claims)
    assert answer.repaired  # the model's repair turn was taken, and it is said
    assert len(answer.verdicts) == 3 and answer.counts["fallback_attempt"] == 3
    trace = store.get_trace(answer.trace_id or "")
    assert trace.counts["fallback_attempt"] == 3 and trace.counts["served_attempt"] == 3
    assert json.loads(trace.attempts[2].output)["claims"]  # the extract, as it was served
    # reverify leaves the fallback's attempt out unless asked for one again
    assert reverify(trace, AskOptions()).status == "abstained"
    again = reverify(trace, AskOptions(fallback=ExtractiveProvider()))
    assert [c.text for c in again.claims] == [c.text for c in answer.claims]
    assert again.counts["fallback_attempt"] == 3


def test_the_fallback_passes_the_answer_check_or_the_abstention_stands(store: Store) -> None:
    ids = _ids(store, QUESTION)
    wrong = ("In Germany, employees get 30 weeks of leave at full salary.", ids[GERMANY], GERMANY)
    provider = ScriptedProvider([answer_json(wrong), answer_json(wrong)])
    seen: list[tuple[str, str]] = []
    options = AskOptions(fallback=_Counting(), answer_check=_check({}, seen))
    answer = ask(QUESTION, store, provider, options)
    assert answer.status == "abstained" and answer.claims == () and seen  # checked, refused
    assert "fallback_attempt" not in answer.counts and len(answer.verdicts) == 3
    assert answer.counts["fallback_asked"] == 3 and answer.counts["answer_check_refused"] == 1
    assert answer.counts["attempts"] == 2  # the model's
    trace = store.get_trace(answer.trace_id or "")
    assert len(trace.attempts) == 3  # its attempt is traced
    # reverify knows the refused fallback's attempt is not the model's repair turn
    again = reverify(trace, AskOptions())
    assert again.status == "abstained" and again.repaired and len(again.verdicts) == 2


def test_the_trace_keeps_each_answer_check_the_model_s_and_the_fallback_s(store: Store) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    judged: list[str] = []

    def second_passes(question: str, evidence: str) -> Judgement:  # refuses the model's answer
        judged.append(evidence)
        label = "supported" if len(judged) > 1 else "unrelated"
        return Judgement(label, 0.3 * len(judged), "judge", "judge-2+second")

    options = AskOptions(fallback=_Counting(), answer_check=second_passes)
    answer = ask(QUESTION, store, ScriptedProvider([answer_json(germany)]), options)
    assert answer.counts["fallback_attempt"] == 2 and answer.claims  # the extract, served
    trace = store.get_trace(answer.trace_id or "")
    assert [(c["attempt"], c["label"], c["score"]) for c in trace.answer_checks] == [
        (1, "unrelated", 0.3),
        (2, "supported", 0.6),
    ]
    assert trace.counts["answer_check_refused"] == 1


class _Broken(ScriptedProvider):
    name = "broken"  # another kind of provider than the model's (else it is not asked)


def test_a_failed_fallback_leaves_the_abstention_and_is_not_replayed(store: Store) -> None:
    ids = _ids(store, QUESTION)
    wrong = ("In Germany, employees get 30 weeks of leave at full salary.", ids[GERMANY], GERMANY)
    provider = ScriptedProvider([answer_json(wrong), answer_json(wrong)])
    broken = _Broken([ProviderError("timeout", "boom")])
    answer = ask(QUESTION, store, provider, AskOptions(fallback=broken))
    assert answer.status == "abstained" and answer.error is None
    assert answer.counts["fallback_asked"] == 3
    trace = store.get_trace(answer.trace_id or "")
    again = reverify(trace, AskOptions())
    assert again.status == "abstained" and again.error is None


def test_no_fallback_when_the_model_is_served_or_failed(store: Store) -> None:
    ids = _ids(store, QUESTION)
    germany = ("In Germany, pay is topped up to full salary for 14 weeks.", ids[GERMANY], GERMANY)
    fallback = _Counting()
    served = ask(
        QUESTION, store, ScriptedProvider([answer_json(germany)]), AskOptions(fallback=fallback)
    )
    assert served.status == "grounded" and "fallback_attempt" not in served.counts
    failing = ScriptedProvider([ProviderError("timeout", "the model took too long")])
    failed = ask(QUESTION, store, failing, AskOptions(fallback=fallback))
    assert failed.status == "provider_error" and fallback.calls == 0


# -- the documents a question names come first -------------------------------------------------

STANDARD_COPAY = (
    "The copay for a primary care visit is 20 dollars. Each primary care visit copay is due at "
    "the visit, and a specialist visit copay is 40 dollars."
)
PLUS_COPAY = "A primary care visit has a 10 dollar copay."


@pytest.fixture
def plans(tmp_path: Path) -> Iterator[Store]:
    """Two plans' documents alike but for their names; BM25 prefers the other plan's chunk."""
    with open_store(f"sqlite:///{tmp_path / 'plans.db'}") as opened:
        for name, text in (
            ("Northwind_Standard_Benefits.pdf", STANDARD_COPAY),
            ("Northwind_Health_Plus_Benefits.pdf", PLUS_COPAY),
        ):
            doc = LoadedDocument(name, text, "text/plain")
            opened.ingest("plans", doc, [Chunk(text, 0, len(text))])
        yield opened


def test_the_chunks_of_the_document_a_question_names_come_first(plans: Store) -> None:
    from quotebound.pipeline import retrieve

    question = "What is the copay for a primary care visit under Northwind Health Plus?"
    plain, _, none = retrieve(question, plans, AskOptions(limit=2, named_first=False))
    assert [h.text for h in plain] == [STANDARD_COPAY, PLUS_COPAY] and none == ()
    named, _, picked = retrieve(question, plans, AskOptions(limit=2))
    assert [h.text for h in named] == [PLUS_COPAY, STANDARD_COPAY]
    assert picked == ("plans:Northwind_Health_Plus_Benefits.pdf",)
    provider = ScriptedProvider([answer_json((PLUS_COPAY, "S1", PLUS_COPAY))])
    answer = ask(question, plans, provider, AskOptions())
    assert provider.requests[0].working_set.get("S1").text == PLUS_COPAY  # sent first
    assert answer.counts["named_documents"] == 1
    assert plans.get_trace(answer.trace_id or "").counts["named_documents"] == 1
    # a question naming neither plan, or both, keeps the ranking's order
    for other in (
        "What is the copay for a primary care visit?",
        "How do Northwind Standard and Northwind Health Plus copays differ?",
    ):
        hits, _, which = retrieve(other, plans, AskOptions(limit=2))
        assert which == () or len(which) == 2
        assert hits[0].text == STANDARD_COPAY
    off = ask(question, plans, ScriptedProvider([answer_json()]), AskOptions(named_first=False))
    assert "named_documents" not in off.counts


def test_a_claim_that_restates_the_question_keeps_that_reason_when_it_also_leans() -> None:
    """The repair turn asks for the answer, not for a whole sentence: the leaning rule does
    not rewrite a claim already dropped for restating the question."""
    from quotebound import Source, WorkingSet, verify
    from quotebound.repair import read_with_question
    from quotebound.verdict import Policy

    ws = WorkingSet([Source("S1", "They get 16 weeks of paid parental leave in Germany.")])
    raw = answer_json(("They get paid parental leave in Germany.", "S1", "They get 16 weeks"))
    verdict = verify(ws, raw, policy=Policy(strict=True))
    question = "What paid parental leave do employees get in Germany?"
    assert [c.kept for c in verdict.claims] == [True]
    read = read_with_question(question, verdict, ws)
    assert [(c.kept, c.reason) for c in read.claims] == [(False, "restates_question")]
    assert "only restates the question" in (read.claims[0].message or "")
