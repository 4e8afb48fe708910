"""The hand-off from the contract to a provider: what one model call is asked.

The contract (``contract.build_request``) makes a ``Request``; a provider (``providers/``)
answers it. Both read these types from here, so neither imports the other's module.

- ``Request.working_set`` is the allowlist the messages were rendered from.
- ``Request.policy`` is the verification policy the answer will be checked under: the
  contract states its quote lengths in the prompt and the JSON schema, and a provider that
  writes quotes itself (the extractive one) picks quotes that policy accepts.
- ``Capabilities`` are facts about an adapter that the contract and the pipeline read instead
  of provider names or types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .sources import WorkingSet
from .verdict import DEFAULT_POLICY, Policy

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an adapter can do; the contract and pipeline read these, never provider names."""

    json_schema: bool = False  # constrained decoding against a JSON schema
    native_citations: bool = False  # sources sent as citable documents, citations returned
    # The output format it always answers in, whatever the contract asked (the extractive
    # provider and native-citation mappings write JSON claims); None: the requested one.
    answers_in: str | None = None
    # Whether it needs a model (False for the extractive provider, which only selects source
    # sentences: it cannot judge entailment, and needs no serialising lock for a model).
    generates: bool = True
    # Whether it returns the log-probabilities of the first output token's top alternatives
    # (``Request.logprobs``), which the judge reads instead of generated text.
    logprobs: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Request:
    messages: tuple[Message, ...]
    working_set: WorkingSet
    format: str  # "json" | "inline" | "evidence"
    question: str
    schema: dict[str, Any] | None = None  # set when the provider can constrain output
    max_tokens: int = 1024
    temperature: float = 0.0
    policy: Policy = field(default=DEFAULT_POLICY)  # what the answer will be verified under
    # How many top alternatives of the first output token to return with their
    # log-probabilities (0: none); read only by providers whose capabilities say ``logprobs``.
    logprobs: int = 0
    # Whether the provider may reuse the computed state of a prompt prefix it saw before (the
    # judge's fixed instructions; a repair turn's first turn, computed just before it); off for
    # a first answer, so that it never depends on what was asked before it.
    reuse_prefix: bool = False
