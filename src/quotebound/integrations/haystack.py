"""quotebound for Haystack (``pip install 'quotebound[haystack]'``, needs ``haystack-ai``).

```python
from quotebound.integrations.haystack import QuoteboundPromptBuilder, VerifiedAnswerBuilder
pipe = Pipeline()
pipe.add_component("retriever", InMemoryBM25Retriever(document_store))
pipe.add_component("prompt", QuoteboundPromptBuilder())
pipe.add_component("llm", OpenAIChatGenerator())
pipe.add_component("answers", VerifiedAnswerBuilder())
pipe.connect("retriever.documents", "prompt.documents")
pipe.connect("prompt.messages", "llm.messages")
pipe.connect("llm.replies", "answers.replies")
pipe.connect("retriever.documents", "answers.documents")
out = pipe.run({"retriever": {"query": q}, "prompt": {"query": q}, "answers": {"query": q}})
out["answers"]["answers"][0].data          # only verified claims, each with its [n]
```

- ``QuoteboundPromptBuilder``: ``query`` and ``documents`` -> ``messages`` (the citation
  contract as ``ChatMessage``s, for a chat generator) and ``prompt`` (the same as one text,
  for a plain generator).
- ``VerifiedAnswerBuilder``: ``AnswerBuilder``'s inputs (``query``, ``replies``, ``meta``,
  ``documents``) -> ``answers`` (one ``GeneratedAnswer`` per reply: the claims that pass,
  each with its ``[n]``, or a helpful abstention; ``documents`` the cited ones, each with
  AnswerBuilder's ``source_index`` and ``referenced`` meta; ``meta["quotebound"]`` the served
  answer with its cards) and ``verdicts`` (the verifier's verdict per reply). A reply's
  ``[n]`` references (AnswerBuilder's ``reference_pattern``) are read as citations of the
  n-th document and verified; our JSON contract too. ``store_url``: write each trace there;
  ``min_quote_words``: the quote floor (give the prompt builder the same). Both serialise
  with the pipeline; loading one back names this module
  (``Pipeline.loads(text, allowed_modules=["quotebound.integrations.haystack"])``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from ..contract import build_request
from ..errors import InputError
from ..pipeline import AskOptions
from ..store import Store, open_store
from ..verdict import Policy
from .common import Checked, Sent, check, working_set_of

__all__ = ["QuoteboundPromptBuilder", "VerifiedAnswerBuilder", "working_set"]


def _sent(documents: Sequence[Any]) -> list[Sent]:
    out: list[Sent] = []
    for n, doc in enumerate(documents, 1):
        if not isinstance(doc, Document):
            raise InputError(f"document {n} is a {type(doc).__name__}, not a Haystack Document")
        out.append((doc.content or "", doc.meta, doc.id))
    return out


def working_set(documents: Sequence[Document]) -> Any:
    """Haystack ``Document``s as the working set sent: S1..Sn in their order."""
    return working_set_of(_sent(documents))


def _policy(min_quote_words: int | None) -> Policy:
    if min_quote_words is None:
        return Policy()
    return Policy.from_options(min_quote_words=min_quote_words)


@component
class QuoteboundPromptBuilder:
    """The citation contract for ``query`` over ``documents``, as ``ask`` sends it."""

    def __init__(self, format: str = "json", min_quote_words: int | None = None) -> None:
        self.format = format
        self.min_quote_words = min_quote_words

    @component.output_types(messages=list[ChatMessage], prompt=str)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        policy = _policy(self.min_quote_words)
        request = build_request(query, working_set(documents), self.format, policy=policy)
        system, user = request.messages
        messages = [ChatMessage.from_system(system.content), ChatMessage.from_user(user.content)]
        return {"messages": messages, "prompt": f"{system.content}\n\n{user.content}"}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, format=self.format, min_quote_words=self.min_quote_words)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuoteboundPromptBuilder:
        return default_from_dict(cls, data)


@component
class VerifiedAnswerBuilder:
    """``AnswerBuilder``'s place in a pipeline, with every reply verified first."""

    def __init__(
        self,
        format: str = "auto",
        store_url: str | None = None,
        owner: str | None = None,
        model: str = "haystack",
        min_quote_words: int | None = None,
    ) -> None:
        self.format = format
        self.store_url = store_url
        self.owner = owner
        self.model = model
        self.min_quote_words = min_quote_words  # (give the prompt builder the same)
        self._store: Store | None = None

    def warm_up(self) -> None:
        """Open the store the traces go to (once), when one is named."""
        if self.store_url is not None and self._store is None:
            self._store = open_store(self.store_url)

    @component.output_types(answers=list[GeneratedAnswer], verdicts=list[dict[str, Any]])
    def run(
        self,
        query: str,
        replies: list[str] | list[ChatMessage],
        documents: list[Document] | None = None,
        meta: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        if meta is not None and len(meta) != len(replies):
            raise InputError(f"{len(replies)} replies but {len(meta)} meta entries")
        self.warm_up()
        docs = list(documents or [])
        ws = working_set(docs)
        options = AskOptions(owner=self.owner, policy=_policy(self.min_quote_words))
        answers: list[GeneratedAnswer] = []
        verdicts: list[dict[str, Any]] = []
        for i, item in enumerate(replies):
            text = (item.text or "") if isinstance(item, ChatMessage) else item
            if not isinstance(text, str):  # (a message of tool calls only: "", an abstention)
                raise InputError(f"reply {i + 1} is a {type(item).__name__}, not text or a message")
            reply_meta = dict(meta[i] if meta else {})
            if isinstance(item, ChatMessage):
                reply_meta = {**item.meta, **reply_meta}
            model = str(reply_meta.get("model") or self.model)
            checked = check(query, ws, text, options, self._store, model, "", self.format)
            answers.append(self._answer(query, checked, docs, reply_meta))
            verdicts.append(checked.verdict.to_dict() if checked.verdict else {})
        return {"answers": answers, "verdicts": verdicts}

    @component.output_types(answers=list[GeneratedAnswer], verdicts=list[dict[str, Any]])
    async def run_async(
        self,
        query: str,
        replies: list[str] | list[ChatMessage],
        documents: list[Document] | None = None,
        meta: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``run`` for an ``AsyncPipeline``: the checks run in a thread, off the event loop."""
        return await asyncio.to_thread(self.run, query, replies, documents, meta)

    @staticmethod
    def _answer(
        query: str, checked: Checked, docs: list[Document], meta: dict[str, Any]
    ) -> GeneratedAnswer:
        cited = {int(sid[1:]) for sid in checked.sources}
        referenced = [
            replace(d, meta={**d.meta, "source_index": n, "referenced": True})
            for n, d in enumerate(docs, 1)
            if n in cited
        ]
        meta = {**meta, "quotebound": checked.answer.to_dict(), "abstained": checked.abstained}
        return GeneratedAnswer(data=checked.text, query=query, documents=referenced, meta=meta)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            format=self.format,
            store_url=self.store_url,
            owner=self.owner,
            model=self.model,
            min_quote_words=self.min_quote_words,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifiedAnswerBuilder:
        return default_from_dict(cls, data)
