#!/usr/bin/env bash
# Peers side by side on the same pods (issue 40): kube-burner creates COUNT pods of known phases on the lab's
# real node and measures them with its podLatency; `kubeslow explain pod` then reads each of those pods from the
# cluster (it created none of them) and the two tools' figures are compared pod by pod, and against the truth
# the pods were built with:
#   - an init container that waits INIT seconds (`kubeslow agent burn --for INIT`, no CPU spent);
#   - a readiness probe (HTTP, every second) whose first try is DELAY seconds after the app container starts.
# kube-burner's latencies are whole milliseconds from creationTimestamp to each condition's lastTransitionTime
# (the API's whole seconds); explain's steps are from the same conditions and, where they are finer, the
# kubelet's Events and the containers' start times.
#
#   hack/bench-explain.sh                        # 20 pods at 5/s, init 2 s, probe delay 3 s, 2 rounds
#   COUNT=40 QPS=10 INIT=3 DELAY=5 ROUNDS=1 hack/bench-explain.sh
#   REPORT_ONLY=1 OUT=/tmp/kubeslow-explain-vs-kube-burner.XXXX hack/bench-explain.sh   # the table of a past run
#
# Needs root (the lab) and bin/kubeslow (make build); builds kube-burner once (hack/kube-burner-build.sh). It
# takes the machine's lab lock for the whole session, starts its own lab (one real node, no kwok node) and takes
# it down on every exit. Never in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-20}
QPS=${QPS:-5}
INIT=${INIT:-2}
DELAY=${DELAY:-3}
ROUNDS=${ROUNDS:-2}
IMAGE=kubeslow.local/kubeslow:lab # the lab's agent image (lab.AgentImage), on the lab's real nodes
OUT=${OUT:-$(mktemp -d /tmp/kubeslow-explain-vs-kube-burner.XXXXXX)}
KUBESLOW=${KUBESLOW:-bin/kubeslow}
LOCK=/run/kubeslow-lab.lock
mkdir -p "$OUT"

REPORT_ONLY=${REPORT_ONLY:-0}
if [[ $REPORT_ONLY != 1 ]]; then
# shellcheck source=hack/kube-burner-build.sh
source hack/kube-burner-build.sh
[[ -x $KUBESLOW ]] || { echo "$KUBESLOW missing: run make build" >&2; exit 2; }

cat >"$OUT/pod.yml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: explained-{{.Iteration}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: warm-up
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    command: ["/kubeslow", "agent", "burn", "--for", "${INIT}s"]
  containers:
  - name: app
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    command: ["/kubeslow", "agent", "burn", "--listen", ":8080"]
    readinessProbe:
      httpGet: {path: /, port: 8080}
      initialDelaySeconds: $DELAY
      periodSeconds: 1
YAML
for r in $(seq 1 "$ROUNDS"); do
	cat >"$OUT/kube-burner-$r.yml" <<YAML
global:
  gc: false
  measurements:
  - name: podLatency
metricsEndpoints:
- indexer:
    type: local
    metricsDirectory: {{ .METRICS }}
jobs:
- name: explained
  jobType: create
  jobIterations: $COUNT
  qps: $QPS
  burst: 1
  namespacedIterations: false
  namespace: explained-r$r
  podWait: false
  waitWhenFinished: true
  preLoadImages: false
  objects:
  - objectTemplate: pod.yml
    replicas: 1
YAML
done

session() {
	local kubeconfig
	trap '"$KUBESLOW" lab down >"$OUT/lab-down.log" 2>&1 || echo "lab down failed: $OUT/lab-down.log" >&2' EXIT
	"$KUBESLOW" lab up --real-nodes 1 --nodes 0 >"$OUT/lab-up.log" 2>&1
	kubeconfig=$("$KUBESLOW" lab kubeconfig)
	for r in $(seq 1 "$ROUNDS"); do
		echo "round $r: kube-burner creating $COUNT pods at $QPS/s in explained-r$r" >&2
		(cd "$OUT" && KUBECONFIG=$kubeconfig METRICS="$OUT/kb-$r" "$KB" init -c "kube-burner-$r.yml" --uuid "explain-vs-kb-$r" \
			--log-level info >"$OUT/kb-$r.log" 2>&1) ||
			echo "kube-burner exited $? ($(grep -o 'something is wrong[^"]*' "$OUT/kb-$r.log" | tail -1)): $OUT/kb-$r.log" >&2
		echo "round $r: kubeslow explain pod, for each of them" >&2
		mkdir -p "$OUT/explain-$r"
		for i in $(seq 0 $((COUNT - 1))); do
			"$KUBESLOW" explain pod --kubeconfig "$kubeconfig" "explained-r$r/explained-$i" -o json >"$OUT/explain-$r/explained-$i.json" \
				2>>"$OUT/explain-$r.log" || echo "explain explained-r$r/explained-$i exited $?" >&2
		done
		kubectl --kubeconfig "$kubeconfig" delete namespace "explained-r$r" --wait=true --timeout=5m >/dev/null 2>&1 || true
	done
}
export -f session
export KUBESLOW KB OUT COUNT QPS ROUNDS
flock "$LOCK" bash -c session
fi

