"""quotebound in a Haystack Pipeline: a real in-memory document store and BM25 retriever, the
generator made with Haystack's own test factory (``component_class``), no network."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network, ever
pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.testing.factory import component_class

from kits.ragkit import (
    ABSTAINED,
    DECORATED,
    DOCS,
    GOOD,
    GOOD_CLAIM,
    INVENTED,
    LEAVE,
    MARKERS,
    QUESTION,
    reply,
)
from quotebound.contract import build_request
from quotebound.errors import InputError
from quotebound.integrations.haystack import (
    QuoteboundPromptBuilder,
    VerifiedAnswerBuilder,
    working_set,
)
from quotebound.store import open_store

DOCUMENTS = [Document(content=t, meta=m, id=f"d{n}") for n, (t, m) in enumerate(DOCS)]


def _pipeline(text: str, **builder: Any) -> Pipeline:
    """retriever -> our prompt -> a generator that replies ``text`` -> verified answers."""
    store = InMemoryDocumentStore()
    store.write_documents(DOCUMENTS)
    generator = component_class(
        "ScriptedChatGenerator",
        input_types={"messages": list[ChatMessage]},
        output_types={"replies": list[ChatMessage]},
        output={"replies": [ChatMessage.from_assistant(text, meta={"model": "scripted"})]},
    )
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store, top_k=3))
    pipe.add_component("prompt", QuoteboundPromptBuilder())
    pipe.add_component("llm", generator())
    pipe.add_component("answers", VerifiedAnswerBuilder(**builder))
    pipe.connect("retriever.documents", "prompt.documents")
    pipe.connect("prompt.messages", "llm.messages")
    pipe.connect("llm.replies", "answers.replies")
    pipe.connect("retriever.documents", "answers.documents")
    return pipe


def _order() -> list[str]:
    store = InMemoryDocumentStore()
    store.write_documents(DOCUMENTS)
    found = InMemoryBM25Retriever(store, top_k=3).run(query=QUESTION)["documents"]
    return [d.content for d in found]


def _run(pipe: Pipeline, question: str = QUESTION) -> dict[str, Any]:
    q = {"query": question}
    out: dict[str, Any] = pipe.run({"retriever": q, "prompt": q, "answers": q})["answers"]
    return out


def test_the_prompt_builder_sends_the_contract_ask_sends() -> None:
    out = QuoteboundPromptBuilder().run(query=QUESTION, documents=DOCUMENTS)
    expected = build_request(QUESTION, working_set(DOCUMENTS), "json").messages
    assert [m.text for m in out["messages"]] == [m.content for m in expected]
    assert out["prompt"] == f"{expected[0].content}\n\n{expected[1].content}"


def test_a_correct_answer_is_verified_through_the_pipeline() -> None:
    sid = f"S{_order().index(LEAVE) + 1}"
    good = reply((GOOD_CLAIM, sid, "entitled to 16 weeks of paid parental leave"))
    out = _run(_pipeline(good))
    answer = out["answers"][0]
    assert answer.data == f"{GOOD_CLAIM} [{sid[1:]}]" and answer.meta["abstained"] is False
    assert [d.content for d in answer.documents] == [LEAVE]  # only the cited document
    assert answer.documents[0].meta["source_index"] == int(sid[1:])
    assert answer.meta["quotebound"]["status"] == "grounded"
    assert out["verdicts"][0]["status"] == "grounded"


def test_answer_builder_references_are_verified() -> None:
    # AnswerBuilder's [n]: the n-th document given; here the retriever's order decides n
    order = _order()
    n = order.index(LEAVE) + 1
    out = _run(_pipeline(f"Employees are entitled to 16 weeks of paid parental leave [{n}]."))
    assert out["answers"][0].meta["quotebound"]["status"] == "grounded"
    wrong = next(i for i in range(1, len(order) + 1) if i != n)
    bad = _run(_pipeline(f"Employees are entitled to 16 weeks of paid parental leave [{wrong}]."))
    # the reference to a document that does not say it is rejected; the code re-cites the claim
    # to the sentence that does (re-anchoring), so the answer names the right document
    cites = bad["verdicts"][0]["claims"][0]["citations"]
    rejected = [c for c in cites if not c["valid"]]
    assert [(c["ref"], c["reason"]) for c in rejected] == [(str(wrong), "number_not_in_source")]
    assert bad["answers"][0].data == f"{GOOD_CLAIM} [{n}]"
    assert [d.content for d in bad["answers"][0].documents] == [LEAVE]


@pytest.mark.parametrize(
    ("text", "status", "kept"),
    [
        (GOOD, "grounded", 1),
        (DECORATED, "partial", 1),
        (INVENTED, "abstained", 0),
        (ABSTAINED, "abstained", 0),
        (MARKERS, "grounded", 2),
    ],
)
def test_each_reply_is_verified_against_the_documents_given(
    text: str, status: str, kept: int
) -> None:
    out = VerifiedAnswerBuilder().run(query=QUESTION, replies=[text], documents=DOCUMENTS)
    served = out["answers"][0].meta["quotebound"]
    assert served["status"] == status and len(served["claims"]) == kept
    if text == INVENTED:
        cite = out["verdicts"][0]["claims"][0]["citations"][0]
        assert cite["reason"] == "unknown_source"
    if status == "abstained":
        assert out["answers"][0].data.startswith("Not answered from the documents:")
        assert out["answers"][0].documents == []


def test_traces_are_written_and_the_component_serialises(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'qb.db'}"
    builder = VerifiedAnswerBuilder(store_url=url, owner=None)
    again = VerifiedAnswerBuilder.from_dict(builder.to_dict())
    assert again.store_url == url and again.format == "auto"
    out = again.run(query=QUESTION, replies=[GOOD], documents=DOCUMENTS)
    with open_store(url) as store:
        trace = store.get_trace(out["answers"][0].meta["quotebound"]["trace_id"])
    assert trace.status == "grounded" and [s.text for s in trace.sources] == [t for t, _ in DOCS]
    data = VerifiedAnswerBuilder(store_url=url).to_dict()
    assert data["init_parameters"]["store_url"] == url  # what a pipeline's YAML holds


def test_bad_input_is_a_clear_error() -> None:
    builder = VerifiedAnswerBuilder()
    with pytest.raises(InputError, match="not a Haystack Document"):
        builder.run(query=QUESTION, replies=[GOOD], documents=["text"])  # type: ignore[list-item]
    with pytest.raises(InputError, match="meta entries"):
        builder.run(query=QUESTION, replies=[GOOD], documents=DOCUMENTS, meta=[{}, {}])


def test_the_quote_floor_is_the_prompts_and_a_message_without_text_abstains() -> None:
    two = reply((GOOD_CLAIM, "S1", "16 weeks"))  # a two-word quote
    assert (
        VerifiedAnswerBuilder()
        .run(query=QUESTION, replies=[two], documents=DOCUMENTS)["answers"][0]
        .meta["abstained"]
    )
    lenient = VerifiedAnswerBuilder(min_quote_words=2)
    out = lenient.run(query=QUESTION, replies=[two], documents=DOCUMENTS)
    assert out["answers"][0].meta["quotebound"]["status"] == "grounded"
    prompt = QuoteboundPromptBuilder(min_quote_words=2).run(query=QUESTION, documents=DOCUMENTS)
    assert "2 to" in prompt["messages"][0].text
    from haystack.dataclasses import ToolCall

    calls = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="search", arguments={})])
    out = VerifiedAnswerBuilder().run(query=QUESTION, replies=[calls], documents=DOCUMENTS)
    assert out["answers"][0].meta["abstained"]


def test_a_pipeline_of_both_components_round_trips() -> None:
    pipe = Pipeline()
    pipe.add_component("prompt", QuoteboundPromptBuilder(min_quote_words=3))
    pipe.add_component("answers", VerifiedAnswerBuilder(store_url="sqlite:///qb.db"))
    text = pipe.dumps()
    again = Pipeline.loads(text, allowed_modules=["quotebound.integrations.haystack"])
    assert again.get_component("answers").store_url == "sqlite:///qb.db"
    assert again.get_component("prompt").min_quote_words == 3


def test_a_pipeline_run_async_verifies_too() -> None:
    import asyncio

    pipe = Pipeline()  # (haystack 3: one Pipeline, run or run_async)
    pipe.add_component("answers", VerifiedAnswerBuilder())
    out = asyncio.run(
        pipe.run_async(
            {"answers": {"query": QUESTION, "replies": [MARKERS], "documents": DOCUMENTS}}
        )
    )
    assert out["answers"]["answers"][0].meta["quotebound"]["status"] == "grounded"
