package podres

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ThrottledMax is the share of CFS periods above which a container is throttled: kubernetes-mixin's
// CPUThrottlingHigh alert and Grafana Sift's CPU throttling check (both 25%).
const ThrottledMax = throttle.ThrottledMax

var (
	throttledRatio = rule.Metric{Result: Name, Name: MetricThrottledRatio}
	cpuLimit       = rule.Metric{Result: Name, Name: MetricCPULimit}
	cpuUsed        = rule.Metric{Result: Name, Name: MetricCPUUsed}
	periods        = rule.Metric{Result: Name, Name: MetricPeriods}
	symptom        = rule.Metric{Result: Name, Name: MetricSymptom}
	oomKilled      = rule.Metric{Result: Name, Name: MetricOOMKilled}
	oomAge         = rule.Metric{Result: Name, Name: MetricOOMAge}
	memLimit       = rule.Metric{Result: Name, Name: MetricMemoryLimit}
	memPeak        = rule.Metric{Result: Name, Name: MetricMemoryPeak}
	restarts       = rule.Metric{Result: Name, Name: MetricRestarts}
	memPressure    = rule.Metric{Result: Name, Name: MetricMemoryPressure}
	systemOOM      = rule.Metric{Result: Name, Name: MetricSystemOOM}
	sweepOOM       = rule.Metric{Result: nodeagent.Name, Name: nodeagent.MetricOOMKills}
	sweepOOMAge    = rule.Metric{Result: nodeagent.Name, Name: nodeagent.MetricOOMKillNewestAge}
)

// NoSymptom is what an item of KS-POD-THROTTLED says when nothing ties the throttling to slowness.
const NoSymptom = "no symptom ties it to slowness — its probes did not fail, it stayed Ready and did not restart in the window — so this " +
	"is information, not a fault: a container that idles between short bursts is throttled in most of its periods and still answers in time"

// podKey names a container's item.
func podKey(v map[string]string) string {
	return result.FormatLabels(map[string]string{"namespace": v["namespace"], "pod": v["pod"], "container": v["container"], "node": v["node"]})
}

// throttledPods keys each crossing by namespace, pod, container and node, and lowers it to info when nothing
// ties it to slowness. kube-system's containers are KS-SYSTEM-THROTTLED's when system.throttling measured
// them (one cause, one finding).
func throttledPods(r *result.Report, ru rule.Rule) []rule.Hit {
	res := r.Result(Name)
	sys := r.Result(throttle.Name)
	var out []rule.Hit
	for _, h := range ru.Crossing(r) {
		if h.Vars["namespace"] == throttle.Namespace && sys != nil && sys.Status.Measured() {
			continue
		}
		l := map[string]string{"namespace": h.Vars["namespace"], "pod": h.Vars["pod"], "container": h.Vars["container"], "node": h.Vars["node"]}
		h.Key = podKey(h.Vars)
		if h.Vars["container"] == throttle.PodCgroup {
			h.Vars["container"] = "its pod's cgroup: cAdvisor shows no container's"
		}
		h.Vars["share"] = fmt.Sprintf("%.0f%%", 100*h.Value)
		h.Vars["periods"], h.Vars[MetricCPUUsed] = "?", "?"
		if m := res.Metric(MetricPeriods, l); m != nil {
			h.Vars["periods"] = fmt.Sprintf("%.0f", m.Value)
		}
		if m := res.Metric(MetricCPUUsed, l); m != nil {
			h.Vars[MetricCPUUsed] = result.FormatQuantity(m.Value, "cores")
			h.Evidence = append(h.Evidence, cpuUsed.Evidence(*m))
		}
		h.Vars["symptom"] = NoSymptom
		h.Severity = result.SeverityInfo
		if m := res.Metric(MetricSymptom, l); m != nil {
			h.Evidence = append(h.Evidence, symptom.Evidence(*m))
			if m.Value > 0 {
				h.Vars["symptom"] = "and it shows slowness: " + m.Labels["symptom"]
				h.Severity = ""
			}
		}
		out = append(out, h)
	}
	return out
}

// horizon is how long before pods.resources' end the run began, plus EventGrace.
func horizon(r *result.Report) (time.Duration, bool) { return nodeagent.Horizon(r, Name, EventGrace) }

func ago(seconds float64) time.Duration {
	return time.Duration(seconds * float64(time.Second)).Round(time.Second)
}

func bytesText(v float64) string {
	if v <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}

// kernelKills are the node sweep's kills by pod UID and scope.
func kernelKills(r *result.Report, scope string) map[string][]result.Metric {
	out := map[string][]result.Metric{}
	for _, m := range sweepOOM.Samples(r) {
		if m.Labels["scope"] == scope {
			out[m.Labels["pod_uid"]] = append(out[m.Labels["pod_uid"]], m)
		}
	}
	return out
}

