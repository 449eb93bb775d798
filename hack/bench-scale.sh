#!/usr/bin/env bash
# The scale benchmark (issue 32 §1, docs/scale.md): for each SIZE of simulated nodes, a lab with SIZE kwok nodes
# and one real node, PER_NODE bare pods on every kwok node (6: 30,000 pods at 5,000 nodes), then
#   - `kubeslow run --lab --profile quick` (and `full` with FULL=1),
#   - the API tier alone (`--only api.responsiveness,controlplane.api`),
# each measured by hack/benchscale: wall time, exit code, the API requests and bytes read counted by kubeslow's
# own client (kubeslow.overhead, by verb/resource and by measurement), kubeslow's peak RSS, the node agents' peak
# RSS, and kube-apiserver's + etcd's CPU during the run minus an idle window of the same length.
# Rows go to $OUT/rows.jsonl; the markdown tables with growth exponents to $OUT/table.md.
#
#   hack/bench-scale.sh                          # SIZES="500 1000 2500 5000"
#   SIZES="250 500" FULL=1 hack/bench-scale.sh
#   BEFORE=/tmp/kubeslow-old hack/bench-scale.sh # also `run --profile quick` with another build (label quick-before)
#   SIZES=5000 FULL=1 RUN_ARGS="--budget 60s" hack/bench-scale.sh # every run's benchmarks within a 60 s budget
#
# Needs root and bin/kubeslow (make build). The machine has one lab: the lab lock is taken for one size at a
# time (lab up, fill, measure, lab down) and released between sizes, so others can use the lab in between.
# A size whose lab does not come up is recorded in $OUT/failed.txt and the sweep goes on. Never in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"500 1000 2500 5000"}
PER_NODE=${PER_NODE:-6}
FULL=${FULL:-0}
BEFORE=${BEFORE:-}
KUBESLOW=${KUBESLOW:-bin/kubeslow}
RUN_ARGS=${RUN_ARGS:-} # more flags for every `run`, e.g. RUN_ARGS="--budget 60s"
OUT=${OUT:-$(mktemp -d /tmp/kubeslow-scale.XXXXXX)}
LOCK=/run/kubeslow-lab.lock
export PATH=/usr/local/go/bin:$PATH
mkdir -p "$OUT"
[[ -x $KUBESLOW ]] || { echo "$KUBESLOW missing: run make build" >&2; exit 2; }
helper=$OUT/benchscale
go build -o "$helper" hack/benchscale/main.go

one_size() {
	local n=$1 dir=$OUT/$1
	mkdir -p "$dir"
	trap '"$KUBESLOW" lab down >>"$dir/lab.log" 2>&1 || true' EXIT
	echo "== $n kwok nodes: lab up ($(date -u +%T))" >&2
	local t0=$SECONDS
	if ! "$KUBESLOW" lab up --nodes "$n" --real-nodes 1 >"$dir/lab.log" 2>&1; then
		echo "$n: lab up failed after $((SECONDS - t0)) s: $(tail -3 "$dir/lab.log" | tr '\n' ' ')" | tee -a "$OUT/failed.txt" >&2
		return 0
	fi
	echo "$n: lab up in $((SECONDS - t0)) s" | tee -a "$OUT/labup.txt" >&2
	t0=$SECONDS
	if ! "$helper" fill -per-node "$PER_NODE" 2>&1 | tee "$dir/fill.log" >&2; then
		echo "$n: fill failed" | tee -a "$OUT/failed.txt" >&2
		return 0
	fi
	echo "$n: $((n * PER_NODE)) pods Running in $((SECONDS - t0)) s" | tee -a "$OUT/labup.txt" >&2
	local profiles=(quick)
	[[ $FULL == 1 ]] && profiles+=(full)
	for p in "${profiles[@]}"; do
		echo "$n: run --profile $p ($(date -u +%T))" >&2
		"$helper" measure -label "$p" -out-dir "$dir/$p" -- "$KUBESLOW" run --lab --profile "$p" $RUN_ARGS -o json --out-dir "$dir/$p" \
			>>"$OUT/rows.jsonl" || echo "$n: measuring $p failed" | tee -a "$OUT/failed.txt" >&2
	done
	if [[ -n $BEFORE ]]; then
		echo "$n: run --profile quick with $BEFORE ($(date -u +%T))" >&2
		"$helper" measure -label quick-before -out-dir "$dir/quick-before" -- "$BEFORE" run --lab --profile quick $RUN_ARGS -o json --out-dir "$dir/quick-before" \
			>>"$OUT/rows.jsonl" || echo "$n: measuring quick-before failed" | tee -a "$OUT/failed.txt" >&2
	fi
	echo "$n: API tier ($(date -u +%T))" >&2
	"$helper" measure -label api-tier -out-dir "$dir/api" -- "$KUBESLOW" run --lab --only api.responsiveness,controlplane.api -o json --out-dir "$dir/api" \
		>>"$OUT/rows.jsonl" || echo "$n: measuring the API tier failed" | tee -a "$OUT/failed.txt" >&2
	"$KUBESLOW" lab down >>"$dir/lab.log" 2>&1
	trap - EXIT
}

for n in $SIZES; do
	# One size per lock: others get the lab between sizes.
	flock "$LOCK" bash -c "set -o pipefail; $(declare -f one_size); OUT='$OUT' KUBESLOW='$KUBESLOW' PER_NODE='$PER_NODE' FULL='$FULL' BEFORE='$BEFORE' RUN_ARGS='$RUN_ARGS' helper='$helper'; one_size $n"
	[[ -s $OUT/rows.jsonl ]] && "$helper" table "$OUT/rows.jsonl" >"$OUT/table.md"
done
echo "rows: $OUT/rows.jsonl; table: $OUT/table.md" >&2
cat "$OUT/table.md" 2>/dev/null || true
