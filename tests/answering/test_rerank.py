"""Hybrid ranking: BM25's hits re-ordered by reciprocal-rank fusion with MiniLM's cosine to the
question (``answering.rerank``), as ``ask``, ``serve`` and ``search`` pack them. Real
all-MiniLM-L6-v2 throughout; a broken encoder leaves BM25's order and says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kits.clikit import run
from quotebound.answering.rerank import DenseReranker, embedded_text, fuse
from quotebound.corpus import Hit
from quotebound.ingest import chunk_document, load_file
from quotebound.packing import chunk_key
from quotebound.pipeline import AskOptions, ask, retrieve
from quotebound.providers import ExtractiveProvider
from quotebound.store import open_store

QUESTION = "How soon must receipts be uploaded?"


def hit(text: str, score: float, section: str | None = None) -> Hit:
    return Hit(
        f"c:{abs(hash(text))}", 1, text, f"h{abs(hash(text))}", 0, len(text), score, section=section
    )


# An order BM25 might give: A (on receipts, not on when), B (off topic, sharing "must"), C (the
# answer, ranked third), D (after the reranked depth).
A = hit("Receipts are needed for every expense claim you make.", 3.0)
B = hit("The cafeteria must close its doors by two in the afternoon.", 2.0)
C = hit("Expense receipts must be uploaded within 45 days of purchase.", 1.0)
D = hit("Laptops are replaced every three years.", 0.5)


@pytest.fixture(scope="module")
def reranker() -> Iterator[DenseReranker]:
    made = DenseReranker(depth=3)
    yield made
    made.close()


def test_fusion_adds_reciprocal_ranks_and_ties_keep_the_first_order() -> None:
    assert fuse([[0, 1, 2], [2, 0, 1]], k=10) == [0, 2, 1]  # 1/11+1/12 > 1/13+1/11 > 1/12+1/13
    assert fuse([[0, 1], [1, 0]], k=10) == [0, 1]  # a tie: the first order's
    assert fuse([[0, 1, 2], [2, 1, 0]], k=1) == [0, 2, 1]  # 0 and 2 tie (3/4): BM25's 0 first
    assert fuse([[3, 2, 1, 0], [3, 2, 1, 0]]) == [3, 2, 1, 0]
    assert fuse([]) == []


def test_a_chunk_that_says_it_in_other_words_moves_up_and_nothing_is_added(
    reranker: DenseReranker,
) -> None:
    got = reranker.rerank(QUESTION, [A, B, C, D])
    assert got.error is None
    assert got.hits == [A, C, B, D]  # C above the off-topic B; D, past the depth, stays last
    # the same hits under BM25's order alone, when nothing is read: one hit, or no question
    assert reranker.rerank(QUESTION, [B]).hits == [B]
    assert reranker.rerank("   ", [B, C]).hits == [B, C]


def test_the_section_title_is_read_with_the_text() -> None:
    assert embedded_text(hit("Text.", 1.0, "Expenses")) == "Expenses\nText."
    assert embedded_text(hit("Text.", 1.0)) == "Text."


class Counting:
    """The real encoder, counting the texts it is given."""

    def __init__(self, encoder: Any) -> None:
        self.encoder, self.texts = encoder, 0
        self.max_seq_length = encoder.max_seq_length

    def encode(self, texts: list[str], **kwargs: Any) -> Any:
        self.texts += len(texts)
        return self.encoder.encode(texts, **kwargs)


def test_chunk_vectors_are_kept_by_content_and_the_cache_is_bounded(
    reranker: DenseReranker,
) -> None:
    counting = Counting(reranker._encoder)
    cached = DenseReranker(depth=3, encoder=counting, cache_size=3)
    first = cached.rerank(QUESTION, [A, B, C])
    assert counting.texts == 4  # the question and three chunks
    assert cached.rerank(QUESTION, [A, B, C]) == first and counting.texts == 5  # the question
    cached.rerank(QUESTION, [D, A, B])  # D pushes out the oldest (C)
    assert counting.texts == 7 and len(cached._cache) == 3
    assert cached.rerank(QUESTION, [A, B, C]).hits == first.hits and counting.texts == 9
    none_kept = DenseReranker(depth=3, encoder=counting, cache_size=0)
    none_kept.rerank(QUESTION, [A, B, C])
    none_kept.rerank(QUESTION, [A, B, C])
    assert counting.texts == 9 + 8 and not none_kept._cache


class Broken:
    max_seq_length = 256

    def encode(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("out of memory")


def test_a_failing_encoder_leaves_bm25s_order_and_says_why() -> None:
    got = DenseReranker(encoder=Broken()).rerank(QUESTION, [A, B, C])
    assert got.hits == [A, B, C] and got.error and "out of memory" in got.error
    closed = DenseReranker(encoder=Broken())
    closed.close()
    assert closed.rerank(QUESTION, [A, B]).error == "the reranker was closed"
    with pytest.raises(ValueError, match="depth"):
        DenseReranker(depth=0, encoder=Broken())


def test_beside_shares_the_encoder_of_whoever_holds_one(reranker: DenseReranker) -> None:
    class Holder:
        encoder = reranker._encoder
        encoder_lock = reranker._lock

    shared = DenseReranker.beside(None, object(), Holder(), depth=7)
    assert shared._encoder is reranker._encoder and shared._lock is reranker._lock
    assert shared.depth == 7


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "receipts.md").write_text(
        "# Expenses\n\nUpload the scanned slips to the expense portal within 45 days of the "
        "purchase.\n",
        encoding="utf-8",
    )
    for n in range(3):  # chunks that share the question's words, not its meaning
        (docs / f"r{n}.md").write_text(
            f"# Note {n}\n\nUploaded photos of the cafeteria menu and printed receipts of the "
            f"lunch specials, receipts and all, are pinned to board {n}.\n",
            encoding="utf-8",
        )
    for topic in ("laptops", "holidays", "parking", "security"):  # the rest of the handbook
        (docs / f"{topic}.md").write_text(
            f"# {topic.title()}\n\nThe {topic} policy is set by the office manager.\n",
            encoding="utf-8",
        )
    url = f"sqlite:///{tmp_path}/s.db"
    with open_store(url) as store:
        for path in sorted(docs.iterdir()):
            doc = load_file(path, path.name)
            store.ingest("kb", doc, chunk_document(doc))
    return url


def test_ask_packs_the_fused_order_cut_to_its_limit_and_traces_it(
    store_url: str, reranker: DenseReranker
) -> None:
    deep = DenseReranker(encoder=reranker._encoder)  # depth 50 > the limit
    with open_store(store_url) as store:
        plain, none, _ = retrieve(QUESTION, store, AskOptions(limit=2))
        fused, done, _ = retrieve(QUESTION, store, AskOptions(limit=2, rerank=deep))
        assert none is None and done == 1 and len(plain) == len(fused) == 2
        assert "receipts.md" not in " ".join(h.key for h in plain)  # BM25 alone: too deep
        assert "receipts.md" in " ".join(h.key for h in fused)
        answer = ask(QUESTION, store, ExtractiveProvider(), AskOptions(limit=2, rerank=deep))
        assert answer.counts["reranked"] == 1 and answer.counts["retrieved"] == 2
        broken = DenseReranker(encoder=Broken())
        failed = ask(QUESTION, store, ExtractiveProvider(), AskOptions(limit=2, rerank=broken))
        assert failed.counts["reranked"] == 0
        trace = store.get_trace(failed.trace_id or "")
        assert trace.counts["reranked"] == 0
        assert [s.key for s in trace.sources] == [chunk_key(h) for h in plain]  # BM25's
        assert "reranked" not in ask(QUESTION, store, ExtractiveProvider()).counts


def test_search_shows_the_order_ask_packs(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", QUESTION, "--store", store_url, "--limit", "2", "--json"]
    rc, out, _ = run(args, capsys)
    fused = json.loads(out)
    assert rc == 0 and fused["order"] == "bm25+dense"
    assert any("receipts.md" in h["key"] for h in fused["hits"])
    rc, out, _ = run([*args, "--rerank", "off"], capsys)
    plain = json.loads(out)
    assert rc == 0 and plain["order"] == "bm25" and len(plain["hits"]) == 2
    assert not any("receipts.md" in h["key"] for h in plain["hits"])
    rc, out, _ = run(args[:-1], capsys)
    assert rc == 0 and "ordered by bm25+dense" in out


class Wrong:
    """An encoder that fails in ways no check expects: a type error, or too few vectors."""

    max_seq_length = 256

    def __init__(self, encoder: Any, mode: str) -> None:
        self.encoder, self.mode = encoder, mode

    def encode(self, texts: list[str], **kwargs: Any) -> Any:
        if self.mode == "type":
            raise TypeError("unsupported operand")
        return self.encoder.encode(texts[:-1], **kwargs)  # one vector short


def test_any_encoder_failure_leaves_bm25s_order_and_ask_logs_why(
    reranker: DenseReranker, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    for mode, said in (("type", "TypeError: unsupported operand"), ("short", "ValueError")):
        got = DenseReranker(encoder=Wrong(reranker._encoder, mode)).rerank(QUESTION, [A, B, C])
        assert got.hits == [A, B, C] and got.error and said in got.error
    wrong = DenseReranker(encoder=Wrong(reranker._encoder, "type"))
    with open_store(store_url) as store, caplog.at_level("WARNING", "quotebound.retrieval"):
        answer = ask(QUESTION, store, ExtractiveProvider(), AskOptions(limit=2, rerank=wrong))
    assert answer.counts["reranked"] == 0 and answer.status != "error"
    assert any("TypeError: unsupported operand" in r.getMessage() for r in caplog.records)


def test_the_cache_tells_sections_apart_and_keeps_copies(reranker: DenseReranker) -> None:
    counting = Counting(reranker._encoder)
    cached = DenseReranker(depth=3, encoder=counting)
    plain = hit("Upload them within 45 days.", 1.0)
    titled = Hit(plain.key, 1, plain.text, plain.hash, 0, len(plain.text), 1.0, section="Receipts")
    cached.rerank(QUESTION, [A, plain, titled])
    assert counting.texts == 4  # the same text under another heading is another text
    vectors = cached._cache
    assert float(vectors[(plain.hash, None)] @ vectors[(plain.hash, "Receipts")]) < 0.999
    assert all(v.base is None for v in vectors.values())  # no view pins its whole batch


def test_a_deeper_search_reads_only_what_the_caller_may_read(
    tmp_path: Path, reranker: DenseReranker
) -> None:
    docs = tmp_path / "acl"
    docs.mkdir()
    (docs / "secret.md").write_text(
        "# Expenses\n\nUpload the slips to the portal within 45 days of the purchase.\n",
        encoding="utf-8",
    )
    (docs / "open.md").write_text(
        "# Receipts\n\nPrinted receipts of lunch are pinned to the board.\n", encoding="utf-8"
    )
    url = f"sqlite:///{tmp_path}/acl.db"
    deep = DenseReranker(encoder=reranker._encoder)
    with open_store(url) as store:
        for path in sorted(docs.iterdir()):
            doc = load_file(path, path.name)
            acl = ["finance"] if path.name == "secret.md" else None
            store.ingest("kb", doc, chunk_document(doc), acl=acl)
        outside, _, _ = retrieve(QUESTION, store, AskOptions(limit=5, rerank=deep))
        inside, _, _ = retrieve(
            QUESTION, store, AskOptions(limit=5, rerank=deep, groups=["finance"])
        )
        other, _, _ = retrieve(QUESTION, store, AskOptions(corpora=["hr"], limit=5, rerank=deep))
    assert [h.key for h in outside] == ["kb:open.md"]
    assert sorted(h.key for h in inside) == ["kb:open.md", "kb:secret.md"]
    assert other == []


def test_hits_past_the_depth_keep_bm25s_order_through_retrieve(
    store_url: str, reranker: DenseReranker
) -> None:
    shallow = DenseReranker(depth=3, encoder=reranker._encoder)
    with open_store(store_url) as store:
        plain, _, _ = retrieve(QUESTION, store, AskOptions(limit=10))
        fused, done, _ = retrieve(QUESTION, store, AskOptions(limit=10, rerank=shallow))
    assert done == 1 and len(plain) == len(fused) > 3
    assert sorted(h.key for h in fused[:3]) == sorted(h.key for h in plain[:3])
    assert fused[3:] == plain[3:]
