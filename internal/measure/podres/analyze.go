package podres

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "pods.resources"

// The metrics of the result. Per container (labels namespace, pod, container, node; container is
// throttle.PodCgroup where cAdvisor shows only the pod's cgroup):
const (
	// MetricThrottledRatio is the share of the container's CFS periods in which it was throttled.
	MetricThrottledRatio = "cfs_throttled_ratio"
	// MetricPeriods is the number of its CFS periods over the window.
	MetricPeriods = "cfs_periods"
	// MetricCPULimit is its CPU limit (CFS quota / period), MetricCPUUsed what it used on average, in cores.
	MetricCPULimit = "cpu_limit_cores"
	MetricCPUUsed  = "cpu_used_cores"
	// MetricSymptom is 1 when something ties the pod to slowness over the window (failed probes, a
	// container Running but not Ready, restarts), with the label symptom saying what; 0 otherwise.
	MetricSymptom = "slow_symptom"
)

// Per container of the API (labels namespace, pod, container, node, pod_uid):
const (
	// MetricOOMKilled is 1 when the container's last (or current) termination was OOMKilled, 0 when it was
	// not; the label finished is the time it ended.
	MetricOOMKilled = "oom_killed"
	// MetricOOMAge is how long before the end of the window that termination was.
	MetricOOMAge = "oom_killed_age_seconds"
	// MetricRestarts is the container's restart count.
	MetricRestarts = "restarts"
	// MetricMemoryLimit is the container's memory limit (0: none); MetricMemoryPeak the most memory its
	// cgroup (or its pod's, label peak_of) ever used, from cAdvisor.
	MetricMemoryLimit = "memory_limit_bytes"
	MetricMemoryPeak  = "memory_peak_bytes"
)

// Per node (label node):
const (
	// MetricMemoryPressure is 1 when the node's MemoryPressure condition is True.
	MetricMemoryPressure = "memory_pressure"
	// MetricSystemOOM counts the kubelet's SystemOOM events for the node in the window.
	MetricSystemOOM = "system_oom_events"
	// MetricEvicted counts the node's evicted pods still listed.
	MetricEvicted = "evicted_pods"
)

// Global: how many containers run under a CPU limit, and how many without.
const (
	MetricLimited   = "containers_cpu_limited"
	MetricUnlimited = "containers_cpu_unlimited"
)

// The cAdvisor families read besides throttle.Families.
const (
	FamMemMaxUsage   = "container_memory_max_usage_bytes"
	FamMemWorkingSet = "container_memory_working_set_bytes"
	FamMemLimit      = "container_spec_memory_limit_bytes"
)

// Families are the cAdvisor families the analysis reads.
var Families = append(append([]string{}, throttle.Families...), FamMemMaxUsage, FamMemWorkingSet, FamMemLimit)

// EventGrace is how long before the window's start an Event or a termination still counts as the window's
// (the run observes a little after it begins, and a kubelet reports a probe's failure after its period).
const EventGrace = 2 * time.Minute

// Input is what the analysis reads: each real node's first and last cAdvisor scrape, the pods at the start
// and at the end, the Unhealthy and SystemOOM Events, and the nodes.
type Input struct {
	First, Last map[string]*prom.Snapshot
	PodsStart   []corev1.Pod
	PodsEnd     []corev1.Pod
	Events      []corev1.Event
	Nodes       []corev1.Node
	From, To    time.Time
}

type cgroup struct {
	ns, pod, container, node              string
	periods, throttled, cpuSeconds, limit float64
	memPeak, memLimit                     float64
	hasCPU                                bool
}

