#!/usr/bin/env bash
# Prints one closing line over go test -json files: "tests: N passed, N failed, N skipped".
set -euo pipefail
p=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "pass")] | length')
f=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "fail")] | length')
s=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "skip")] | length')
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
