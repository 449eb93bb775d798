#!/usr/bin/env bash
# Prints one closing line over go test -json files: "tests: N passed, N failed, N skipped", after the 15
# slowest tests (top-level, with their package), which are also written to out/test-times.txt with every
# package's time: CI's time budget is watched there. Nothing fails on time.
set -euo pipefail
mkdir -p out
# A part that did not run (a failed build before it) left no file: said, and the rest summed.
files=()
for f in "$@"; do
	if [ -s "$f" ]; then files+=("$f"); else echo "summary: no $f (that part did not run)"; fi
done
set -- "${files[@]}"
[ $# -gt 0 ] || { echo "tests: none ran"; exit 1; }
{
	echo "slowest tests:"
	cat "$@" | jq -rs '[.[] | select(.Test != null and (.Action == "pass" or .Action == "fail") and (.Test | contains("/") | not))]
	  | sort_by(-.Elapsed) | .[:15][] | "  \(.Elapsed)s \(.Action) \(.Package | sub("^.*/kubeslow/"; ""))  \(.Test)"'
} | tee out/test-times.txt
{
	echo "packages (integration and unit runs, seconds):"
	cat "$@" | jq -rs '[.[] | select(.Test == null and (.Action == "pass" or .Action == "fail") and .Elapsed != null)]
	  | sort_by(-.Elapsed) | .[] | "  \(.Elapsed)s \(.Action) \(.Package | sub("^.*/kubeslow/"; ""))"'
} >> out/test-times.txt
p=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "pass")] | length')
f=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "fail")] | length')
s=$(cat "$@" | jq -s '[.[] | select(.Test != null and .Action == "skip")] | length')
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
