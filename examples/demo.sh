#!/usr/bin/env bash
# The demo: verify three bundled model answers against one working set, offline.
# Usage: examples/demo.sh PATH/TO/quotebound
set -u
qb=${1:-quotebound}
here=$(cd "$(dirname "$0")" && pwd)
for answer in grounded.json partial.json abstained.txt; do
  echo "== quotebound verify examples/sources.json examples/$answer"
  "$qb" verify "$here/sources.json" "$here/$answer"
  rc=$?
  echo "(exit $rc)"
  echo
  # 0 = grounded or abstained, 1 = something dropped; anything else is a real failure.
  [ "$rc" -le 1 ] || exit "$rc"
done
