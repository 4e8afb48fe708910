"""The answer check and the hybrid (dense) reranking."""
