#!/usr/bin/env bash
# The demo, offline: (1) verify three bundled model answers; (2) ingest a small fictional
# handbook and ask it three questions with the embedded local model (an answer, a question
# whose draft needs a repair or a drop, one the handbook cannot answer); (3) the repair path
# shown step by step with a scripted model; (4) the HTTP service for a few seconds.
# Usage: examples/demo.sh PATH/TO/quotebound
set -u
qb=${1:-quotebound}
here=$(cd "$(dirname "$0")" && pwd)
py=$(dirname "$qb")/python
store="sqlite:///$here/../.demo/quotebound.db"

echo "### 1. verify: three model answers against one working set"
for answer in grounded.json partial.json abstained.txt; do
  echo "== quotebound verify examples/sources.json examples/$answer"
  "$qb" verify "$here/sources.json" "$here/$answer"
  rc=$?
  echo "(exit $rc)"
  echo
  [ "$rc" -le 1 ] || exit "$rc"   # 0 = grounded or abstained, 1 = something dropped
done

echo "### 2. ingest the sample handbook, then ask the local model (first use assembles it)"
"$qb" ingest "$here/handbook" --corpus handbook --url-prefix https://handbook.northwind.example/ \
  --store "$store" || exit $?
echo
for question in \
  "How many weeks of parental leave do employees get in Germany?" \
  "What is the hotel cap in tier 1 cities, and how soon must receipts be uploaded?" \
  "Does the company offer a pension plan?"; do
  echo "== quotebound ask \"$question\""
  "$qb" ask "$question" --corpus handbook --store "$store" || exit $?
  echo
done

echo "### 3. repair: a scripted model's first draft misquotes a number"
"$py" "$here/repair_demo.py" "$store"

echo
echo "### 4. the HTTP service: ask over server-sent events, reopen the cited source"
"$py" "$here/service_demo.py" "$store" || exit $?
echo
echo "Run it yourself: $qb keys create --store $store; $qb serve --store $store  (then open http://127.0.0.1:8000/)"
