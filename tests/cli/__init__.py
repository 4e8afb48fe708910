"""The command line: verify, ask, ingest, search, trace, and what reaches a terminal."""
