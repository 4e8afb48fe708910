"""quotebound for LlamaIndex (``pip install 'quotebound[llamaindex]'``, needs
``llama-index-core``).

```python
from quotebound.integrations.llamaindex import VerifiedQueryEngine
engine = VerifiedQueryEngine(CitationQueryEngine.from_args(index, llm=llm))
response = engine.query("How long is parental leave?")   # only verified claims in response
response.metadata["quotebound"]                          # the served answer and its cards
```

- ``working_set(nodes)``: ``NodeWithScore``s (or nodes) as the working set sent, S1..Sn in
  their order; ``CitationQueryEngine``'s ``Source N:`` labels taken off, so its ``[N]``
  markers name S``N``.
- ``verify_response(response, question)``: a ``Response`` (its text and ``source_nodes``)
  verified as ``ask`` verifies its own answers, to a ``Checked``.
- ``VerifiedQueryEngine(engine)``: a query engine wrapping any other: its response with only
  the claims that pass (each with its ``[n]``), or a helpful abstention when none does; the
  verdict and cards in ``response.metadata["quotebound"]``; ``query`` and ``aquery``.
- ``llm_provider(llm)`` and ``ask_with_retriever(question, retriever, llm)``: a LlamaIndex
  LLM and retriever feeding ``ask`` (contract, verification, one repair turn, cards).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

from ..errors import InputError
from ..pipeline import AskOptions
from ..providers.base import Provider
from ..sources import WorkingSet
from ..store import Store
from .common import ChatProvider, Checked, Sent, ask_over, check, source_of, working_set_of

__all__ = [
    "VerifiedQueryEngine",
    "ask_with_retriever",
    "llm_provider",
    "verify_response",
    "working_set",
]

_CITATION_LABEL = re.compile(r"\ASource (\d{1,6}):\n")  # CitationQueryEngine's, before each chunk


def _sent(nodes: Sequence[Any]) -> list[Sent]:
    """The nodes as sent, in the order the model numbered them: by their ``Source N:``
    labels where every node has one (a postprocessor may have reordered them since), else
    as given."""
    out: list[tuple[int | None, Sent]] = []
    for n, item in enumerate(nodes, 1):
        node = item.node if isinstance(item, NodeWithScore) else item
        if not isinstance(node, BaseNode):
            raise InputError(f"node {n} is a {type(item).__name__}, not a LlamaIndex node")
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        number = None
        if label := _CITATION_LABEL.match(text):
            number = int(label.group(1))
            text = text[label.end() :].removesuffix("\n")
        out.append((number, (text, node.metadata, node.ref_doc_id or node.node_id)))
    numbers = [number for number, _ in out]
    if None not in numbers and sorted(numbers) == list(range(1, len(out) + 1)):  # type: ignore[type-var]
        out.sort(key=lambda pair: pair[0] or 0)
    return [sent for _, sent in out]


def working_set(nodes: Sequence[NodeWithScore | BaseNode]) -> WorkingSet:
    """Nodes as the working set sent: S1..Sn in their order (a response's ``source_nodes``
    are in the order the engine numbered them)."""
    return working_set_of(_sent(nodes))


def _text(response: Any) -> str:
    if isinstance(response, StreamingResponse):
        return str(response.get_response().response or "")
    if isinstance(response, AsyncStreamingResponse):
        raise InputError("an async streaming response: await response.get_response() first")
    if isinstance(response, PydanticResponse):
        return str(response.response.model_dump_json()) if response.response else ""
    if isinstance(response, Response):
        return response.response or ""
    raise InputError(f"expected a LlamaIndex Response, got {type(response).__name__}")


def verify_response(
    response: RESPONSE_TYPE,
    question: str | QueryBundle,
    options: AskOptions | None = None,
    store: Store | None = None,
    model: str = "llamaindex",
    format: str = "auto",
) -> Checked:
    """``response`` (its text, in ``format``: detected by default, ``[n]`` markers, our
    JSON...) verified against its ``source_nodes``, exactly what the model was sent; traced
    to ``store`` when given. An async streaming response is awaited first
    (``VerifiedQueryEngine.aquery`` does)."""
    query = question.query_str if isinstance(question, QueryBundle) else question
    if not isinstance(query, str) or not query.strip():
        raise InputError("the question must be a non-empty string")
    text = _text(response)
    nodes = list(getattr(response, "source_nodes", None) or [])
    return check(query, working_set(nodes), text, options, store, model, "", format)


class VerifiedQueryEngine(BaseQueryEngine):
    """Any query engine with its answers verified: what fails is dropped, and where nothing
    survives the response is a helpful abstention. The response's ``source_nodes`` are the
    inner engine's (so ``[n]`` still names the n-th); ``metadata["quotebound"]`` holds the
    served answer (claims, cards, abstention, verdicts) and ``metadata["quotebound_cited"]``
    the ids of the sources the kept claims cite."""

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        options: AskOptions | None = None,
        store: Store | None = None,
        model: str = "llamaindex",
        format: str = "auto",
    ) -> None:
        self._engine = query_engine
        self._options = options
        self._store = store
        self._model = model
        self._format = format
        super().__init__(callback_manager=query_engine.callback_manager)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"query_engine": self._engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._verified(query_bundle, self._engine.query(query_bundle))

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = await self._engine.aquery(query_bundle)
        if isinstance(response, AsyncStreamingResponse):  # verified whole: read it all first
            response = await response.get_response()
        return self._verified(query_bundle, response)

    def _verified(self, query_bundle: QueryBundle, response: Any) -> Response:
        checked = verify_response(
            response, query_bundle, self._options, self._store, self._model, self._format
        )
        metadata = dict(getattr(response, "metadata", None) or {})
        metadata["quotebound"] = checked.answer.to_dict()
        metadata["quotebound_cited"] = list(checked.sources)
        return Response(
            response=checked.text,
            source_nodes=list(getattr(response, "source_nodes", None) or []),
            metadata=metadata,
        )


def llm_provider(llm: LLM, model: str | None = None) -> Provider:
    """A LlamaIndex LLM as a quotebound provider (``ask``, ``ask_sources``)."""
    roles = {"system": MessageRole.SYSTEM, "user": MessageRole.USER}
    roles["assistant"] = MessageRole.ASSISTANT

    def chat(messages: Sequence[tuple[str, str]]) -> str:
        reply = llm.chat([ChatMessage(role=roles[r], content=c) for r, c in messages])
        return reply.message.content or ""

    name = model or str(getattr(llm.metadata, "model_name", None) or type(llm).__name__)
    return ChatProvider(chat, name)


def ask_with_retriever(
    question: str,
    retriever: BaseRetriever,
    llm: LLM | Provider,
    options: AskOptions | None = None,
    store: Store | None = None,
) -> Checked:
    """Answer ``question`` from what ``retriever`` returns with ``ask``'s whole loop on
    ``llm`` (a LlamaIndex LLM or any quotebound provider); traced to ``store`` when given."""
    sent = _sent(retriever.retrieve(question))
    sources = [source_of(n, t, m, i) for n, (t, m, i) in enumerate(sent, 1)]
    provider = llm if isinstance(llm, Provider) else llm_provider(llm)
    return ask_over(question, sources, provider, options, store)
