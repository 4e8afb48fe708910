"""verify() by topic: ids, the four formats, abstention, quotes, support, policy, hostile input,
sources and verify's own arguments, and the seeds' worked examples. ``verifykit`` holds the
shared working set and the ``check`` helper.

A package (this file), so these modules are ``verify.test_*`` and their names never clash with
a module at tests/; tests/ stays on sys.path (``fuzzing``, ``corpuskit`` import as before).
"""

import pytest

# check() asserts the verdict invariants: rewrite its asserts as pytest does a test module's.
pytest.register_assert_rewrite("verify.verifykit")
