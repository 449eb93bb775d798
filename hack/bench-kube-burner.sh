#!/usr/bin/env bash
# Peers side by side: kube-burner's pod-latency job and `kubeslow bench pods` on the same lab, the same
# workload (pod count, creation QPS and burst, image, nodes), one after the other, and both tools' percentiles
# in one table with their ratios. docs/pod-startup.md explains every difference.
#
# kube-burner is built from the Go module cache (github.com/kube-burner/kube-burner/v2 at KUBE_BURNER_VERSION,
# served by the Go module proxy at that exact version); never in CI.
#
#   hack/bench-kube-burner.sh                 # 50 pods at 10/s on the real node, 2 rounds (kube-burner, kubeslow, twice)
#   COUNT=100 QPS=20 ROUNDS=1 hack/bench-kube-burner.sh
#   SIMULATED=1 hack/bench-kube-burner.sh     # on 10 kwok nodes instead (kube-burner voids its result there: see docs)
#
# Needs root (the lab) and bin/kubeslow (make build). It takes the machine's lab lock for the whole session,
# starts its own lab (one real node; or kwok nodes only) and takes it down on every exit.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-50}
QPS=${QPS:-10}
BURST=${BURST:-10}
ROUNDS=${ROUNDS:-2}
SIMULATED=${SIMULATED:-0}
IMAGE=kubeslow.local/pause:1 # the lab's pause image (podstartup.LabImage), present on the lab's nodes
OUT=${OUT:-$(mktemp -d /tmp/kubeslow-vs-kube-burner.XXXXXX)}
KUBESLOW=${KUBESLOW:-bin/kubeslow}
LOCK=/run/kubeslow-lab.lock

# --- kube-burner, built once from the module proxy into the XDG cache (KB) --------------------------------
# shellcheck source=hack/kube-burner-build.sh
source hack/kube-burner-build.sh

[[ -x $KUBESLOW ]] || { echo "$KUBESLOW missing: run make build" >&2; exit 2; }

# --- kube-burner's job: the same pods kubeslow creates (workload.Spec) ----------------------------------
if [[ $SIMULATED == 1 ]]; then
	LAB_NODES="--real-nodes 0 --nodes 10"
	KS_WHERE=""
	PLACEMENT="  nodeSelector: {type: kwok}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]"
else
	# The real node (containerd, runc, kubelet, the lab's CNI); kwok nodes are tainted, so no selector is needed.
	LAB_NODES="--real-nodes 1 --nodes 0"
	KS_WHERE="--real-nodes"
	PLACEMENT=""
fi
mkdir -p "$OUT"
cat >"$OUT/pod.yml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: pod-latency-{{.Iteration}}
spec:
  terminationGracePeriodSeconds: 1
$PLACEMENT
  containers:
  - name: pause
    image: $IMAGE
    imagePullPolicy: IfNotPresent
YAML
cat >"$OUT/kube-burner.yml" <<YAML
global:
  gc: true
  measurements:
  - name: podLatency
metricsEndpoints:
- indexer:
    type: local
    metricsDirectory: {{ .METRICS }}
jobs:
- name: pod-latency
  jobType: create
  jobIterations: $COUNT
  qps: $QPS
  burst: $BURST
  namespacedIterations: false
  namespace: kube-burner-pod-latency
  podWait: false
  waitWhenFinished: true
  preLoadImages: false
  objects:
  - objectTemplate: pod.yml
    replicas: 1
YAML

