#!/usr/bin/env bash
# Runs every fuzz target of the module for a fixed budget each (FUZZTIME, default 3s) and prints one line per
# target: its package, name, result and time. Each package's fuzzing test binary is built once (go test -c
# -fuzz) and run once per target, in the package's directory as go test would. A crash (the fuzzer's failing
# input is written under the package's testdata/fuzz/<Target>/, to be committed as a regression case that
# the unit tests then replay) fails the script after every target has run. Called by `make test` before the
# integration tests; `make fuzz` alone runs it.
#
#   FUZZTIME=30s hack/fuzz.sh            every target, longer
#   hack/fuzz.sh ./internal/prom/...     only the targets under those packages
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-3s}
GO=${GO:-go}
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$($GO env GOCACHE)/fuzz
fuzzfunc='^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)'
failed=0 n=0 start=$SECONDS
# Packages with a fuzz target (a top-level func FuzzXxx(f *testing.F) in a _test.go file).
while read -r d ip; do
	grep -lqs "$fuzzfunc" "$d"/*_test.go || continue
	pkg=./${d#"$PWD"/}
	bin=$tmp/$(echo "$ip" | tr / _).test
	t0=$SECONDS
	if ! out=$($GO test -c -fuzz=. -o "$bin" "$pkg" 2>&1); then
		printf '%-4s %-44s %-28s %3ds\n' FAIL "$pkg" "(build)" $((SECONDS - t0))
		echo "$out" | tail -30 | sed 's/^/     /'
		failed=$((failed + 1))
		continue
	fi
	build=$((SECONDS - t0))
	for t in $(grep -ho "$fuzzfunc" "$d"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort); do
		n=$((n + 1))
		t0=$SECONDS
		if out=$(cd "$d" && "$bin" -test.run='^$' -test.fuzz="^$t\$" -test.fuzztime="$FUZZTIME" -test.fuzzcachedir="$cache/$ip" 2>&1); then
			res=ok
		else
			res=FAIL failed=$((failed + 1))
		fi
		printf '%-4s %-44s %-28s %3ds (build %ds)\n' "$res" "$pkg" "$t" $((SECONDS - t0)) "$build"
		build=0
		if [ "$res" = FAIL ]; then
			echo "$out" | tail -30 | sed 's/^/     /'
		fi
	done
done < <($GO list -f '{{.Dir}} {{.ImportPath}}' "${pkgs[@]}")
echo "fuzz: $n targets, $failed failed, ${FUZZTIME} each, $((SECONDS - start))s in all"
[ "$failed" = 0 ]