// oomContainers fires for each container the API says was OOMKilled, and for each pod whose own memory
// cgroup the kernel log shows a kill in (the node sweep, by pod UID) where the API does not: its limit, peak,
// restarts and the newest kill's time. A kill older than the run is lowered to info and says how old.
func oomContainers(r *result.Report, ru rule.Rule) []rule.Hit {
	res := r.Result(Name)
	hz, known := horizon(r)
	kh, kknown := nodeagent.RunHorizon(r)
	kills := kernelKills(r, agent.OOMScopeContainer)
	nodeKills := kernelKills(r, agent.OOMScopeNode)
	seen := map[string]bool{}
	var out []rule.Hit
	describe := func(h *rule.Hit, l map[string]string, apiAge float64, hasAPIAge bool) {
		h.Vars["limit"], h.Vars["peak"], h.Vars["restarts"] = "none", "not read", "?"
		if m := res.Metric(MetricMemoryLimit, l); m != nil {
			h.Vars["limit"] = bytesText(m.Value)
			h.Evidence = append(h.Evidence, memLimit.Evidence(*m))
		}
		if m := res.Metric(MetricMemoryPeak, l); m != nil {
			h.Vars["peak"] = bytesText(m.Value)
			if m.Labels["peak_of"] == "pod" {
				h.Vars["peak"] += " (its pod's cgroup)"
			}
			h.Evidence = append(h.Evidence, memPeak.Evidence(*m))
		}
		if m := res.Metric(MetricRestarts, l); m != nil {
			h.Vars["restarts"] = fmt.Sprintf("%.0f", m.Value)
		}
		h.Vars["kernel"], h.Vars["age"] = "", ""
		old := hasAPIAge && known && ago(apiAge) > hz
		if hasAPIAge {
			h.Vars["age"] = fmt.Sprintf(", last killed %s before the end of the window (%s)", ago(apiAge), h.Vars["finished"])
		}
		if ks := kills[l["pod_uid"]]; len(ks) > 0 {
			n := 0.0
			for _, k := range ks {
				n += k.Value
				h.Evidence = append(h.Evidence, sweepOOM.Evidence(k))
			}
			h.Vars["kernel"] = fmt.Sprintf("; the kernel of %s logged %.0f kills in its memory cgroup (task %s)", ks[0].Labels["node"], n, ks[0].Labels["task"])
			if a := sweepOOMAge.In(r, ks[0].Labels); a != nil {
				h.Vars["kernel"] += fmt.Sprintf(", the newest %s before the sweep read it", ago(a.Value))
				if !hasAPIAge {
					old = kknown && ago(a.Value) > kh
				}
			}
		}
		if old {
			h.Severity = result.SeverityInfo
			h.Vars["age"] += " — before this run began: past evidence, not a current fault"
		}
	}
	for _, h := range ru.Crossing(r) {
		l := map[string]string{"namespace": h.Vars["namespace"], "pod": h.Vars["pod"], "container": h.Vars["container"], "node": h.Vars["node"], "pod_uid": h.Vars["pod_uid"]}
		h.Key = podKey(h.Vars)
		seen[h.Vars["pod_uid"]] = true
		if len(kills[h.Vars["pod_uid"]]) == 0 && len(nodeKills[h.Vars["pod_uid"]]) > 0 {
			continue // the kernel killed it for the node's memory: KS-NODE-OOM's (one cause, one finding)
		}
		a := res.Metric(MetricOOMAge, l)
		if a != nil {
			h.Evidence = append(h.Evidence, oomAge.Evidence(*a))
		}
		describe(&h, l, valueOf(a), a != nil)
		h.Vars["how"] = "its last termination was OOMKilled (exit 137)"
		if m := res.Metric(MetricMemoryLimit, l); m != nil && m.Value == 0 {
			h.Vars["how"] += " with no memory limit of its own — its pod's or the node's memory ran out (the node sweep's kernel log tells which)"
		}
		out = append(out, h)
	}
	// The kernel's kills in a pod's own cgroup that the API does not show (a child process killed, the
	// container still running), matched to the pod by UID.
	uids := make([]string, 0, len(kills))
	for u := range kills {
		uids = append(uids, u)
	}
	sort.Strings(uids)
	for _, u := range uids {
		if u == "" || seen[u] || res == nil {
			continue
		}
		var pod *result.Metric
		for i := range res.Metrics {
			if m := &res.Metrics[i]; m.Name == MetricMemoryLimit && m.Labels["pod_uid"] == u {
				pod = m
				break
			}
		}
		if pod == nil {
			continue // a pod gone, or not readable: the node's kill has no pod to name
		}
		n := 0.0
		for _, k := range kills[u] {
			n += k.Value
		}
		h := rule.Hit{Value: n, Vars: map[string]string{"value": fmt.Sprintf("%.0f", n), "finished": ""}}
		for k, v := range pod.Labels {
			h.Vars[k] = v
		}
		h.Key = podKey(h.Vars)
		describe(&h, pod.Labels, 0, false)
		h.Vars["how"] = "the kernel killed a process in its memory cgroup (the container did not restart for it)"
		out = append(out, h)
	}
	return out
}