session() {
	local kubeconfig
	trap '"$KUBESLOW" lab down >"$OUT/lab-down.log" 2>&1 || echo "lab down failed: $OUT/lab-down.log" >&2' EXIT
	# shellcheck disable=SC2086 # word splitting of the node flags is wanted
	"$KUBESLOW" lab up $LAB_NODES >"$OUT/lab-up.log" 2>&1
	kubeconfig=$(sed -n 's/.*kubeconfig \([^,]*\),.*/\1/p' "$OUT/lab-up.log" | tail -1)
	[[ -n $kubeconfig ]] || { echo "no kubeconfig in $OUT/lab-up.log" >&2; return 1; }
	for r in $(seq 1 "$ROUNDS"); do
		echo "round $r: kube-burner ($COUNT pods at $QPS/s)" >&2
		(cd "$OUT" && KUBECONFIG=$kubeconfig METRICS="$OUT/kb-$r" "$KB" init -c kube-burner.yml --uuid "kubeslow-vs-kb-$r" \
			--log-level info >"$OUT/kb-$r.log" 2>&1) ||
			echo "kube-burner exited $? ($(grep -o 'something is wrong[^"]*' "$OUT/kb-$r.log" | tail -1)): $OUT/kb-$r.log" >&2
		echo "round $r: kubeslow bench pods ($COUNT pods at $QPS/s)" >&2
		# shellcheck disable=SC2086
		"$KUBESLOW" bench pods --lab $KS_WHERE --count "$COUNT" --create-qps "$QPS" --create-burst "$BURST" -o json >"$OUT/kubeslow-$r.json" 2>"$OUT/kubeslow-$r.log" ||
			[[ $? == 1 ]] || { echo "kubeslow failed: $OUT/kubeslow-$r.log" >&2; return 1; }
		# kubeslow deletes its namespace without waiting; the next round starts once its pods are gone from
		# the node (kube-burner's gc waits for its own).
		kubectl --kubeconfig "$kubeconfig" wait --for=delete namespace -l kubeslow.dev/run --timeout=5m >/dev/null 2>&1 || true
	done
}
export -f session
export KUBESLOW KB OUT COUNT QPS BURST ROUNDS LAB_NODES KS_WHERE
flock "$LOCK" bash -c session

# --- the table ----------------------------------------------------------------------------------------
python3 - "$OUT" "$ROUNDS" "$COUNT" "$QPS" <<'PY'
import glob, json, sys
out, rounds, count, qps = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
print(f"{count} pods at {qps}/s; kube-burner: integer ms from creationTimestamp to each condition's lastTransitionTime")
print(f"{'round':<6}{'what':<50}{'kube-burner':>12}{'kubeslow':>12}{'ratio':>8}")
for r in range(1, rounds + 1):
    kb, n = {}, 0
    for f in glob.glob(f"{out}/kb-{r}/podLatencyQuantilesMeasurement-pod-latency.json"):
        for q in json.load(open(f)):
            kb[q["quantileName"]] = q
    for f in glob.glob(f"{out}/kb-{r}/podLatencyMeasurement-pod-latency.json"):
        n += len(json.load(open(f)))
    rep = json.load(open(f"{out}/kubeslow-{r}.json"))
    res = next(x for x in rep["results"] if x["name"] == "pods.startup")
    def ks(name, **labels):
        for m in res.get("metrics", []):
            if m["name"] == name and all(m.get("labels", {}).get(k) == v for k, v in labels.items()):
                return m["value"]
        return None
    rows = [("pods measured (count)", n * 1000, ks("pods_running"))]
    for kq, ksq in (("P50", "p50"), ("P99", "p99"), ("max", "max")):
        rows.append((f"Ready {kq} vs SLI {ksq}", kb.get("Ready", {}).get(kq), ks(f"startup_sli_{ksq}")))
    rows.append(("Ready P95 vs SLI p90", kb.get("Ready", {}).get("P95"), ks("startup_sli_p90")))
    for kq, ksq in (("P50", "p50"), ("P99", "p99"), ("max", "max")):
        rows.append((f"Ready {kq} vs clusterloader2 pod_startup {ksq}", kb.get("Ready", {}).get(kq), ks(f"cl2_{ksq}", phase="pod_startup")))
    for kq, ksq in (("P50", "p50"), ("P99", "p99")):
        rows.append((f"PodScheduled {kq} vs phase schedule {ksq}", kb.get("PodScheduled", {}).get(kq), ks(f"phase_{ksq}", phase="schedule")))
    for kq, ksq in (("P50", "p50"), ("P99", "p99")):
        rows.append((f"ContainersReady {kq} vs SLI {ksq}", kb.get("ContainersReady", {}).get(kq), ks(f"startup_sli_{ksq}")))
    for kq in ("P50", "P99"):
        rows.append((f"PodReadyToStartContainers {kq} (kubeslow: -)", kb.get("PodReadyToStartContainers", {}).get(kq), None))
    for what, kbms, kss in rows:
        kbs = None if kbms is None else kbms / 1000
        ratio = f"{kss / kbs:.2f}" if kbs and kss is not None else "-"
        unit = "" if what.startswith("pods measured") else " s"
        fmt = lambda v: "-" if v is None else (f"{v:.0f}" if not unit else f"{v:.3f}{unit}")
        print(f"{r:<6}{what:<50}{fmt(kbs):>12}{fmt(kss):>12}{ratio:>8}")
print(f"raw output: {out}")
PY
