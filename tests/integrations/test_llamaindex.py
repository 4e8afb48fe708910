"""quotebound in LlamaIndex: a real index, CitationQueryEngine and retriever over LlamaIndex's
own MockEmbedding, a scripted CustomLLM (the framework's way to plug a model), no network."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

pytest.importorskip("llama_index.core")

from llama_index.core import Document, MockEmbedding, VectorStoreIndex
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from kits.ragkit import (
    ABSTAINED,
    DECORATED,
    DOCS,
    GERMANY,
    GOOD,
    GOOD_CLAIM,
    HOTEL,
    INVENTED,
    LEAVE,
    MARKERS,
    MARKERS_INVENTED,
    QUESTION,
    reply,
)
from quotebound.errors import InputError
from quotebound.integrations.llamaindex import (
    VerifiedQueryEngine,
    ask_with_retriever,
    verify_response,
    working_set,
)
from quotebound.store import open_store


class Scripted(CustomLLM):
    """Replies with the next of ``replies``; records each prompt."""

    replies: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.replies.pop(0))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> Iterator[CompletionResponse]:
        text = self.complete(prompt).text
        yield CompletionResponse(text=text, delta=text)


@pytest.fixture
def index() -> VectorStoreIndex:
    documents = [Document(text=t, metadata=m, doc_id=f"d{n}") for n, (t, m) in enumerate(DOCS)]
    return VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))


def _citation_engine(
    index: VectorStoreIndex, *replies: str
) -> tuple[CitationQueryEngine, Scripted]:
    llm = Scripted(replies=list(replies), prompts=[])
    return CitationQueryEngine.from_args(index, llm=llm, similarity_top_k=3), llm


def _numbered(response: Any) -> dict[str, int]:
    """Each document's text -> the number CitationQueryEngine gave it."""
    ws = working_set(response.source_nodes)
    return {s.text: int(s.id[1:]) for s in ws}


def test_citation_query_engine_markers_are_verified_end_to_end(index: VectorStoreIndex) -> None:
    probe, _ = _citation_engine(index, "probe")
    numbers = _numbered(probe.query(QUESTION))  # the engine's numbering of the three documents
    assert set(numbers) == {LEAVE, GERMANY, HOTEL}  # its "Source N:" labels taken off
    text = (
        f"Employees are entitled to 16 weeks of paid parental leave [{numbers[LEAVE]}]. In "
        "Germany the company tops up pay to full salary for the first 14 weeks "
        f"[{numbers[GERMANY]}]."
    )
    engine, llm = _citation_engine(index, text)
    response = VerifiedQueryEngine(engine).query(QUESTION)
    assert "Source 1:" in llm.prompts[0]  # the engine's own prompt was sent
    meta = response.metadata["quotebound"]
    assert meta["status"] == "grounded" and len(meta["claims"]) == 2
    assert response.response.splitlines() == [
        f"Employees are entitled to 16 weeks of paid parental leave. [{numbers[LEAVE]}]",
        f"In Germany the company tops up pay to full salary for the first 14 weeks. "
        f"[{numbers[GERMANY]}]",
    ]
    assert len(response.source_nodes) == 3
    assert sorted(response.metadata["quotebound_cited"]) == sorted(
        [f"S{numbers[LEAVE]}", f"S{numbers[GERMANY]}"]
    )


def test_an_invented_marker_leaves_nothing_and_the_response_abstains(
    index: VectorStoreIndex,
) -> None:
    engine, _ = _citation_engine(index, MARKERS_INVENTED)
    response = VerifiedQueryEngine(engine).query(QUESTION)
    assert response.metadata["quotebound"]["status"] == "abstained"
    assert response.response.startswith("Not answered from the documents:")
    assert response.metadata["quotebound_cited"] == []


def _nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=t, metadata=m, id_=f"n{i}"), score=1.0 - i / 10)
        for i, (t, m) in enumerate(DOCS)
    ]


def test_nodes_become_the_working_set_with_their_metadata() -> None:
    ws = working_set(_nodes())
    assert ws.ids == ("S1", "S2", "S3")
    first, second, third = ws
    assert (first.title, first.page, second.page, third.key) == (
        "Leave policy",
        1,
        3,
        "/srv/docs/travel.txt",
    )


