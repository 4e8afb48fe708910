"""quotebound in a LangChain chain: LangChain's own fake chat model and vector store, no network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from kits.ragkit import (
    ABSTAINED,
    DECORATED,
    DOCS,
    GOOD,
    GOOD_CLAIM,
    INVENTED,
    MARKERS,
    MARKERS_INVENTED,
    QUESTION,
)
from quotebound.contract import build_request
from quotebound.errors import InputError
from quotebound.integrations.langchain import (
    QuoteboundVerifier,
    ask_with_retriever,
    contract_prompt,
    working_set,
)
from quotebound.store import open_store

DOCUMENTS = [Document(page_content=t, metadata=m, id=f"d{n}") for n, (t, m) in enumerate(DOCS)]


def _chain(replies: list[str], **verifier: Any) -> Any:
    """The LangChain RAG idiom: documents and question, our prompt into the model, verified."""
    llm = FakeListChatModel(responses=replies)
    return (
        {"question": RunnablePassthrough(), "documents": RunnableLambda(lambda _: DOCUMENTS)}
        | RunnablePassthrough.assign(message=contract_prompt() | llm)
        | QuoteboundVerifier(**verifier)
    )


def test_documents_become_the_working_set_in_order_with_their_metadata() -> None:
    ws = working_set(DOCUMENTS)
    assert ws.ids == ("S1", "S2", "S3")
    first, second, third = ws
    assert (first.key, first.url, first.title, first.page) == (
        "https://intranet.example/leave.pdf",
        "https://intranet.example/leave.pdf",
        "Leave policy",
        1,  # LangChain's loaders count pages from 0
    )
    assert (second.key, second.title, second.page, second.updated) == (
        "germany.md",
        "germany.md",
        3,
        "2026-05-01",
    )
    assert (third.key, third.url) == ("/srv/docs/travel.txt", None)  # a path is not a link


def test_the_prompt_is_the_contract_ask_sends() -> None:
    value = contract_prompt().invoke({"question": QUESTION, "documents": DOCUMENTS})
    sent = [(m.type, m.content) for m in value.to_messages()]
    expected = build_request(QUESTION, working_set(DOCUMENTS), "json").messages
    assert sent == [("system", expected[0].content), ("human", expected[1].content)]


def test_a_correct_answer_is_verified_end_to_end() -> None:
    checked = _chain([GOOD]).invoke(QUESTION)
    assert checked.answer.status == "grounded" and not checked.abstained
    assert checked.text == f"{GOOD_CLAIM} [1]"
    assert checked.sources == ("S1",)
    assert checked.answer.cards[0].label == "Leave policy"
    assert checked.verdict is not None and checked.verdict.status == "grounded"


def test_a_decorative_citation_is_dropped() -> None:
    checked = _chain([DECORATED]).invoke(QUESTION)
    assert checked.answer.status == "partial"
    assert [c.text for c in checked.answer.claims] == [GOOD_CLAIM]
    dropped = [c for c in checked.verdict.claims if not c.kept]  # type: ignore[union-attr]
    assert len(dropped) == 1 and "30 weeks" in dropped[0].text


def test_an_invented_id_is_rejected_and_nothing_left_is_an_abstention() -> None:
    checked = _chain([INVENTED]).invoke(QUESTION)
    assert checked.abstained and checked.answer.status == "abstained"
    cite = checked.verdict.claims[0].citations[0]  # type: ignore[union-attr]
    assert not cite.valid and cite.reason == "unknown_source"
    assert checked.text.startswith("Not answered from the documents:")


def test_an_unanswerable_question_abstains_without_the_models_words_unchecked() -> None:
    checked = _chain([ABSTAINED]).invoke("What is the pension plan?")
    assert checked.abstained and checked.answer.abstention is not None
    assert "pensions" in checked.answer.abstention.missing  # a note that states no fact


def test_framework_markers_are_verified_too() -> None:
    checked = _chain([MARKERS]).invoke(QUESTION)
    assert checked.answer.status == "grounded" and checked.sources == ("S1", "S2")
    assert _chain([MARKERS_INVENTED]).invoke(QUESTION).abstained  # [7]: no seventh document


def test_the_trace_is_written_and_reopens(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        checked = _chain([GOOD], store=store).invoke(QUESTION)
        trace = store.get_trace(checked.answer.trace_id or "")
    assert trace.question == QUESTION and trace.model == "langchain"
    assert [s.text for s in trace.sources] == [t for t, _ in DOCS]
    assert trace.attempts[0].output == GOOD and trace.status == "grounded"


def test_the_verifier_runs_async_and_in_batches() -> None:
    import asyncio

    chain = _chain([GOOD, INVENTED])
    first, second = chain.batch([QUESTION, QUESTION], config={"max_concurrency": 1})
    assert (first.answer.status, second.answer.status) == ("grounded", "abstained")
    again = asyncio.run(_chain([GOOD]).ainvoke(QUESTION))
    assert again.answer.status == "grounded"


def test_the_verifier_reports_to_langchain_callbacks() -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[str] = []

    class Handler(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            seen.append(str(kwargs.get("name") or ""))

    _chain([GOOD]).invoke(QUESTION, config={"callbacks": [Handler()]})
    assert "QuoteboundVerifier" in seen


def test_bad_input_is_a_clear_error() -> None:
    verifier = QuoteboundVerifier()
    with pytest.raises(InputError, match="no 'message'"):
        verifier.invoke({"question": QUESTION, "documents": DOCUMENTS})
    with pytest.raises(InputError, match="not a LangChain Document"):
        verifier.invoke({"question": QUESTION, "documents": ["text"], "message": GOOD})
    with pytest.raises(InputError, match="'question'"):
        verifier.invoke({"documents": DOCUMENTS, "message": GOOD})


def test_a_langchain_retriever_and_chat_model_feed_ask_with_its_repair(tmp_path: Path) -> None:
    from kits.ragkit import LEAVE, reply

    vectors = InMemoryVectorStore.from_documents(DOCUMENTS, DeterministicFakeEmbedding(size=32))
    retriever = vectors.as_retriever(search_kwargs={"k": 3})
    order = [d.page_content for d in retriever.invoke(QUESTION)]
    sid = f"S{order.index(LEAVE) + 1}"  # the retriever's order numbers the sources
    quote = "entitled to 16 weeks of paid parental leave"
    wrong = reply((GOOD_CLAIM, sid, quote), ("Employees get 30 weeks of leave.", sid, quote))
    llm = FakeListChatModel(responses=[wrong, reply((GOOD_CLAIM, sid, quote))])
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        checked = ask_with_retriever(QUESTION, retriever, llm, store=store)
        trace = store.get_trace(checked.answer.trace_id or "")
    assert checked.answer.repaired and len(trace.attempts) == 2  # the repair turn was asked
    assert "Your answer failed these checks" in trace.prompt  # the repair turn was sent
    assert checked.answer.status == "grounded" and checked.text == f"{GOOD_CLAIM} [{sid[1:]}]"
    assert checked.answer.counts["retrieved"] == 3 and trace.model == "FakeListChatModel"


def test_a_failing_chat_model_is_a_provider_error_answer_not_an_exception() -> None:
    class Broken(FakeListChatModel):
        def invoke(self, *args: Any, **kwargs: Any) -> Any:
            raise TimeoutError("the model did not answer")

    retriever = RunnableLambda(lambda _: DOCUMENTS)
    checked = ask_with_retriever(QUESTION, retriever, Broken(responses=[]))
    assert checked.answer.status == "provider_error" and checked.abstained
    assert "TimeoutError: the model did not answer" in (checked.answer.error or "")


def test_options_given_keep_the_reply_format_detected_and_the_owner(tmp_path: Path) -> None:
    from quotebound.pipeline import AskOptions

    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        checked = _chain([MARKERS], options=AskOptions(owner="k1"), store=store).invoke(QUESTION)
        assert checked.answer.status == "grounded"  # [n] markers, not read as JSON
        assert store.get_trace(checked.answer.trace_id or "", owner="k1").owner == "k1"


def test_the_physical_page_wins_over_a_printed_label() -> None:
    doc = Document("Text of a page.", metadata={"page": 9, "page_label": "5"})
    (source,) = working_set([doc])
    assert source.page == 10  # PyPDFLoader: "page" 0-based, "page_label" what is printed
    (labelled,) = working_set([Document("Text.", metadata={"page_label": "iv"})])
    assert labelled.page is None  # a roman numeral is not a page number