// Analyze is the result (pure).
func Analyze(in Input) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass, Start: in.From, End: in.To}
	window := in.To.Sub(in.From)
	if window <= 0 {
		window = time.Second
	}
	cgs := readCadvisor(in.First, in.Last)
	// kubeslow's own pods (the node agent, benchmark pods) are not the user's: not evaluated.
	own := map[string]bool{}
	for _, ps := range [][]corev1.Pod{in.PodsStart, in.PodsEnd} {
		for _, p := range ps {
			if p.Labels[kube.ManagedByLabel] == kube.ManagedByValue {
				own[p.Namespace+"/"+p.Name] = true
			}
		}
	}
	symptoms := podSymptoms(in)
	limited, unlimited := 0, 0
	var worst *cgroup
	worstRatio := 0.0
	for _, c := range cgs {
		if !c.hasCPU || own[c.ns+"/"+c.pod] {
			continue
		}
		if c.limit <= 0 || c.periods <= 0 {
			unlimited++
			continue
		}
		limited++
		l := map[string]string{"namespace": c.ns, "pod": c.pod, "container": c.container, "node": c.node}
		ratio := c.throttled / c.periods
		sym, text := 0.0, "none"
		if s := symptoms[c.ns+"/"+c.pod]; len(s) > 0 {
			sym, text = 1, strings.Join(s, "; ")
		}
		sl := map[string]string{"namespace": c.ns, "pod": c.pod, "container": c.container, "node": c.node, "symptom": text}
		res.Metrics = append(res.Metrics,
			result.Metric{Name: MetricThrottledRatio, Unit: "ratio", Value: ratio, Labels: l},
			result.Metric{Name: MetricPeriods, Unit: "count", Value: c.periods, Labels: l},
			result.Metric{Name: MetricCPULimit, Unit: "cores", Value: c.limit, Labels: l},
			result.Metric{Name: MetricCPUUsed, Unit: "cores", Value: c.cpuSeconds / window.Seconds(), Labels: l},
			result.Metric{Name: MetricSymptom, Unit: "bool", Value: sym, Labels: sl})
		if worst == nil || ratio > worstRatio {
			worst, worstRatio = c, ratio
		}
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricLimited, Unit: "count", Value: float64(limited)},
		result.Metric{Name: MetricUnlimited, Unit: "count", Value: float64(unlimited)})

	// Memory: every container of the API, with its limit, restarts and last termination.
	peak := memoryPeaks(cgs)
	oomed := 0
	for _, p := range in.PodsEnd {
		if own[p.Namespace+"/"+p.Name] {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			l := map[string]string{"namespace": p.Namespace, "pod": p.Name, "container": cs.Name, "node": p.Spec.NodeName, "pod_uid": string(p.UID)}
			lim := 0.0
			for _, c := range p.Spec.Containers {
				if c.Name == cs.Name {
					if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
						lim = float64(q.Value())
					}
				}
			}
			term := oomTermination(cs)
			if term == nil && lim == 0 {
				continue // neither OOM-killed nor limited: nothing to say of its memory
			}
			killed := 0.0
			if term != nil {
				killed = 1
				oomed++
				l["finished"] = term.FinishedAt.UTC().Format(time.RFC3339)
			}
			res.Metrics = append(res.Metrics,
				result.Metric{Name: MetricOOMKilled, Unit: "count", Value: killed, Labels: l},
				result.Metric{Name: MetricRestarts, Unit: "count", Value: float64(cs.RestartCount), Labels: l},
				result.Metric{Name: MetricMemoryLimit, Unit: "bytes", Value: lim, Labels: l})
			if term != nil && !term.FinishedAt.IsZero() {
				res.Metrics = append(res.Metrics, result.Metric{Name: MetricOOMAge, Unit: "seconds", Value: max(0, in.To.Sub(term.FinishedAt.Time).Seconds()), Labels: l})
			}
			if v, of, ok := peak.of(p.Namespace, p.Name, cs.Name); ok {
				pl := copyLabels(l)
				pl["peak_of"] = of
				res.Metrics = append(res.Metrics, result.Metric{Name: MetricMemoryPeak, Unit: "bytes", Value: v, Labels: pl})
			}
		}
	}

	// Nodes: MemoryPressure, SystemOOM Events in the window, evicted pods.
	sysOOM := map[string]int{}
	for _, e := range in.Events {
		if e.Reason == "SystemOOM" && recent(e, in.From) {
			sysOOM[e.InvolvedObject.Name] += int(max(1, e.Count))
		}
	}
	evicted := map[string]int{}
	for _, p := range in.PodsEnd {
		if p.Status.Reason == "Evicted" {
			evicted[p.Spec.NodeName]++
		}
	}
	for _, n := range in.Nodes {
		pressure := 0.0
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue {
				pressure = 1
			}
		}
		l := map[string]string{"node": n.Name}
		res.Metrics = append(res.Metrics,
			result.Metric{Name: MetricMemoryPressure, Unit: "bool", Value: pressure, Labels: l},
			result.Metric{Name: MetricSystemOOM, Unit: "count", Value: float64(sysOOM[n.Name]), Labels: l},
			result.Metric{Name: MetricEvicted, Unit: "count", Value: float64(evicted[n.Name]), Labels: l})
	}

	var parts []string
	if worst != nil {
		parts = append(parts, fmt.Sprintf("%d containers under a CPU limit (%d without); most throttled %s/%s/%s on %s: %.0f%% of its CFS periods over %s",
			limited, unlimited, worst.ns, worst.pod, worst.container, worst.node, 100*worstRatio, window.Round(time.Second)))
	} else {
		parts = append(parts, fmt.Sprintf("no container ran CFS periods under a CPU limit (%d without a limit): none can be throttled", unlimited))
	}
	parts = append(parts, fmt.Sprintf("%d containers last terminated OOMKilled", oomed))
	if len(own) > 0 {
		parts = append(parts, fmt.Sprintf("kubeslow's own %d pods not evaluated", len(own)))
	}
	res.Reason = strings.Join(parts, "; ")
	return res
}

