"""Ingest (loaders, cleaning, the chunker) and the originals kept at ingest and shown from a
trace."""
