"""quotebound for LangChain (``pip install 'quotebound[langchain]'``, needs ``langchain-core``).

```python
from quotebound.integrations.langchain import QuoteboundVerifier, contract_prompt
chain = (
    {"question": RunnablePassthrough(), "documents": retriever}
    | RunnablePassthrough.assign(message=contract_prompt() | llm)
    | QuoteboundVerifier()
)
checked = chain.invoke("How long is parental leave?")   # a Checked: .text, .answer, .verdict
```

- ``working_set(documents)``: ``Document``s as the working set sent (S1..Sn in order; key,
  title, URL, page and date from their metadata, ``common.source_of``).
- ``citation_prompt()``: the citation contract as a ``ChatPromptTemplate`` (variables
  ``rules``, ``sources``, ``question``, filled by ``prompt_inputs``); ``contract_prompt()``:
  a Runnable from ``{"question", "documents"}`` to the prompt, messages exactly as ``ask``
  sends them.
- ``QuoteboundVerifier``: a Runnable from ``{"question", "documents", "message"}`` (an
  ``AIMessage`` or a string) to a ``Checked``: the reply verified as ``ask`` verifies its own,
  what fails dropped, an abstention when nothing survives; traced to a store when given.
  ``ainvoke``/``batch`` come from ``Runnable``; it runs as a ``parser`` run in callbacks.
- ``chat_provider(llm)``: a LangChain chat model as a quotebound provider, and
  ``ask_with_retriever(question, retriever, llm)``: a LangChain retriever feeding ``ask``
  (contract, verification, one repair turn, cards).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from ..contract import build_request, render_sources
from ..errors import InputError
from ..pipeline import AskOptions
from ..providers.base import Provider
from ..sources import WorkingSet
from ..store import Store
from ..verdict import Policy
from .common import ChatProvider, Checked, Sent, ask_over, check, source_of, working_set_of

__all__ = [
    "QuoteboundVerifier",
    "ask_with_retriever",
    "chat_provider",
    "citation_prompt",
    "contract_prompt",
    "prompt_inputs",
    "working_set",
]


def working_set(documents: Sequence[Document]) -> WorkingSet:
    """LangChain ``Document``s as the working set sent: S1..Sn in their order."""
    return working_set_of(_triples(documents))


def _triples(documents: Sequence[Any]) -> list[Sent]:
    out: list[Sent] = []
    for n, doc in enumerate(documents, 1):
        if not isinstance(doc, Document):
            raise InputError(f"document {n} is a {type(doc).__name__}, not a LangChain Document")
        out.append((doc.page_content, doc.metadata, doc.id))
    return out


def citation_prompt() -> ChatPromptTemplate:
    """The citation contract as a ``ChatPromptTemplate``: a system message ``{rules}`` and a
    human message ``{sources}`` then the question; ``prompt_inputs`` fills the three."""
    return ChatPromptTemplate.from_messages(
        [("system", "{rules}"), ("human", "{sources}\n\nQuestion: {question}")]
    )


def prompt_inputs(
    question: str, documents: Sequence[Document], format: str = "json", policy: Policy | None = None
) -> dict[str, str]:
    """The variables of ``citation_prompt`` for ``question`` over ``documents``: the rules of
    the contract of ``format`` for their ids, and the fenced, escaped sources."""
    ws = working_set(documents)
    request = build_request(question, ws, format, policy=policy or Policy())
    return {
        "rules": request.messages[0].content,
        "sources": render_sources(ws),
        "question": question,
    }


def contract_prompt(format: str = "json", policy: Policy | None = None) -> Runnable[Any, Any]:
    """A Runnable from ``{"question": str, "documents": [Document, ...]}`` to the prompt of
    the citation contract (a ``ChatPromptValue``): pipe it into a chat model."""

    def inputs(value: Mapping[str, Any]) -> dict[str, str]:
        question, documents = _question_and_documents(value)
        return prompt_inputs(question, documents, format, policy)

    return RunnableLambda(inputs, name="quotebound_contract_inputs") | citation_prompt()


def _question_and_documents(value: Any) -> tuple[str, list[Document]]:
    if not isinstance(value, Mapping):
        raise InputError(
            f"expected a mapping with question and documents, got {type(value).__name__}"
        )
    question = value.get("question")
    documents = value.get("documents", value.get("context"))
    if not isinstance(question, str) or not question.strip():
        raise InputError("the input's 'question' must be a non-empty string")
    if not isinstance(documents, Sequence) or isinstance(documents, str):
        raise InputError("the input's 'documents' must be a list of LangChain Documents")
    return question, list(documents)


def _text(message: Any) -> str:
    """A chat model's reply as text: a string, or a message's content (text blocks joined)."""
    if isinstance(message, str):
        return message
    if isinstance(message, BaseMessage):
        content = message.content
        if isinstance(content, str):
            return content
        parts = [
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
        ]
        return "".join(parts)
    raise InputError(f"the model's reply is a {type(message).__name__}, not a message or string")


class QuoteboundVerifier(Runnable[dict[str, Any], Checked]):
    """A model's reply verified against the documents it was given.

    Input: ``{"question": str, "documents": [Document, ...], "message": AIMessage | str}``
    (``context`` is read for ``documents`` and ``answer`` for ``message`` too). Output: a
    ``Checked`` (``.text`` the verified answer, ``.answer`` the served answer with its cards,
    ``.verdict`` the verifier's verdict). ``options`` as ``ask`` takes them (the support
    tier, re-anchoring, the policy; ``AskOptions(owner=KEY_ID)``: the key the trace belongs
    to); ``format``: the reply's, detected by default (our JSON contract, ``[n]`` markers or
    the other formats); ``store``: write the trace there, so its cards and the web page work."""

    def __init__(
        self,
        options: AskOptions | None = None,
        store: Store | None = None,
        model: str = "langchain",
        format: str = "auto",
    ) -> None:
        self.options = options or AskOptions()
        self.store = store
        self.model = model
        self.format = format

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Checked:
        return self._call_with_config(self._check, input, config, run_type="parser")

    def _check(self, value: dict[str, Any]) -> Checked:
        question, documents = _question_and_documents(value)
        message = value.get("message", value.get("answer"))
        if message is None:
            raise InputError("the input has no 'message' (the model's reply) to verify")
        model = self.model
        if isinstance(message, AIMessage):
            model = str(message.response_metadata.get("model_name") or model)
        ws = working_set(documents)
        return check(question, ws, _text(message), self.options, self.store, model, "", self.format)


def chat_provider(llm: BaseChatModel, model: str | None = None) -> Provider:
    """A LangChain chat model as a quotebound provider (``ask``, ``ask_sources``)."""
    roles = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}

    def chat(messages: Sequence[tuple[str, str]]) -> str:
        reply = llm.invoke([roles[role](content=content) for role, content in messages])
        return _text(reply)

    name = model or str(
        getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    )
    return ChatProvider(chat, name)


def ask_with_retriever(
    question: str,
    retriever: Runnable[str, list[Document]],
    llm: BaseChatModel | Provider,
    options: AskOptions | None = None,
    store: Store | None = None,
) -> Checked:
    """Answer ``question`` from what ``retriever`` returns, with ``ask``'s whole loop
    (contract, verification, one repair turn, cards, abstention) on ``llm`` (a LangChain
    chat model or any quotebound provider); traced to ``store`` when given."""
    documents = retriever.invoke(question)
    sources = [source_of(n, t, m, i) for n, (t, m, i) in enumerate(_triples(documents), 1)]
    provider = llm if isinstance(llm, Provider) else chat_provider(llm)
    return ask_over(question, sources, provider, options, store)
