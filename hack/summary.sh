#!/usr/bin/env bash
# Prints one closing line over go test -json files: "tests: N passed, N failed, N skipped", after the ten
# slowest tests (CI's time budget is watched there).
set -euo pipefail
echo "slowest tests:"
cat "$@" | jq -rs '[.[] | select(.Test != null and (.Action == "pass" or .Action == "fail") and (.Test | contains("/") | not))]
  | sort_by(-.Elapsed) | .[:10][] | "  \(.Elapsed)s \(.Action) \(.Package | sub("^.*/kubeslow/"; ""))  \(.Test)"'
p=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "pass")] | length')
f=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "fail")] | length')
s=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "skip")] | length')
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
