#!/usr/bin/env bash
# watch-scale.sh: `kubeslow watch`'s own cost against the running lab, whatever its size (issue 41's bound: the
# watch process <= 150 MiB against a 1,000-node kwok lab). Runs the watch for CYCLES cycles at --interval 30s (the default --window is 20 s),
# then prints its peak RSS (VmHWM), its RSS after each cycle, and each cycle's requests, bytes read and CPU from
# its own /metrics (kubeslow_cycle_api_requests, _bytes_read, _cpu_seconds). Stopped by PID.
#   flock /run/kubeslow-lab.lock sh -c 'bin/kubeslow lab up --nodes 1000 && hack/watch-scale.sh 4; bin/kubeslow lab down'
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES=${1:-4}
BIN=${BIN:-bin/kubeslow}
LISTEN=127.0.0.1:9465
OUT=out/watch-scale; rm -rf "$OUT"; mkdir -p "$OUT"
KC=$($BIN lab kubeconfig)
nodes=$(kubectl --kubeconfig "$KC" get nodes --no-headers | wc -l)
$BIN watch --kubeconfig "$KC" --interval 30s --listen "$LISTEN" > "$OUT/watch.log" 2>&1 & WATCH=$!
sleep 1; kill -0 "$WATCH" 2>/dev/null || { cat "$OUT/watch.log"; exit 1; }
trap 'kill "$WATCH" 2>/dev/null || true' EXIT
metric() { curl -s --max-time 5 "http://$LISTEN/metrics" | awk -v m="$1" '$1 == m || index($1, m"{") == 1 {s += $NF} END {print s + 0}'; }
echo "kubeslow watch (pid $WATCH) on a lab of $nodes nodes, --interval 30s, $CYCLES cycles"
seen=0
deadline=$((SECONDS + CYCLES * 150))
while [ "$seen" -lt "$CYCLES" ] && [ $SECONDS -lt $deadline ]; do
	sleep 2
	n=$(metric kubeslow_cycles_total)
	if [ "${n%.*}" -gt "$seen" ]; then
		seen=${n%.*}
		printf 'cycle %d: RSS %d MiB (peak %d MiB); requests %s, bytes read %s, CPU %s s; up %s\n' "$seen" \
			$(( $(awk '/^VmRSS/ {print $2}' /proc/$WATCH/status) / 1024 )) $(( $(awk '/^VmHWM/ {print $2}' /proc/$WATCH/status) / 1024 )) \
			"$(metric kubeslow_cycle_api_requests)" "$(metric kubeslow_cycle_api_bytes_read)" "$(metric kubeslow_cycle_cpu_seconds)" "$(metric kubeslow_up)"
	fi
done
echo "peak RSS (VmHWM) over $seen cycles: $(( $(awk '/^VmHWM/ {print $2}' /proc/$WATCH/status) / 1024 )) MiB; cycles by result: $(curl -s "http://$LISTEN/metrics" | grep '^kubeslow_cycles_total' | tr '\n' ' ')"