# --- the table ------------------------------------------------------------------------------------------
python3 - "$OUT" "$ROUNDS" "$COUNT" "$QPS" "$INIT" "$DELAY" <<'PY'
import glob, json, sys
from datetime import datetime
out, rounds, count, qps, init, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6])

def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

def quant(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(round(q * len(xs) + 0.5)) - 1))  # nearest rank
    return xs[k]

# kube-burner's transition -> explain's end of step (seconds from creation). Explain's init step ends at the init
# container's finishedAt; kube-burner's Initialized is the condition the kubelet sets after it (its next status
# update), so that row compares two different instants.
ROWS = [("schedulingLatency", "scheduling", "PodScheduled"), ("initializedLatency", "init:warm-up", "Initialized*"),
        ("containersReadyLatency", "readiness", "ContainersReady"), ("podReadyLatency", None, "Ready")]
print(f"{count} pods at {qps}/s on the lab's real node (kube-burner creates them; kubeslow explain reads each one);"
      f" truth: init {init:g} s, probe's first try {delay:g} s after the app starts")
print(f"{'round':<6}{'from creation to':<18}{'kube-burner p50/p99/max':>26}{'explain p50/p99/max':>26}{'|Δ| per pod max':>17}")
for r in range(1, rounds + 1):
    kb = {}
    for f in glob.glob(f"{out}/kb-{r}/podLatencyMeasurement-explained.json"):
        for p in json.load(open(f)):
            kb[p["podName"]] = p
    ex, steps, runs = {}, {"init:warm-up": [], "readiness": []}, []
    for f in glob.glob(f"{out}/explain-{r}/*.json"):
        try:
            e = json.load(open(f))
        except json.JSONDecodeError:
            continue
        for p in e.get("pods", []):
            created = ts(p["created"])
            ends = {s["name"]: ts(s["end"]) - created for s in p["steps"] if s.get("end")}
            if p.get("ready"):
                ends[None] = p["seconds"]
            ex[p["name"]] = ends
            for s in p["steps"]:
                if s["name"] in steps and s.get("status") == "done":
                    steps[s["name"]].append((s["seconds"], s.get("precision", "")))
                if s["name"] == "init:warm-up" and "run_seconds" in s.get("values", {}):
                    runs.append(s["values"]["run_seconds"])
    both = sorted(set(kb) & set(ex))
    print(f"{r:<6}pods: kube-burner {len(kb)}, explain {len(ex)}, both {len(both)}")
    for kbk, exk, cond in ROWS:
        a = [kb[p][kbk] / 1000 for p in both if kb[p].get(kbk, 0) > 0]
        b = [ex[p][exk] for p in both if exk in ex[p]]
        d = [abs(kb[p][kbk] / 1000 - ex[p][exk]) for p in both if kb[p].get(kbk, 0) > 0 and exk in ex[p]]
        f3 = lambda xs: "-" if not xs else f"{quant(xs, .5):.3f}/{quant(xs, .99):.3f}/{max(xs):.3f}"
        print(f"{r:<6}{cond:<18}{f3(a):>26}{f3(b):>26}{(f'{max(d):.3f}' if d else '-'):>17}")
    for name, truth, what in (("init:warm-up", init, "the init container's own run; the step also holds its creation and start"),
                              ("readiness", delay, "the probe's initial delay")):
        xs = [s for s, _ in steps[name]]
        prec = sorted({p for _, p in steps[name]})
        if xs:
            err = max(abs(x - truth) for x in xs)
            print(f"{r:<6}explain step {name}: p50 {quant(xs, .5):.3f} s, max {max(xs):.3f} s, max |step - {truth:g} s| {err:.3f} s"
                  f" ({what}; {len(xs)} pods; precision {', '.join(prec)})")
    if runs:
        print(f"{r:<6}explain init:warm-up run_seconds (its own startedAt -> finishedAt): p50 {quant(runs, .5):.3f} s, max |run - {init:g} s| "
              f"{max(abs(x - init) for x in runs):.3f} s ({len(runs)} pods; whole seconds)")
print("* explain: the init container's finishedAt; kube-burner: the Initialized condition, set at the kubelet's next status update")
print(f"files: {out}")
PY
