"""What ``quotebound ask`` and ``quotebound serve`` run by default, made in one place.

``quotebound.ask(question, store, provider)`` with no options runs the bare pipeline: retrieve,
pack, the contract, the code checks, one repair turn, cards and the trace. What the command line
adds to it by default is made here, for the CLI, the server, the benchmarks and any caller::

    with quotebound.defaults(provider) as d:
        answer = quotebound.ask(question, store, d.provider, d.options(corpora=["hr"]))

- ``entailment``, the support tier (``fast``): a judge in it (``judge``, ``cascade``) runs on
  the answering provider when that is an API model or the packaged 1.5B itself, else on the
  packaged judge model, the one its threshold was fitted for (``make_tier``);
- ``answer_check`` (``auto``: the fast check and the judge averaged beside the packaged 1.5B,
  the judge on that very model; the fast check beside any other), its fast half sharing the
  tier's MiniLM (``make_answer_check``);
- ``rerank`` (``dense``): BM25's hits re-ranked by MiniLM, the same MiniLM (``make_reranker``);
- ``fallback`` (``extractive``): the sentences the fast check scores as answering, when an
  answer would be an abstention; only beside an answer check (``make_fallback``).

Invariants:
- The defaults are the CLI's: the signature of ``defaults`` holds the values of the constants
  ``ask``'s options default to (``DEFAULT_TIER``, ``DEFAULT_ANSWER_CHECK``, ``DEFAULT_RERANK``,
  ``DEFAULT_FALLBACK``, ``DEFAULT_PROVIDER``), and ``tests/pipeline/test_defaults.py`` holds the
  traces of ``quotebound ask`` and of ``ask`` with ``defaults().options()`` to the same settings.
- MiniLM loads once for the tier, the answer check and the reranker; the judge of an answer
  check runs on the answering model where ``ask`` puts it there (no second copy).
- ``close()`` (or leaving the ``with`` block) closes every part once, and the provider: from the
  call of ``defaults`` on, the provider is the defaults' (a judge on it closes it with itself);
  a ``defaults`` call that fails closes what it made, and the provider.
- A part that cannot be made raises, unless it failed for want of the ``quotebound[entail]``
  extra (a light install) and ``may_skip(part, name, error)`` says to run without it: the CLI
  skips, with a warning, a part whose option the user left at its default.
- Importing this module loads nothing of the flow (``import quotebound`` imports it, so that
  ``quotebound.defaults`` is the function, not this module); what a part needs is imported
  when it is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from .choices import (
    ANSWER_CHECKS,
    BACKENDS,
    DEFAULT_ANSWER_CHECK,
    DEFAULT_FALLBACK,
    DEFAULT_RERANK,
    DEFAULT_TIER,
    FALLBACKS,
    RERANKS,
)

if TYPE_CHECKING:
    from .answering.check import AnswerChecker, BothAnswerCheck
    from .answering.rerank import DenseReranker
    from .entailment.base import Backend, EntailmentError
    from .entailment.judge import JudgeBackend
    from .pipeline import AskOptions
    from .providers import ExtractiveProvider, Provider

    Checker: TypeAlias = JudgeBackend | AnswerChecker | BothAnswerCheck  # an answer check

__all__ = [
    "DEFAULT_PROVIDER",
    "Defaults",
    "MaySkip",
    "Part",
    "defaults",
    "make_answer_check",
    "make_fallback",
    "make_reranker",
    "make_tier",
    "optional",
]

DEFAULT_PROVIDER = "local"  # who answers unless told otherwise: the packaged local model
Part = Literal["entailment", "answer_check", "rerank"]  # the parts a light install may lack
# ``may_skip(part, name, error)``: True to run without a part that needs ``quotebound[entail]``
MaySkip = Callable[[Part, str, "EntailmentError"], bool]
_T = TypeVar("_T")


@dataclass(eq=False)
class Defaults:
    """The answering ``provider`` and the parts ``ask`` runs beside it (None: off). ``options``
    gives the ``AskOptions`` that run them; ``close`` (or a ``with`` block) closes them all."""

    provider: Provider
    entailment: Backend | None = None
    answer_check: Checker | None = None
    rerank: DenseReranker | None = None
    fallback: ExtractiveProvider | None = None
    _closed: bool = field(default=False, init=False, repr=False)

    def options(self, **overrides: Any) -> AskOptions:
        """The ``AskOptions`` that run these parts, with ``overrides`` (any ``AskOptions``
        field: ``corpora``, ``groups``, ``limit``...) replacing what they name."""
        from .pipeline import AskOptions

        check = self.answer_check
        made = AskOptions(
            entailment=self.entailment,
            answer_check=check.answers if check is not None else None,
            fallback=self.fallback,
            rerank=self.rerank,
        )
        return replace(made, **overrides)

    def close(self) -> None:
        """Close every part once, then the provider (a judge on it closes it with itself).
        Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        from .entailment import close_together
        from .entailment.judge import JudgeBackend

        if self.rerank is not None:
            self.rerank.close()
        check = self.answer_check
        # (a judge alone on the answering provider is closed with the provider, below)
        if check is not None and not (
            isinstance(check, JudgeBackend) and check.provider is self.provider
        ):
            check.close()
        close_together(self.entailment, self.provider)

    def __enter__(self) -> Defaults:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def defaults(
    provider: Provider | None = None,
    *,
    entailment: str = DEFAULT_TIER,
    answer_check: str = DEFAULT_ANSWER_CHECK,
    rerank: str = DEFAULT_RERANK,
    fallback: str = DEFAULT_FALLBACK,
    nli_model: Path | None = None,
    may_skip: MaySkip | None = None,
) -> Defaults:
    """What ``quotebound ask`` runs by default, beside ``provider`` (None: the packaged local
    model, ``--provider local``), which the returned ``Defaults`` then own and close. Each
    keyword is the ``ask`` option of its name and defaults as it does: ``entailment`` a
    backend or ``off`` (``nli_model``: the ``nli`` backend's model directory),
    ``answer_check`` one of ``auto fast judge both on off``, ``rerank`` ``dense`` or ``off``,
    ``fallback`` ``extractive``, ``covering`` or ``off``. A part that needs the
    ``quotebound[entail]`` extra where it is not installed raises its ``EntailmentError``,
    unless ``may_skip(part, name, error)`` returns True: then that part is off (None). An
    unknown choice is an ``InputError``, before anything is made."""
    try:
        _check_choices(entailment, answer_check, rerank, fallback, nli_model)
        if provider is None:
            from .providers import make_provider

            provider = make_provider(DEFAULT_PROVIDER)
    except BaseException:
        if provider is not None:
            provider.close()
        raise
    made = Defaults(provider)
    try:
        made.entailment = make_tier(entailment, provider, nli_model=nli_model, may_skip=may_skip)
        made.answer_check = make_answer_check(
            answer_check, provider, made.entailment, may_skip=may_skip
        )
        made.rerank = make_reranker(rerank, made.entailment, made.answer_check, may_skip=may_skip)
        made.fallback = make_fallback(fallback, made.answer_check)
    except BaseException:
        made.close()
        raise
    return made


