"""The answer pipeline with the scripted model, branch by branch, and the extractive provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from quotebound.cards import text_fragment
from quotebound.corpus import Chunk, LoadedDocument, Page
from quotebound.pipeline import AskOptions, ask
from quotebound.providers.base import ProviderError
from quotebound.providers.extractive import ExtractiveProvider
from quotebound.providers.scripted import ScriptedProvider
from quotebound.store import Store, open_store

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
    provider = ScriptedProvider([answer_json(answerable=False, missing="No Japan policy.")])
    answer = ask("What is the parental leave policy in Japan?", store, provider)
    assert answer.status == "abstained" and answer.claims == ()
    assert answer.abstention is not None
    assert answer.abstention.missing == "No Japan policy."
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


def test_an_abstention_note_with_content_is_kept(store: Store) -> None:
    provider = ScriptedProvider(
        [json.dumps({"answerable": False, "missing": "pension plans", "claims": []})]
    )
    result = ask(QUESTION, store, provider)
    assert result.abstention is not None and result.abstention.missing == "pension plans"
