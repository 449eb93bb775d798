#!/usr/bin/env bash
# Runs every fuzz target of the module for a fixed budget each (FUZZTIME, default 3s) and prints one line per
# target: its package, name, result and time. Each package's fuzzing test binary is built once (go test -c
# -fuzz) and run once per target, in the package's directory as go test would. A crash (the fuzzer's failing
# input is written under the package's testdata/fuzz/<Target>/, to be committed as a regression case that
# the unit tests then replay) fails the script after every target has run. A target that fails with Go 1.26's
# bare deadline error and writes no input (golang/go#75804) is run again, up to three times in all. Called by `make test` before the
# integration tests; `make fuzz` alone runs it.
#
#   FUZZTIME=30s hack/fuzz.sh            every target, longer
#   FUZZWORKERS=1 hack/fuzz.sh           one fuzzing worker per target (and one compile at a time): `make test`
#                                        runs it so, at nice 19, beside the integration tests
#   hack/fuzz.sh ./internal/source/prom/...     only the targets under those packages
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-3s}
GO=${GO:-go}
# Workers per target (go test -parallel; default GOMAXPROCS); with FUZZWORKERS set, the instrumented test
# binaries are also compiled one package at a time (go build -p).
workers=() buildp=()
if [ -n "${FUZZWORKERS:-}" ]; then
	workers=(-test.parallel="$FUZZWORKERS")
	buildp=(-p "$FUZZWORKERS")
fi
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$($GO env GOCACHE)/fuzz
fuzzfunc='^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)'
failed=0 n=0 start=$SECONDS
# deadlineOnly OUTPUT: the target failed with nothing but the coordinator's deadline error (no panic, no
# "Failing input written", no t.Error output).
deadlineOnly() {
	grep -q '^    context deadline exceeded$' <<<"$1" || return 1
	! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' <<<"$1"
}
# Packages with a fuzz target (a top-level func FuzzXxx(f *testing.F) in a _test.go file).
while read -r d ip; do
	grep -lqs "$fuzzfunc" "$d"/*_test.go || continue
	pkg=./${d#"$PWD"/}
	bin=$tmp/$(echo "$ip" | tr / _).test
	t0=$SECONDS
	if ! out=$($GO test "${buildp[@]}" -c -fuzz=. -o "$bin" "$pkg" 2>&1); then
		printf '%-4s %-44s %-28s %3ds\n' FAIL "$pkg" "(build)" $((SECONDS - t0))
		echo "$out" | tail -30 | sed 's/^/     /'
		failed=$((failed + 1))
		continue
	fi
	build=$((SECONDS - t0))
	for t in $(grep -ho "$fuzzfunc" "$d"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort); do
		n=$((n + 1))
		t0=$SECONDS
		res=FAIL
		for try in 1 2 3; do
			before=$(ls "$d/testdata/fuzz/$t" 2>/dev/null | wc -l)
			if out=$(cd "$d" && "$bin" -test.run='^$' -test.fuzz="^$t\$" -test.fuzztime="$FUZZTIME" -test.fuzzcachedir="$cache/$ip" "${workers[@]}" 2>&1); then
				res=ok
				break
			fi
			# Go 1.26's fuzzing coordinator can fail a target at the -fuzztime deadline with a bare "context
			# deadline exceeded" and no failing input (golang/go#75804, a race between the deadline and its
			# child context; fixed in Go 1.27). Only that exact failure is run again, up to three times in all;
			# a failing input written under testdata/fuzz fails the target at once.
			after=$(ls "$d/testdata/fuzz/$t" 2>/dev/null | wc -l)
			if [ "$after" != "$before" ] || ! deadlineOnly "$out"; then
				break
			fi
			echo "     $t: the fuzzer stopped with a bare \"context deadline exceeded\" and wrote no input (golang/go#75804); run $((try + 1))"
		done
		[ "$res" = FAIL ] && failed=$((failed + 1))
		printf '%-4s %-44s %-28s %3ds (build %ds)\n' "$res" "$pkg" "$t" $((SECONDS - t0)) "$build"
		build=0
		if [ "$res" = FAIL ]; then
			echo "$out" | tail -30 | sed 's/^/     /'
		fi
	done
done < <($GO list -f '{{.Dir}} {{.ImportPath}}' "${pkgs[@]}")
echo "fuzz: $n targets, $failed failed, ${FUZZTIME} each, $((SECONDS - start))s in all"
[ "$failed" = 0 ]
