"""The request bodies of the JSON API, as pydantic models (and so in ``/openapi.json``).

Invariants:
- Unknown fields are refused (422), never ignored: a typo in a policy must not silently fall
  back to the default.
- Questions and corpus names carry no NUL character (PostgreSQL cannot store one) and have
  bounded lengths; a blank question is refused.
- The class names are the schema names clients see in ``/openapi.json``: renaming one is an
  API change.
"""

# No `from __future__ import annotations` here: pydantic and FastAPI read these at run time.
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..packing import DEFAULT_BUDGET_CHARS
from ..parsing import FormatChoice, PromptFormat


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceIn(_Body):
    id: str = Field(min_length=1, max_length=200, description="What the model cites: S1, doc_9")
    text: str = Field(description="Exactly the text that was sent to the model")
    key: str | None = None
    title: str | None = None
    url: str | None = None
    updated: str | None = None
    kind: Literal["document", "tool", "user"] = "document"
    page: int | None = Field(default=None, ge=1)


class PolicyIn(_Body):
    """``Policy.from_options``: a field left out keeps the default policy's value."""

    min_quote_words: int | None = Field(default=None, ge=1, le=1000, description="default 4")
    max_quote_words: int | None = Field(default=None, ge=1, le=1000, description="default 40")
    allow_user_evidence: bool = False
    sentinels: list[str] = Field(default_factory=list, max_length=20)
    strict: bool = Field(
        default=False,
        description="Writing faults (claim_fragment) drop a claim; off, they are its notes",
    )


class VerifyIn(_Body):
    sources: list[SourceIn] = Field(description="The working set that was sent")
    output: str = Field(description="The model's raw output")
    format: FormatChoice = "auto"
    policy: PolicyIn | None = None


_Text = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=4000, pattern=r"^[^\x00]*$"),
]
_Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]


class AskIn(_Body):
    question: _Text
    corpus: list[_Name] | None = Field(default=None, description="Search only these corpora")
    format: PromptFormat = "json"
    limit: int = Field(default=20, ge=1, le=200, description="Chunks retrieved before packing")
    budget: int = Field(default=DEFAULT_BUDGET_CHARS, ge=1, le=1_000_000)
    stream: bool = Field(default=False, description="Answer as server-sent events")
