"""The tests, one folder per layer of docs/architecture.md (text, verify, contract, providers,
store, ingest, entailment, answering, pipeline, server, cli, evaluation, integrations), and
benchmarks/ (the benchmarks' own code) and docs/ (what the docs, the README and the public API
promise).

A package (this file and one in each folder), so every test module has a unique dotted name
(``tests.server.test_server``): a folder named as a layer never shadows an importable package,
and the repository root is what pytest puts on sys.path, whence ``kits`` (the helpers the tests
and the benchmarks share) and ``benchmarks`` import as packages.
"""

import pytest

# The kits' asserts (verifykit's ``check`` asserts every verdict's invariants) are rewritten
# as pytest rewrites a test module's, so a failing one shows its values.
pytest.register_assert_rewrite("kits")