def _check_choices(
    entailment: str, answer_check: str, rerank: str, fallback: str, nli_model: Path | None
) -> None:
    """An ``InputError`` for an unknown choice, before anything is made."""
    from .errors import InputError

    for part, choice, known in (
        ("entailment", entailment, (*BACKENDS, "off")),
        ("answer_check", answer_check, ANSWER_CHECKS),
        ("rerank", rerank, RERANKS),
        ("fallback", fallback, FALLBACKS),
    ):
        if choice not in known:
            raise InputError(f"unknown {part} {choice!r}; known: {', '.join(known)}")
    if nli_model is not None and entailment != "nli":
        raise InputError("nli_model is the model of entailment='nli' only")


def optional(part: Part, name: str, make: Callable[[], _T], may_skip: MaySkip | None) -> _T | None:
    """``make()``; None instead where it failed for want of ``quotebound[entail]`` and
    ``may_skip(part, name, error)`` says to run without the part. Any other failure raises."""
    from .entailment.base import EntailmentError

    try:
        return make()
    except EntailmentError as exc:
        from .entailment.heuristic import EXTRA_HINT

        if may_skip is None or EXTRA_HINT not in str(exc) or not may_skip(part, name, exc):
            raise
        return None


def make_tier(
    name: str,
    provider: Provider | None = None,
    *,
    nli_model: Path | None = None,
    may_skip: MaySkip | None = None,
) -> Backend | None:
    """The support tier ``name`` (a backend of ``entailment.BACKENDS``; None for ``off``). Its
    judge runs on ``provider`` when that is an API model or the packaged judge model itself
    (no second copy of it), else on the packaged judge model, the one its threshold was fitted
    for (``provider`` None: always, as ``serve`` runs it)."""
    if name == "off":
        return None
    from .answering.check import judges_itself
    from .entailment import make_backend

    judge_on = None
    if provider is not None and (
        judges_itself(provider) or (provider.capabilities.generates and provider.name != "local")
    ):
        judge_on = provider
    return optional(
        "entailment",
        name,
        lambda: make_backend(name, model_path=nli_model, provider=judge_on),
        may_skip,
    )


