#!/usr/bin/env bash
# `make demo`: installs what the demo needs (hack/deps.sh demo), builds kubeslow and the lab's components
# (only those the demo's lab uses), starts the lab with DEMO_SCENARIO on DEMO_NODES simulated nodes and runs
# `kubeslow run --lab` against it; then prints each phase's time. The lab stays up (`make demo-down`).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go} BIN=${BIN:-bin/kubeslow} COMPILE_GOGC=${COMPILE_GOGC:-400} DEMO_NODES=${DEMO_NODES:-50} DEMO_SCENARIO=${DEMO_SCENARIO:-conflict-storm}
phases=()
phase() { # phase NAME CMD...: runs CMD, records NAME's time
	local name=$1 t0=$SECONDS rc=0
	shift
	echo "== $name" >&2
	"$@" || rc=$?
	phases+=("$(printf '%-34s %4ds' "$name" $((SECONDS - t0)))")
	return $rc
}
total=$SECONDS
phase "Debian packages (hack/deps.sh demo)" hack/deps.sh demo
phase "kubeslow (go build)" env CGO_ENABLED=0 GOGC="$COMPILE_GOGC" "$GO" build -trimpath -ldflags "${LDFLAGS:-}" -o "$BIN" ./cmd/kubeslow
phase "lab components (kubeslow lab build)" "$BIN" lab build
phase "lab down (a previous demo's)" "$BIN" lab down
phase "lab up ($DEMO_NODES nodes, $DEMO_SCENARIO)" "$BIN" lab up --nodes "$DEMO_NODES" --scenario "$DEMO_SCENARIO"
rc=0
phase "kubeslow run --lab" "$BIN" run --lab -o text --out-dir out/demo || rc=$?
echo
echo "make demo, phase by phase:"
printf '  %s\n' "${phases[@]}"
printf '  %-34s %4ds\n' "total" $((SECONDS - total))
echo "report: out/demo/report.html; the lab is still up: kubectl --kubeconfig \"$("$BIN" lab kubeconfig)\" get nodes; 'make demo-down' stops it"
# run exits 1 when it names a finding: the demo's point.
[ "$rc" = 0 ] || [ "$rc" = 1 ]
