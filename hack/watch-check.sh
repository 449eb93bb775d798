#!/usr/bin/env bash
# watch-check.sh: `kubeslow watch` on a running lab (issue 41's lab check), driven by clients kubeslow did not
# write (curl). Phases, each logged with its times: SOAK minutes healthy (no finding at warning or above; the
# watch's RSS sampled), a LIST storm (20 curl loops listing all Events, 3,000 seeded) until its finding fires and
# then until it clears after the storm stops, and a conflict storm (8 curl loops PUTting a ConfigMap with a
# stale resourceVersion: 409s) the same way. Every load loop is bounded in time; processes are stopped by PID.
#   hack/watch-check.sh [SOAK_MINUTES]     (needs `kubeslow lab up` done; writes out/watch-check/)
set -euo pipefail
cd "$(dirname "$0")/.."
SOAK=${1:-30}
BIN=${BIN:-bin/kubeslow}
OUT=out/watch-check; rm -rf "$OUT"; mkdir -p "$OUT"
KC=$($BIN lab kubeconfig)
LISTEN=127.0.0.1:9464
kcv() { kubectl --kubeconfig "$KC" config view --raw --minify -o jsonpath="$1"; }
SERVER=$(kcv '{.clusters[0].cluster.server}')
kcv '{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$OUT/ca.crt"
kcv '{.users[0].user.client-certificate-data}' | base64 -d > "$OUT/client.crt"
kcv '{.users[0].user.client-key-data}' | base64 -d > "$OUT/client.key"
api() { curl -sS --max-time 10 --cacert "$OUT/ca.crt" --cert "$OUT/client.crt" --key "$OUT/client.key" "$@"; }
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; pids=(); }  # not a bare wait: the watch is a child too
trap 'stop_all; kill "$WATCH" 2>/dev/null || true' EXIT
log() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/phases.log"; }

$BIN watch --kubeconfig "$KC" --interval 30s --listen "$LISTEN" > "$OUT/watch.log" 2>&1 & WATCH=$!
log "watch started (pid $WATCH): --interval 30s --for 2 (default)"
# firing: the findings firing at warning or above, one per line; rss: the watch's resident memory in kB.
firing() { curl -s --max-time 5 "http://$LISTEN/metrics" | awk '/^kubeslow_finding\{/ && / 1$/ && (/severity="warning"/ || /severity="error"/ || /severity="critical"/)' | sed -E 's/.*id="([^"]*)".*severity="([^"]*)".*/\1 \2/' | sort -u; }
rss() { awk '/^VmRSS/ {print $2}' /proc/$WATCH/status; }
sample() { # sample PHASE: one line of the time series
  local f; f=$(firing | tr '\n' ',' ); echo "$(date -u +%s) $1 rss_kb=$(rss) cycles=$(curl -s --max-time 5 "http://$LISTEN/metrics" | awk '/^kubeslow_cycles_total/ {s+=$2} END {print s+0}') firing=${f}" >> "$OUT/series.txt"
}
# until_fires ID MAXSEC PHASE / until_clears ID MAXSEC PHASE: seconds waited, or -1.
until_state() { local id=$1 max=$2 phase=$3 want=$4 t0; t0=$(date +%s)
  while (( $(date +%s) - t0 < max )); do sample "$phase"
    if [[ $want == fire ]] && firing | grep -q "^$id "; then echo $(( $(date +%s) - t0 )); return; fi
    if [[ $want == clear ]] && ! firing | grep -q "^$id "; then echo $(( $(date +%s) - t0 )); return; fi
    sleep 10
  done; echo -1; }

# 1. Soak: healthy.
end=$(( $(date +%s) + SOAK * 60 ))
while (( $(date +%s) < end )); do sample soak; sleep 30; done
log "soak of $SOAK min: firing at warning+ during it: $(awk '$2=="soak" && $5!="firing=" {print $5}' "$OUT/series.txt" | sort -u | tr '\n' ' ')"
log "soak RSS kB first/last/max: $(awk '$2=="soak" {sub("rss_kb=","",$3); if(!f)f=$3; l=$3; if($3>m)m=$3} END {print f"/"l"/"m}' "$OUT/series.txt")"

# 2. LIST storm by curl: 3,000 Events seeded, 20 loops listing them all every second, bounded to 6 minutes.
api -X POST -H 'Content-Type: application/json' "$SERVER/api/v1/namespaces" -d '{"metadata":{"name":"watch-check"}}' > /dev/null
seq 1 3000 | xargs -P 8 -I{} curl -sS -o /dev/null --max-time 10 --cacert "$OUT/ca.crt" --cert "$OUT/client.crt" --key "$OUT/client.key" \
  -X POST -H 'Content-Type: application/json' "$SERVER/api/v1/namespaces/watch-check/events" \
  -d '{"metadata":{"name":"ev-{}"},"involvedObject":{"kind":"Pod","namespace":"watch-check","name":"p-{}"},"reason":"Check","message":"'"$(printf 'x%.0s' $(seq 1 300))"'","type":"Normal"}'
log "3,000 Events seeded in namespace watch-check"
for i in $(seq 1 20); do ( end=$(( $(date +%s) + 360 )); while (( $(date +%s) < end )); do api -o /dev/null -A "curl-monitor/$i" "$SERVER/api/v1/events"; sleep 1; done ) & pids+=($!); done
log "LIST storm started: 20 curl loops"
t=$(until_state KS-API-LIST-BYTES 300 list-storm fire); log "KS-API-LIST-BYTES fired after ${t}s of the storm (firing: $(firing | tr '\n' ' '))"
stop_all; log "LIST storm stopped"
t=$(until_state KS-API-LIST-BYTES 360 list-after clear); log "KS-API-LIST-BYTES cleared ${t}s after the storm stopped"

# 3. Conflict storm by curl: PUTs with a stale resourceVersion answered 409, 8 loops, bounded to 6 minutes.
api -X POST -H 'Content-Type: application/json' "$SERVER/api/v1/namespaces/watch-check/configmaps" -d '{"metadata":{"name":"cm"},"data":{"k":"0"}}' > /dev/null
stale=$(api "$SERVER/api/v1/namespaces/watch-check/configmaps/cm" | jq -r .metadata.resourceVersion)
api -X PUT -H 'Content-Type: application/json' "$SERVER/api/v1/namespaces/watch-check/configmaps/cm" -d '{"metadata":{"name":"cm"},"data":{"k":"1"}}' > /dev/null
for i in $(seq 1 8); do ( end=$(( $(date +%s) + 360 )); while (( $(date +%s) < end )); do api -o /dev/null -A "curl-ipam/$i" -X PUT -H 'Content-Type: application/json' \
  "$SERVER/api/v1/namespaces/watch-check/configmaps/cm" -d '{"metadata":{"name":"cm","resourceVersion":"'"$stale"'"},"data":{"k":"2"}}'; sleep 0.05; done ) & pids+=($!); done
log "conflict storm started: 8 curl loops PUT with resourceVersion $stale"
t=$(until_state KS-API-409 300 conflict-storm fire); log "KS-API-409 fired after ${t}s of the storm (firing: $(firing | tr '\n' ' '))"
stop_all; log "conflict storm stopped"
t=$(until_state KS-API-409 360 conflict-after clear); log "KS-API-409 cleared ${t}s after the storm stopped"
api -X DELETE "$SERVER/api/v1/namespaces/watch-check" > /dev/null
log "RSS kB at the end: $(rss); cycles: $(curl -s "http://$LISTEN/metrics" | grep '^kubeslow_cycles_total' | tr '\n' ' ')"
