"""What every framework adapter shares: documents as sources, a reply checked, the result.

A framework's document is its text and a metadata mapping. ``source_of`` reads the metadata
the way the frameworks' own loaders write it:

| field   | metadata keys read, first found                                             |
|---------|-----------------------------------------------------------------------------|
| key     | ``key``, ``source``, ``file_path``, ``file_name``, ``url``, then the id     |
| title   | ``title``, ``file_name``, ``name``                                           |
| url     | ``url``, ``link``, ``source`` (only an ``http(s)`` address)                  |
| page    | ``page_number`` (1-based), ``page`` (LangChain's, 0-based), ``page_label``   |
| updated | ``updated``, ``last_modified_date``, ``modified``, ``date`` (ISO dates only) |
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import SourceError
from ..pipeline import Answer, AskOptions, ask_sources, check_answer
from ..providers.base import Completion, Provider, ProviderError, Request
from ..sources import Source, WorkingSet, valid_date
from ..store import Store
from ..verdict import Verdict

_KEY = ("key", "source", "file_path", "file_name", "url")
_TITLE = ("title", "file_name", "name")
_URL = ("url", "link", "source")
_UPDATED = ("updated", "last_modified_date", "modified", "date")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
Sent = tuple[str, Mapping[str, Any] | None, str | None]  # a document: text, metadata, id
MAX_DOCUMENTS = 200  # what one check may be given (a working set is a model's context)


def _first(meta: Mapping[str, Any], names: Sequence[str]) -> str | None:
    for name in names:
        value = meta.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _page(meta: Mapping[str, Any]) -> int | None:
    # the physical page first (PyPDFLoader's 0-based "page" beside its printed "page_label")
    for name, base in (("page_number", 1), ("page", 0), ("page_label", 1)):
        value = meta.get(name)
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 6:
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value >= base:
            return value - base + 1
    return None


def _updated(meta: Mapping[str, Any]) -> str | None:
    value = _first(meta, _UPDATED)
    if value is None or not _ISO_DATE.match(value):
        return None
    return valid_date(value[:10])  # (the date of a timestamp)


def source_of(n: int, text: str, meta: Mapping[str, Any] | None, doc_id: str | None) -> Source:
    """The ``n``-th document sent (1-based) as the source ``Sn``: its text exactly, its key,
    title, URL, page and date read from ``meta`` (the table above)."""
    if not isinstance(text, str):
        raise SourceError(f"document {n}: its text must be a string, got {type(text).__name__}")
    meta = meta or {}
    url = _first(meta, _URL)
    key = _first(meta, _KEY) or (doc_id if isinstance(doc_id, str) and doc_id.strip() else None)
    return Source(
        id=f"S{n}",
        text=text,
        key=key,
        title=_first(meta, _TITLE),
        url=url if url and url.startswith(("http://", "https://")) else None,
        updated=_updated(meta),
        page=_page(meta),
    )


def working_set_of(
    documents: Iterable[tuple[str, Mapping[str, Any] | None, str | None]],
) -> WorkingSet:
    """Documents ``(text, metadata, id)`` as the working set sent, S1..Sn in their order (the
    order a framework numbers them in, so a reply's ``[2]`` is S2); at most ``MAX_DOCUMENTS``."""
    items = list(documents)
    if len(items) > MAX_DOCUMENTS:
        raise SourceError(f"{len(items)} documents: at most {MAX_DOCUMENTS} may be checked at once")
    return WorkingSet(source_of(n, t, m, i) for n, (t, m, i) in enumerate(items, 1))


@dataclass(frozen=True, slots=True)
class Checked:
    """A reply verified: the served ``answer`` (kept claims with their cards, or a helpful
    abstention) and the verifier's ``verdict`` on the reply served (None where no model was
    asked: no source was found)."""

    answer: Answer
    verdict: Verdict | None

    @property
    def text(self) -> str:
        """The verified answer as text: each kept claim with its sources' numbers (``[2]``,
        the n of ``Sn``), or the abstention in words."""
        return answer_text(self.answer)

    @property
    def abstained(self) -> bool:
        return not self.answer.claims

    @property
    def sources(self) -> tuple[str, ...]:
        """The ids of the sources the kept claims cite, each once, in order."""
        return tuple(dict.fromkeys(c.source for k in self.answer.claims for c in k.cites))

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "answer": self.answer.to_dict()}


def answer_text(answer: Answer) -> str:
    """``answer`` in words: its kept claims, each followed by the numbers of the sources it
    cites (``[1][3]``), and what of the question they leave out; or, with no kept claim, the
    abstention: what is missing and the next step."""
    if answer.claims:
        lines = []
        for claim in answer.claims:
            ids = dict.fromkeys(c.source for c in claim.cites)
            marks = "".join(f"[{sid[1:] if sid[:1] == 'S' else sid}]" for sid in ids)
            lines.append(f"{' '.join(claim.text.split())} {marks}".rstrip())
        if answer.unaddressed:
            lines.append("The documents do not say: " + "; ".join(answer.unaddressed) + ".")
        return "\n".join(lines)
    a = answer.abstention
    if a is None:
        return "Not answered from the documents."
    return f"Not answered from the documents: {a.missing}. {a.next_step}"


def check(
    question: str,
    working_set: WorkingSet,
    reply: str,
    options: AskOptions | None = None,
    store: Store | None = None,
    model: str = "external",
    prompt: str = "",
    format: str = "auto",
) -> Checked:
    """``reply`` verified against ``working_set`` (``pipeline.check_answer``) in ``format``
    (detected by default: ``options.format`` is the format ``ask`` prompts for, not this),
    traced to ``store`` when given. ``options`` None: the code checks alone; what
    ``quotebound ask`` runs is ``quotebound.defaults(...).options()``."""
    opts = replace(options or AskOptions(), format=format)
    answer = check_answer(question, working_set, reply, opts, store, model, prompt)
    return Checked(answer, answer.verdicts[-1])


Chat = Callable[[Sequence[tuple[str, str]]], str]  # (role, content) messages -> the reply's text


class ChatProvider(Provider):
    """A framework's chat model as a quotebound provider, so ``ask`` (with its one repair
    turn) can run on the model a team already configured: ``chat`` takes the messages as
    ``(role, content)`` pairs (``system``, ``user``, ``assistant``) and returns the reply's
    text; whatever it raises is a ``provider_error`` answer, never an exception out of
    ``ask``."""

    name = "framework"

    def __init__(self, chat: Chat, model: str = "framework") -> None:
        super().__init__(model)
        self._chat = chat

    def complete(self, request: Request) -> Completion:
        messages = [(m.role, m.content) for m in request.messages]
        try:
            text = self._chat(messages)
        except Exception as exc:  # the framework's own errors, whatever their type
            raise ProviderError("http_error", f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ProviderError("bad_response", f"the model returned {type(text).__name__}")
        return Completion(text=text, model=self.model)


def ask_over(
    question: str,
    sources: Sequence[Source],
    provider: Provider,
    options: AskOptions | None = None,
    store: Store | None = None,
) -> Checked:
    """``ask`` over sources a framework retrieved (``pipeline.ask_sources``): packed, asked
    under the contract, verified, repaired once, served; traced to ``store`` when given.
    ``options`` None: the bare pipeline; ``quotebound.defaults(provider).options()`` adds what
    ``quotebound ask`` runs by default (the support tier, the answer check, the fallback)."""
    if options is not None and options.format == "auto":  # (a verifier's options, shared)
        options = replace(options, format="json")
    answer = ask_sources(question, sources, provider, options, store)
    return Checked(answer, answer.verdicts[-1] if answer.verdicts else None)