func valueOf(m *result.Metric) float64 {
	if m == nil {
		return 0
	}
	return m.Value
}

// nodeOOM fires once per node whose kernel killed for the node's memory (or an ancestor cgroup's such as
// kubepods, limited to the node's allocatable memory) rather than a container's own limit, naming the pods
// it killed in (pods.resources' pods: a kill in the cgroup of a pod the cluster does not have is left out) and
// the node's MemoryPressure and SystemOOM Events. Kills older than the run are an info item of their own.
func nodeOOM(r *result.Report, ru rule.Rule) []rule.Hit {
	res := r.Result(Name)
	kh, known := nodeagent.RunHorizon(r)
	// One item per node for the kills of this run, and one for those logged before it (lowered to info):
	// the kernel's log keeps kills of pods long gone.
	type group struct {
		hit     *rule.Hit
		past    bool
		newest  float64
		victims []string
	}
	groups := map[string]*group{}
	var order []string
	for _, h := range ru.Crossing(r) {
		if h.Vars["scope"] != agent.OOMScopeNode {
			continue
		}
		n := h.Vars["node"]
		age := sweepOOMAge.In(r, map[string]string{"node": n, "pod_uid": h.Vars["pod_uid"], "scope": agent.OOMScopeNode})
		past := age != nil && known && ago(age.Value) > kh
		if h.Vars["pod_uid"] != "" && podOfUID(res, h.Vars["pod_uid"]) == "" {
			// A pod this cluster does not have: the kernel's log outlives pods (and, on the lab, whose nodes
			// share the machine's kernel, earlier labs' pods).
			continue
		}
		k := fmt.Sprintf("%s/%v", n, past)
		g := groups[k]
		if g == nil {
			key := map[string]string{"node": n}
			if past {
				key["logged"] = "before-the-run"
			}
			g = &group{hit: &rule.Hit{Key: result.FormatLabels(key), Vars: map[string]string{"node": n, "memcg": h.Vars["oom_memcg"]}}, past: past, newest: -1}
			groups[k] = g
			order = append(order, k)
		}
		g.hit.Value += h.Value
		g.hit.Evidence = append(g.hit.Evidence, h.Evidence...)
		victim := h.Vars["task"] + " (no pod)"
		if p := podOfUID(res, h.Vars["pod_uid"]); p != "" {
			victim = p + " (" + h.Vars["task"] + ")"
		}
		g.victims = append(g.victims, victim)
		if age != nil {
			g.hit.Evidence = append(g.hit.Evidence, sweepOOMAge.Evidence(*age))
			if g.newest < 0 || age.Value < g.newest {
				g.newest = age.Value
			}
		}
	}
	var out []rule.Hit
	for _, k := range order {
		g := groups[k]
		h, n := g.hit, g.hit.Vars["node"]
		h.Vars["value"] = fmt.Sprintf("%.0f", h.Value)
		h.Vars["victims"] = strings.Join(g.victims, ", ")
		h.Vars["age"], h.Vars["pressure"] = "", ""
		if g.newest >= 0 {
			h.Vars["age"] = fmt.Sprintf(", the newest %s before the sweep read it", ago(g.newest))
		}
		if g.past {
			h.Severity = result.SeverityInfo
			h.Vars["age"] += " — before this run began: past evidence, not a current fault"
		}
		var also []string
		if m := memPressure.In(r, map[string]string{"node": n}); m != nil && m.Value > 0 {
			also = append(also, "the node reports MemoryPressure")
			h.Evidence = append(h.Evidence, memPressure.Evidence(*m))
		}
		if m := systemOOM.In(r, map[string]string{"node": n}); m != nil && m.Value > 0 {
			also = append(also, fmt.Sprintf("the kubelet raised %.0f SystemOOM Events", m.Value))
			h.Evidence = append(h.Evidence, systemOOM.Evidence(*m))
		}
		if len(also) > 0 && !g.past {
			h.Vars["pressure"] = "; " + strings.Join(also, ", ")
		}
		out = append(out, *h)
	}
	return out
}

// podOfUID is namespace/pod of a pod UID, from pods.resources' per-container metrics ("" when unknown).
func podOfUID(res *result.Result, uid string) string {
	if res == nil || uid == "" {
		return ""
	}
	for _, m := range res.Metrics {
		if m.Labels["pod_uid"] == uid {
			return m.Labels["namespace"] + "/" + m.Labels["pod"]
		}
	}
	return ""
}

