"""Helpers the tests and the benchmarks share, one module each, imported as ``kits.NAME``:

- ``pgcluster``: a throwaway PostgreSQL cluster (the tests' store fixtures, store_speed,
  server_load);
- ``pdfkit``: PDFs made in code (the ingest and originals tests, page_speed);
- ``corpuskit``: documents whose chunks are their paragraphs;
- ``serverkit``: a small corpus, in-process calls and a live server (API and browser tests);
- ``clikit``: the CLI run in process (exit code, stdout, stderr);
- ``fuzzing``: how many examples the property tests draw;
- ``verifykit``: the verify tests' working set and ``check``, which asserts every verdict's
  invariants;
- ``ragkit``: the framework integration tests' documents and replies.

At the repository root, beside ``tests`` and ``benchmarks``, so that neither reaches into the
other: run from the root (``python -m pytest``, ``python -m benchmarks.KIND.NAME``), it imports.
"""
