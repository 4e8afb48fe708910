"""Hybrid retrieval: BM25's hits re-ranked by fusing them with MiniLM's reading of the question.

The store ranks by BM25 over the question's words. A question often says in other words what a
chunk says ("How soon must receipts be uploaded?" against "within 45 days of the purchase"),
and BM25 then places the chunk deep in its list or ties it with chunks that only share the
common words. The dense reranker takes BM25's first ``depth`` hits (``RERANK_DEPTH``), embeds
each (its section title, then its text: the first 256 tokens that the packaged all-MiniLM-L6-v2
reads) and the question, orders the hits by cosine, and fuses the two orders by reciprocal rank
(each hit scores ``1 / (k + rank)`` in each order, ``k = RERANK_K``; ties keep BM25's order).
Nothing is added that BM25 did not find, and nothing is removed: only the order changes, so
the packing budget takes the hits both readings rank high.

``k`` was chosen on two retrieval sets outside every reported figure (PolicyQA dev, each
policy its own corpus, 476 questions; CLAPNQ dev answerable questions outside the answer
sample against all 600 of its passages pooled, 200 questions): ``benchmarks/quality/contoso.py`` and
docs/corpus.md report what it does. Chunk vectors are kept by content (hash and section) in a
bounded cache, so a server embeds a chunk once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..corpus import Hit
from ..entailment.base import EntailmentError
from ..entailment.heuristic import MODEL_NAME, embed, load_minilm, shared_encoder

RERANK_DEPTH = 50  # BM25 hits re-ranked (the store is asked for at least this many)
RERANK_K = 10  # reciprocal-rank fusion's constant
CACHE_VECTORS = 8192  # chunk vectors kept (384 floats each: about 12 MiB)


@dataclass(frozen=True, slots=True)
class Reranked:
    """The hits in their new order, and whether the reranker read them (``error`` otherwise:
    the hits are then BM25's, unchanged)."""

    hits: list[Hit]
    error: str | None = None


def fuse(orders: Sequence[Sequence[int]], k: int = RERANK_K) -> list[int]:
    """Reciprocal-rank fusion of several orders of the same ``n`` items (indices, best first):
    each item scores ``sum(1 / (k + rank))`` (rank from 1); best first, ties by index (the
    first order is BM25's, so a tie keeps it)."""
    n = len(orders[0]) if orders else 0
    score = [0.0] * n
    for order in orders:
        for rank, i in enumerate(order, 1):
            score[i] += 1.0 / (k + rank)
    return sorted(range(n), key=lambda i: (-score[i], i))


def embedded_text(hit: Hit) -> str:
    """What the reranker reads of a hit: its section title (a PDF heading, a Markdown one), then
    its text."""
    return f"{hit.section}\n{hit.text}" if hit.section else hit.text


class DenseReranker:
    """``AskOptions.rerank``: ``rerank(question, hits)`` re-orders BM25's hits by fusing them
    with MiniLM's cosine to the question. A failing encoder, whatever it raises, leaves BM25's
    order (retrieval is not a check: nothing unverified can come of it) and says why in
    ``Reranked.error``."""

    def __init__(
        self,
        *,
        depth: int = RERANK_DEPTH,
        k: int = RERANK_K,
        device: str = "cpu",
        encoder: Any = None,
        lock: threading.Lock | None = None,
        cache_size: int = CACHE_VECTORS,
    ) -> None:
        if depth < 1 or k < 1 or cache_size < 0:
            raise ValueError("depth and k must be at least 1, cache_size at least 0")
        self.depth = depth
        self.k = k
        self._encoder = encoder if encoder is not None else load_minilm(device)
        self._lock = lock or threading.Lock()  # one encoder call at a time (shared if shared)
        self._cache: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    @classmethod
    def beside(cls, *holders: object | None, **options: Any) -> DenseReranker:
        """A reranker sharing the MiniLM of the first of ``holders`` that holds one (the
        support tier ``ask`` runs, the cascade's fast checker, the fast answer check), so that
        MiniLM loads once; its own otherwise. ``options``: as the constructor takes them."""
        return cls(**shared_encoder(*holders), **options)

    def _vectors(self, question: str, hits: Sequence[Hit]) -> tuple[Any, list[Any]]:
        keys = [(h.hash, h.section) for h in hits]
        with self._cache_lock:
            known = {key: self._cache[key] for key in keys if key in self._cache}
        todo: dict[tuple[str, str | None], str] = {}
        for key, hit in zip(keys, hits, strict=True):
            if key not in known:
                todo.setdefault(key, embedded_text(hit))
        if self._encoder is None:
            raise EntailmentError("the reranker was closed")
        vectors = embed(self._encoder, [question, *todo.values()], 32, self._lock)
        # copies: a cached row must not keep its whole batch's array alive
        fresh = {key: vector.copy() for key, vector in zip(todo, vectors[1:], strict=True)}
        if self._cache_size:
            with self._cache_lock:
                for key, vector in fresh.items():
                    self._cache[key] = vector
                    self._cache.move_to_end(key)
                for key in known:
                    if key in self._cache:
                        self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        chosen = {**known, **fresh}
        return vectors[0], [chosen[key] for key in keys]

    @property
    def cache_size(self) -> int:
        """How many chunk vectors the cache keeps."""
        return self._cache_size

    @property
    def cached(self) -> int:
        """How many chunk vectors the cache holds now."""
        with self._cache_lock:
            return len(self._cache)

    def remember(self, hits: Sequence[Hit]) -> None:
        """``hits``' vectors computed into the cache (a server warming before traffic)."""
        if hits:
            self._vectors("warm", hits)

    def rerank(self, question: str, hits: Sequence[Hit]) -> Reranked:
        """``hits`` (BM25's order, best first) in the fused order; the first ``depth`` are
        re-ranked, any after them keep their place behind."""
        head, tail = list(hits[: self.depth]), list(hits[self.depth :])
        if len(head) < 2 or not question.strip():
            return Reranked([*head, *tail])
        try:
            q, vectors = self._vectors(question, head)
            cosine = [float(q @ v) for v in vectors]
        except EntailmentError as exc:
            return Reranked([*head, *tail], error=str(exc))
        except Exception as exc:  # any other failure of the encoder: still only the order
            return Reranked(
                [*head, *tail], error=f"{MODEL_NAME} failed: {type(exc).__name__}: {exc}"
            )
        dense = sorted(range(len(head)), key=lambda i: (-cosine[i], i))
        order = fuse([list(range(len(head))), dense], self.k)
        return Reranked([head[i] for i in order] + tail)

    def close(self) -> None:
        self._encoder = None
        with self._cache_lock:
            self._cache.clear()
