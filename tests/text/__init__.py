"""The text layer: normalisation and its offset map, the one sentence splitter, the fast paths."""