def make_answer_check(
    choice: str,
    provider: Provider,
    tier: object | None = None,
    *,
    may_skip: MaySkip | None = None,
) -> Checker | None:
    """The answer check ``choice`` names beside the answering ``provider`` (None for ``off``):
    ``fast``, sharing the MiniLM of ``tier`` when it holds one; ``judge`` (or ``on``) on
    ``provider`` when it is the judge's own model or an API model that returns
    log-probabilities, else on the packaged judge model (its threshold was fitted for that
    one); ``both``, the two read together; ``auto``, ``both`` when ``provider`` is the
    packaged 1.5B (the judge runs on the model already loaded), else ``fast``. A judge on
    ``provider`` is closed with it, not with the check."""
    if choice == "off":
        return None
    from .answering.check import AnswerChecker, BothAnswerCheck, chosen_check, judges_itself
    from .entailment.judge import JUDGE_MODEL, JudgeBackend

    choice = chosen_check(choice, provider)  # auto: the judge only where it costs no 2nd model
    if choice == "fast":
        return optional("answer_check", "fast", lambda: AnswerChecker.beside(tier), may_skip)
    fast = None
    if choice == "both":  # the fast half first: on a light install the default is skipped
        fast = optional("answer_check", "fast", lambda: AnswerChecker.beside(tier), may_skip)
        if fast is None:
            return None
    own = judges_itself(provider) or provider.name != "local"
    if own and provider.capabilities.logprobs:
        judge = JudgeBackend(provider)
    else:
        from .providers import make_provider

        judge = JudgeBackend(make_provider("local", JUDGE_MODEL))
    if fast is None:
        return judge
    return BothAnswerCheck(fast, judge, owns_judge=judge.provider is not provider)


def make_reranker(
    choice: str,
    *holders: object | None,
    cache_size: int | None = None,
    may_skip: MaySkip | None = None,
) -> DenseReranker | None:
    """The reranker ``choice`` names (None for ``off``), sharing the MiniLM of the first of
    ``holders`` that holds one (the tier, the answer check); ``cache_size``: the chunk vectors
    it keeps (None: ``CACHE_VECTORS``; 0: none, each question embedded afresh)."""
    if choice == "off":
        return None
    from .answering.rerank import CACHE_VECTORS, DenseReranker

    size = CACHE_VECTORS if cache_size is None else cache_size
    return optional(
        "rerank", choice, lambda: DenseReranker.beside(*holders, cache_size=size), may_skip
    )


def make_fallback(kind: str, checker: object | None) -> ExtractiveProvider | None:
    """The fallback ``kind`` names beside the answer check ``checker``: ``extractive``, the
    sentences a fast check scores as answering (those covering the question best beside the
    judge alone); ``covering``, those covering the question best; None for ``off`` and without
    a check (unchecked, the extract would overrule a right abstention)."""
    from .answering.fallback import fallback_for

    return fallback_for(kind, checker)