// Rules are the rules over application pods' throttling and OOM kills.
func Rules() []rule.Rule {
	return []rule.Rule{
		{
			ID: "KS-POD-THROTTLED", Title: "An application container is CPU-throttled under its limit", Severity: result.SeverityWarning,
			When:  rule.Condition{Metric: throttledRatio, Op: ">", Value: ThrottledMax, Unit: "ratio"},
			Also:  []rule.Condition{{Metric: cpuLimit, Op: ">", Value: 0, Unit: "cores"}},
			Reads: []rule.Metric{cpuUsed, periods, symptom},
			Source: "kubernetes-mixin's CPUThrottlingHigh alert and Grafana Sift's CPU throttling check: container_cpu_cfs_throttled_periods_total / " +
				"container_cpu_cfs_periods_total above 25% (cAdvisor's CFS counters over the window). The threshold is known for false " +
				"positives (kubernetes-mixin#108: a container that idles and bursts is throttled in most of its few periods without being " +
				"slow; OpenShift disabled the alert), so kubeslow warns only when a symptom ties the throttling to slowness — the pod's " +
				"probes failed (Unhealthy Events), a container is Running but not Ready, or it restarted in the window — and reports " +
				"throttling without a symptom as info, saying so",
			Summary: "{{.namespace}}/{{.pod}} ({{.container}}) on {{.node}} was throttled in {{.share}} of its {{.periods}} CFS periods, " +
				"using {{.cpu_used_cores}} on average under a CPU limit of {{.cpu_limit_cores}}; {{.symptom}}",
			Remediation: "Raise the container's CPU limit (or remove it and keep a CPU request, which weights it under contention without " +
				"capping its bursts); for a multi-threaded runtime cap its threads to the limit (GOMAXPROCS, -XX:ActiveProcessorCount, " +
				"UV_THREADPOOL_SIZE) so it does not spend its quota early in each 100 ms period; give probes a timeout above a throttled " +
				"response's time.",
			Match: throttledPods,
		},
		{
			ID: "KS-POD-OOMKILLED", Title: "A container is OOM-killed at its own memory limit", Severity: result.SeverityError,
			When:  rule.Condition{Metric: oomKilled, Op: ">=", Value: 1, Unit: "count"},
			Reads: []rule.Metric{oomAge, memLimit, memPeak, restarts},
			Source: "the kubelet's container status: lastState.terminated.reason OOMKilled (exit 137: SIGKILL from the kernel's OOM killer " +
				"in the container's memory cgroup); the kernel's \"oom-kill:\" line whose oom_memcg is the pod's own cgroup, tied to the " +
				"pod by the UID in task_memcg (node sweep). Any OOM kill is a fault: the process lost its work and restarts",
			Summary: "{{.namespace}}/{{.pod}} ({{.container}}) on {{.node}}: {{.how}}, restarts {{.restarts}}, memory limit {{.limit}}, " +
				"peak {{.peak}}{{.age}}{{.kernel}}",
			Remediation: "Raise the container's memory limit above its peak (and set its request equal to it, so the scheduler reserves what " +
				"it uses and the node is not overcommitted), or find the leak or the unbounded cache that grows past it (a heap " +
				"profile; for the JVM and Node.js set the heap below the limit: -XX:MaxRAMPercentage, --max-old-space-size).",
			Match: oomContainers,
		},
		{
			ID: "KS-NODE-OOM", Title: "The kernel OOM-killed pods' processes for the node's memory, not a container's limit", Severity: result.SeverityError,
			When:  rule.Condition{Metric: sweepOOM, Op: ">", Value: 0, Unit: "count"},
			Needs: []string{Name},
			Source: "the kernel's \"Out of memory: Killed process\" (constraint CONSTRAINT_NONE, oom_memcg=/) or a kill whose oom_memcg is " +
				"an ancestor of the pod's cgroup (kubepods, limited to the node's allocatable memory), from the node sweep's kernel log; " +
				"with the node's MemoryPressure condition and the kubelet's SystemOOM Events",
			Summary: "{{.node}}'s kernel killed {{.value}} processes because the node (cgroup {{.memcg}}) ran out of memory, not a " +
				"container's own limit: {{.victims}}{{.age}}{{.pressure}}",
			Remediation: "Size the node for its pods: set memory requests equal to limits so the scheduler does not overcommit it, reserve " +
				"memory for the system (kubeReserved/systemReserved) and raise the kubelet's eviction thresholds " +
				"(evictionHard memory.available) so it evicts before the kernel kills, or move pods to larger nodes.",
			Match: nodeOOM,
		},
	}
}
