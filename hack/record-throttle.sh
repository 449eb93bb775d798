#!/bin/sh
# record-throttle.sh: records the cAdvisor scrapes system.throttling's tests read (internal/measure/throttle/
# testdata/recorded-{limited,generous}/), from the lab's real nodes' kubelets (/metrics/cadvisor through the
# apiserver's node proxy, as the measurement reads them live and as the lab's Prometheus scrapes them). Not run
# in CI. It starts a lab and must hold its lock:
#   flock /run/kubeslow-lab.lock hack/record-throttle.sh
#
# The lab runs cluster DNS as 2 CoreDNS pods spread over 2 real nodes with a CPU limit of LIMIT (20m), and
# `kubeslow bench dns-load` loads them from a client pod on each node (a ramp of STEPS 5-s steps from START
# q/s, per target: the Service and each replica);
# every STEP seconds each node's cAdvisor is saved (only kube-system's CPU and CFS series, with a
# timestamp in the file name). Then the limit is raised to GENEROUS (1 core) and the same load is recorded
# again: the clear case.
set -eu
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-20m} GENEROUS=${GENEROUS:-1} START=${START:-200} STEPS=${STEPS:-3} STEP=${STEP:-10}
OUT=internal/measure/throttle/testdata
CGO_ENABLED=0 go build -o bin/kubeslow ./cmd/kubeslow
trap 'bin/kubeslow lab down >/dev/null 2>&1 || true' EXIT INT TERM
bin/kubeslow lab up --real-nodes 2 --dns-replicas 2 --dns-cpu-limit "$LIMIT"
K="kubectl --kubeconfig $(bin/kubeslow lab kubeconfig)"
nodes=$($K get nodes -l kubeslow.dev/lab-node=real -o jsonpath='{.items[*].metadata.name}')
[ -n "$nodes" ] || nodes=$($K get nodes -o jsonpath='{.items[*].metadata.name}')
FAMS='container_cpu_cfs_periods_total|container_cpu_cfs_throttled_periods_total|container_cpu_cfs_throttled_seconds_total|container_cpu_usage_seconds_total|container_spec_cpu_quota|container_spec_cpu_period'
scrape() { # $1: case directory
  at=$(date +%s)
  for n in $nodes; do
    $K get --raw "/api/v1/nodes/$n/proxy/metrics/cadvisor" |
      grep -E "^# (HELP|TYPE) ($FAMS) |^($FAMS)\{.*namespace=\"kube-system\"" >"$1/$n-$at.txt"
  done
}
record() { # $1: case name
  dir=$OUT/recorded-$1
  rm -rf "$dir" && mkdir -p "$dir"
  $K -n kube-system get pods -l k8s-app=kube-dns -o wide
  scrape "$dir"
  # the same ramp in both cases, never cut short by a slow answer: START, 2xSTART... for STEPS steps of 5 s
  bin/kubeslow bench dns-load --lab --start "$START" --steps "$STEPS" --p99-max 10s --fail-max 1 >"$dir.load.txt" 2>&1 &
  load=$!
  while kill -0 $load 2>/dev/null; do sleep "$STEP"; scrape "$dir"; done
  wait $load || true
  scrape "$dir"
  grep -E "achieved_qps|p99" "$dir.load.txt" || true
  rm -f "$dir.load.txt"
}
record limited
$K -n kube-system set resources deployment/coredns -c coredns --limits=cpu="$GENEROUS"
$K -n kube-system rollout status deployment/coredns --timeout=120s
record generous