@pytest.mark.parametrize(
    ("reply_text", "status", "kept"),
    [
        (GOOD, "grounded", 1),
        (DECORATED, "partial", 1),  # the decorative citation's claim dropped
        (INVENTED, "abstained", 0),  # S9 was never sent
        (ABSTAINED, "abstained", 0),
        (MARKERS, "grounded", 2),
    ],
)
def test_a_response_is_verified_against_its_source_nodes(
    reply_text: str, status: str, kept: int
) -> None:
    checked = verify_response(Response(response=reply_text, source_nodes=_nodes()), QUESTION)
    assert checked.answer.status == status and len(checked.answer.claims) == kept
    if reply_text == INVENTED:
        cite = checked.verdict.claims[0].citations[0]  # type: ignore[union-attr]
        assert cite.reason == "unknown_source"


def test_the_wrapper_runs_async_and_writes_the_trace(
    index: VectorStoreIndex, tmp_path: Path
) -> None:
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        probe, _ = _citation_engine(index, "probe")
        n = _numbered(probe.query(QUESTION))[LEAVE]
        engine, _ = _citation_engine(index, f"{GOOD_CLAIM} [{n}]")
        response = asyncio.run(VerifiedQueryEngine(engine, store=store).aquery(QUESTION))
        trace = store.get_trace(response.metadata["quotebound"]["trace_id"])
    assert trace.status == "grounded" and trace.model == "llamaindex"
    assert {s.text for s in trace.sources} == {LEAVE, GERMANY, HOTEL}


def test_a_llamaindex_retriever_and_llm_feed_ask_with_its_repair(index: VectorStoreIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=3)
    order = [n.node.get_content() for n in retriever.retrieve(QUESTION)]
    sid = f"S{order.index(LEAVE) + 1}"
    quote = "entitled to 16 weeks of paid parental leave"
    wrong = reply((GOOD_CLAIM, sid, quote), ("Employees get 30 weeks of leave.", sid, quote))
    llm = Scripted(replies=[wrong, reply((GOOD_CLAIM, sid, quote))], prompts=[])
    checked = ask_with_retriever(QUESTION, retriever, llm)
    assert checked.answer.repaired and checked.answer.status == "grounded"
    assert checked.text == f"{GOOD_CLAIM} [{sid[1:]}]" and checked.answer.model == "scripted"
    assert "Your answer failed these checks" in llm.prompts[1]


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="not a LlamaIndex node"):
        working_set(["text"])  # type: ignore[list-item]
    with pytest.raises(InputError, match="expected a LlamaIndex Response"):
        verify_response("text", QUESTION)  # type: ignore[arg-type]


def test_a_split_document_reordered_nodes_and_an_async_stream_still_map_n(
    index: VectorStoreIndex,
) -> None:
    long = " ".join(f"Clause {n} says staff get {n + 10} days of leave." for n in range(30))
    documents = [Document(text=long, doc_id="long"), Document(text=LEAVE, doc_id="leave")]
    small = VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))
    llm = Scripted(replies=["probe"], prompts=[])
    engine = CitationQueryEngine.from_args(small, llm=llm, citation_chunk_size=48)
    probe = engine.query(QUESTION)
    assert len(probe.source_nodes) > 3  # the long document cut into several numbered sources
    numbers = _numbered(probe)
    n = numbers[LEAVE]
    llm.replies = [f"{GOOD_CLAIM} [{n}]"]
    reordered = Response(response=f"{GOOD_CLAIM} [{n}]", source_nodes=probe.source_nodes[::-1])
    assert verify_response(reordered, QUESTION).answer.status == "grounded"  # by label
    streaming = CitationQueryEngine.from_args(
        small,
        llm=Scripted(replies=[f"{GOOD_CLAIM} [{n}]"], prompts=[]),
        citation_chunk_size=48,
        streaming=True,
    )
    response = asyncio.run(VerifiedQueryEngine(streaming).aquery(QUESTION))
    assert response.metadata["quotebound"]["status"] == "grounded"