func copyLabels(l map[string]string) map[string]string {
	o := make(map[string]string, len(l)+1)
	for k, v := range l {
		o[k] = v
	}
	return o
}

// oomTermination is the container's current or last termination when it was OOMKilled.
func oomTermination(cs corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
		return t
	}
	if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
		return t
	}
	return nil
}

// recent says whether the Event was last seen in the window (EventGrace before its start allowed).
func recent(e corev1.Event, from time.Time) bool {
	last := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(last) {
		last = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(last) {
		last = e.EventTime.Time
	}
	if last.IsZero() {
		last = e.FirstTimestamp.Time
	}
	return from.IsZero() || !last.Before(from.Add(-EventGrace))
}

// podSymptoms are, by namespace/pod, what ties the pod to slowness over the window: its probes failed
// (Unhealthy Events), a container is Running but not Ready at the end, or it restarted.
func podSymptoms(in Input) map[string][]string {
	out := map[string][]string{}
	type ev struct {
		n    int32
		last string
	}
	unhealthy := map[string]*ev{}
	for _, e := range in.Events {
		if e.Reason != "Unhealthy" || e.InvolvedObject.Kind != "Pod" || !recent(e, in.From) {
			continue
		}
		k := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		u := unhealthy[k]
		if u == nil {
			u = &ev{}
			unhealthy[k] = u
		}
		u.n += max(1, e.Count)
		u.last = strings.TrimSpace(e.Message)
	}
	restartsAt := map[string]int32{}
	for _, p := range in.PodsStart {
		for _, cs := range p.Status.ContainerStatuses {
			restartsAt[string(p.UID)+"/"+cs.Name] = cs.RestartCount
		}
	}
	for _, p := range in.PodsEnd {
		k := p.Namespace + "/" + p.Name
		if u := unhealthy[k]; u != nil {
			out[k] = append(out[k], fmt.Sprintf("probes failed %d times in the window (newest: %q)", u.n, truncate(u.last, 160)))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !cs.Ready {
				out[k] = append(out[k], fmt.Sprintf("container %s is running but not Ready", cs.Name))
			}
			before, seen := restartsAt[string(p.UID)+"/"+cs.Name]
			if !seen && !p.CreationTimestamp.Time.Before(in.From) {
				seen = true // created in the window: every restart is the window's
			}
			if d := cs.RestartCount - before; seen && d > 0 {
				why := ""
				if t := cs.LastTerminationState.Terminated; t != nil {
					why = fmt.Sprintf(" (last: %s, exit %d)", t.Reason, t.ExitCode)
				}
				out[k] = append(out[k], fmt.Sprintf("container %s restarted %d times in the window%s", cs.Name, d, why))
			}
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// readCadvisor differences each node's counters (all namespaces; sandboxes excluded), keeping a pod's
// containers' cgroups where cAdvisor names them and else the pod's own (throttle.PodCgroup), and reads the
// memory gauges from the last scrape.
func readCadvisor(first, last map[string]*prom.Snapshot) []*cgroup {
	byKey := map[string]*cgroup{}
	var keys []string
	nodes := make([]string, 0, len(last))
	for n := range last {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	app := func(l prom.Labels) bool { return l["namespace"] != "" && l["pod"] != "" && l["container"] != "POD" }
	for _, n := range nodes {
		b := last[n]
		get := func(l prom.Labels) *cgroup {
			k := n + "/" + l["namespace"] + "/" + l["pod"] + "/" + l["container"]
			if c := byKey[k]; c != nil {
				return c
			}
			c := &cgroup{ns: l["namespace"], pod: l["pod"], container: l["container"], node: n}
			byKey[k] = c
			keys = append(keys, k)
			return c
		}
		if a := first[n]; a != nil {
			for _, f := range []struct {
				name string
				add  func(c *cgroup, v float64)
			}{
				{throttle.FamPeriods, func(c *cgroup, v float64) { c.periods += v }},
				{throttle.FamThrottled, func(c *cgroup, v float64) { c.throttled += v }},
				{throttle.FamUsage, func(c *cgroup, v float64) { c.cpuSeconds += v; c.hasCPU = true }},
			} {
				for _, s := range prom.Delta(a, b, f.name) {
					if app(s.Labels) {
						f.add(get(s.Labels), s.Value)
					}
				}
			}
		}
		period := map[string]float64{}
		for _, s := range b.Series(throttle.FamPeriod) {
			if app(s.Labels) {
				period[s.Labels.Key()] = s.Value
			}
		}
		for _, s := range b.Series(throttle.FamQuota) {
			if p := period[s.Labels.Key()]; app(s.Labels) && p > 0 && s.Value > 0 {
				c := get(s.Labels)
				c.limit = max(c.limit, s.Value/p)
			}
		}
		for _, fam := range []string{FamMemMaxUsage, FamMemWorkingSet} {
			for _, s := range b.Series(fam) {
				if app(s.Labels) {
					c := get(s.Labels)
					c.memPeak = max(c.memPeak, s.Value)
				}
			}
		}
		for _, s := range b.Series(FamMemLimit) {
			if app(s.Labels) {
				get(s.Labels).memLimit = s.Value
			}
		}
	}
	sort.Strings(keys)
	// A pod's own cgroup (container "") stands for its containers only when cAdvisor names none of them.
	named := map[string]bool{}
	for _, k := range keys {
		if c := byKey[k]; c.container != "" && c.hasCPU {
			named[c.node+"/"+c.ns+"/"+c.pod] = true
		}
	}
	var out []*cgroup
	for _, k := range keys {
		c := byKey[k]
		if c.container == "" {
			if named[c.node+"/"+c.ns+"/"+c.pod] {
				c.hasCPU = false // keep its memory, not its CPU: the containers are counted
			}
			c.container = throttle.PodCgroup
		}
		out = append(out, c)
	}
	return out
}

type peaks map[string]*cgroup

func memoryPeaks(cgs []*cgroup) peaks {
	p := peaks{}
	for _, c := range cgs {
		if c.memPeak > 0 {
			p[c.ns+"/"+c.pod+"/"+c.container] = c
		}
	}
	return p
}

// of is the container's peak memory, else its pod's (the lab's cgroup v1 kubelets show pods only).
func (p peaks) of(ns, pod, container string) (float64, string, bool) {
	if c := p[ns+"/"+pod+"/"+container]; c != nil {
		return c.memPeak, "container", true
	}
	if c := p[ns+"/"+pod+"/"+throttle.PodCgroup]; c != nil {
		return c.memPeak, "pod", true
	}
	return 0, "", false
}
