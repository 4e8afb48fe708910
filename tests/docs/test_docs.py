"""The docs are executed: every status and reason code is documented with an example that
produces it, and every CLI command and option appears in docs/cli.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from quotebound import CITATION_REASONS, CLAIM_REASONS, STATUSES, Policy, WorkingSet, verify
from quotebound.cli import cli

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"```(\w+) (\w+)\n(.*?)```", re.DOTALL)


def _sections(path: Path) -> dict[str, str]:
    """### `code` headings -> the text under them."""
    parts = re.split(r"^### `([a-z_]+)`\s*$", path.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _reasons_doc() -> tuple[WorkingSet, dict[str, list[str]]]:
    text = (DOCS / "reasons.md").read_text(encoding="utf-8")
    sources = next(b for lang, tag, b in _BLOCK.findall(text) if tag == "sources")
    ws = WorkingSet.from_dicts(json.loads(sources))
    examples = {
        code: [b for _, tag, b in _BLOCK.findall(body) if tag == "output"]
        for code, body in _sections(DOCS / "reasons.md").items()
    }
    return ws, examples


def _backend_of(code: str) -> str | None:
    """The entailment backend a section's examples need (its ```text backend block)."""
    body = _sections(DOCS / "reasons.md")[code]
    named = [b.strip() for _, tag, b in _BLOCK.findall(body) if tag == "backend"]
    return named[0] if named else None


def _policy_of(code: str) -> Policy | None:
    """The policy a section's examples are verified under (its ```json policy block)."""
    body = _sections(DOCS / "reasons.md")[code]
    named = [b for _, tag, b in _BLOCK.findall(body) if tag == "policy"]
    return Policy(**json.loads(named[0])) if named else None


def _question_of(code: str) -> str | None:
    """The question a section's examples answer in ``ask`` (its ```text question block): the
    reasons only ``ask`` gives, knowing the question (``restates_question``)."""
    body = _sections(DOCS / "reasons.md")[code]
    named = [b.strip() for _, tag, b in _BLOCK.findall(body) if tag == "question"]
    return named[0] if named else None


def _verdict(
    ws: WorkingSet,
    output: str,
    backend: str | None,
    policy: Policy | None = None,
    question: str | None = None,
) -> dict[str, object]:
    verdict = verify(ws, output, policy=policy)
    if question is not None:  # as ``ask`` reads its model's answer to the question
        from quotebound.repair import read_with_question

        verdict = read_with_question(question, verdict, ws)
    if backend is None:
        return verdict.to_dict()
    from quotebound.entailment import make_backend
    from quotebound.entailment.tier import check_entailment
    from quotebound.providers.scripted import ScriptedProvider

    name, _, answer = backend.partition(":")
    made = make_backend(name, provider=ScriptedProvider([answer] * 10) if answer else None)
    return check_entailment(verdict, ws, made).to_dict()


def _codes(verdict_dict: dict[str, object]) -> set[str]:
    found = {str(verdict_dict["status"])}
    for claim in verdict_dict["claims"]:  # type: ignore[attr-defined]
        if claim["reason"]:
            found.add(claim["reason"])
        found.update(c["reason"] for c in claim["citations"] if c["reason"])
    return found


def test_every_code_is_documented_exactly_once() -> None:
    _, examples = _reasons_doc()
    expected = set(STATUSES) | set(CLAIM_REASONS) | set(CITATION_REASONS)
    assert set(examples) == expected


@pytest.mark.parametrize("code", sorted(set(STATUSES) | set(CLAIM_REASONS) | set(CITATION_REASONS)))
def test_documented_example_produces_its_code(code: str) -> None:
    ws, examples = _reasons_doc()
    assert examples[code], f"docs/reasons.md has no output example for {code}"
    for output in examples[code]:
        verdict = _verdict(ws, output, _backend_of(code), _policy_of(code), _question_of(code))
        assert code in _codes(verdict), (code, verdict)


def _all_commands(group: click.Group = cli, prefix: str = "") -> list[tuple[str, click.Command]]:
    """Every command, subcommands of groups included (``keys create``)."""
    out: list[tuple[str, click.Command]] = []
    for name, command in group.commands.items():
        out.append((prefix + name, command))
        if isinstance(command, click.Group):
            out += _all_commands(command, f"{prefix}{name} ")
    return out


@pytest.mark.parametrize(("name", "command"), _all_commands())
def test_cli_command_and_options_documented(name: str, command: click.Command) -> None:
    doc = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert f"quotebound {name}" in doc
    for param in command.params:
        if isinstance(param, click.Option):
            for opt in param.opts:
                assert opt in doc, f"{opt} of quotebound {name} is not in docs/cli.md"


def test_readme_opens_with_the_two_setup_commands() -> None:
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```\w*\n(.*?)```", readme, re.DOTALL)
    assert first_block is not None
    commands = [ln.split("#")[0].strip() for ln in first_block.group(1).splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_docs_python_examples_run(page: str) -> None:
    """Every ```python block of every docs page runs (against an empty private store)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        exec(compile(block, f"docs/{page}", "exec"), {})


def test_verify_page_verdict_example_is_real() -> None:
    text = (DOCS / "verify.md").read_text(encoding="utf-8")
    section = text.split("## The verdict", 1)[1]
    shown = json.loads(re.search(r"```json\n(.*?)```", section, re.DOTALL).group(1))  # type: ignore[union-attr]
    sources = json.loads((DOCS.parent / "examples" / "sources.json").read_text(encoding="utf-8"))
    raw = json.dumps(
        {
            "answerable": True,
            "claims": [
                {
                    "text": c["text"],
                    "citations": [
                        {"source": x["ref"], "quote": x["quote"]} for x in c["citations"]
                    ],
                }
                for c in shown["claims"]
            ],
        }
    )
    assert verify(WorkingSet.from_dicts(sources), raw).to_dict() == shown


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_each_docs_page_opens_with_who_it_is_for(page: str) -> None:
    """docs/ is a map: under its title, each page says in two lines who it is for."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    assert lines[2].startswith("Who this is for: "), page
    assert lines[3] and not lines[3].startswith("#"), page
