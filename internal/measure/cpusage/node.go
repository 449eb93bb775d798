package cpusage

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The node tier's figures of each control-plane component (labels component, node, source=node-agent), read
// by the node agent from /proc and the cgroup tree of its node at the window's start and end.
const (
	// MetricComponentCPUCores is the cores the component used over the window (its utime+stime).
	MetricComponentCPUCores = "component_cpu_cores"
	// MetricComponentCoresAvailable is the cores it may use (label basis: its cgroup's CPU limit, its cpuset,
	// or its node's cores).
	MetricComponentCoresAvailable = "component_cores_available"
	// MetricComponentSaturation is MetricComponentCPUCores over MetricComponentCoresAvailable.
	MetricComponentSaturation = "component_cpu_saturation"
	// MetricComponentSchedWait is the seconds per second its threads waited on a run queue for a CPU
	// (/proc/<pid>/task/*/schedstat: Coroot's "CPU delay").
	MetricComponentSchedWait = "component_sched_wait_rate"
	// MetricComponentWaitShare is the share of its runnable time (running + waiting for a CPU) it spent
	// waiting: 0.9 is a component that got a tenth of the CPU time it was ready to use.
	MetricComponentWaitShare = "component_sched_wait_share"
	// MetricComponentThrottled is the share of its cgroup limit's CFS periods that ran out of quota (at the
	// window's end sample; only where a limit exists).
	MetricComponentThrottled = "component_throttled_ratio"
)

// The bases of a component's saturation (label "basis" of MetricCPUSaturation when the node tier gave it).
const (
	BasisComponentLimit = "the component's CPU against its cores (node agent)"
	BasisRunQueueWait   = "the component's run-queue wait (node agent)"
)

// componentNames are the node tier's names as the report says them.
var componentNames = map[string]string{"kube-apiserver": APIServer, "etcd": Etcd, "kube-scheduler": "kube-scheduler",
	"kube-controller-manager": "kube-controller-manager"}

// ComponentFigure is one component's window from the node tier.
type ComponentFigure struct {
	Name, Node string
	Cores      float64
	Available  float64
	Basis      string
	Saturation float64
	WaitRate   float64
	WaitShare  float64
	// OwnLimit: a CPU limit (a quota on its cgroup or an ancestor) bounds it, rather than its node.
	OwnLimit  bool
	Throttled float64
	// LimitPath is the cgroup holding the limit; SharedWith the other components under the same limit on the
	// node, whose CPU counts against it too (the saturation is then theirs together).
	LimitPath  string
	SharedWith []string
}

// Components are the node tier's figures of the window between two reads of the control plane (pure): each
// component present in both (same node, name and process), its CPU and run-queue wait over secs.
func Components(first, last []cpnode.Component, secs float64) []ComponentFigure {
	type key struct {
		node, name string
		pid        int
	}
	start := map[key]cpnode.Component{}
	for _, c := range first {
		start[key{c.Node, c.Name, c.PID}] = c
	}
	var out []ComponentFigure
	for _, c := range last {
		c0, ok := start[key{c.Node, c.Name, c.PID}]
		if !ok || secs <= 0 {
			continue
		}
		cpu := max(0, c.CPU.Seconds-c0.CPU.Seconds)
		wait := max(0, c.CPU.SchedWaitSeconds-c0.CPU.SchedWaitSeconds)
		f := ComponentFigure{Name: c.Name, Node: c.Node, Cores: cpu / secs, WaitRate: wait / secs}
		if n, ok := componentNames[c.Name]; ok {
			f.Name = n
		}
		if cpu+wait > 0 {
			f.WaitShare = wait / (cpu + wait)
		}
		switch {
		case c.Cgroup != nil && c.Cgroup.LimitCores > 0:
			f.Available, f.OwnLimit, f.LimitPath = c.Cgroup.LimitCores, true, c.Cgroup.LimitPath
			f.Basis = fmt.Sprintf("CPU limit of its cgroup %s", c.Cgroup.LimitPath)
			if t := c.Cgroup.Throttling; t != nil && t.Periods > 0 {
				f.Throttled = float64(t.Throttled) / float64(t.Periods)
			}
		case c.AllowedCPUs > 0 && (c.NodeCores == 0 || c.AllowedCPUs < c.NodeCores):
			f.Available, f.Basis = float64(c.AllowedCPUs), "its cpuset"
		case c.NodeCores > 0:
			f.Available, f.Basis = float64(c.NodeCores), "its node's cores"
		}
		if f.Available > 0 {
			f.Saturation = f.Cores / f.Available
		}
		out = append(out, f)
	}
	// Components under one limit share it: each one's saturation is their CPU together against it.
	type limit struct{ node, path string }
	used := map[limit]float64{}
	names := map[limit][]string{}
	for _, f := range out {
		if f.OwnLimit {
			k := limit{f.Node, f.LimitPath}
			used[k] += f.Cores
			names[k] = append(names[k], f.Name)
		}
	}
	for i, f := range out {
		if !f.OwnLimit {
			continue
		}
		k := limit{f.Node, f.LimitPath}
		out[i].Saturation = used[k] / f.Available
		for _, n := range names[k] {
			if n != f.Name {
				out[i].SharedWith = append(out[i].SharedWith, n)
			}
		}
		sort.Strings(out[i].SharedWith)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// MinRunQueueWait is the run-queue wait (seconds per second: the cores' worth of time lost) below which a
// component's wait share is not its saturation: a share of a few milliseconds is noise, not starvation. Under a
// hog beside the control plane here, kube-scheduler waited 93% of its runnable time — 0.04 s per second — while
// kube-apiserver, the component the API's latency is made of, lost 1.02 s per second (85%) and etcd 0.26 (90%).
const MinRunQueueWait = 0.1

// AddPressureBefore adds each node's CPU pressure as the node agent read it at the window's start (PSI "some"
// avg60: the minute before the window), from the first read of the components.
func AddPressureBefore(res *result.Result, first []cpnode.Component) {
	addNodePressure(res, MetricCPUPressureBefore, first)
}

// addNodePressure adds metric name once per node of comps: its node's PSI "some" avg60 as a ratio, where read.
func addNodePressure(res *result.Result, name string, comps []cpnode.Component) {
	seen := map[string]bool{}
	for _, c := range comps {
		if seen[c.Node] || c.NodePSI == nil {
			continue
		}
		seen[c.Node] = true
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: "ratio", Value: c.NodePSI.SomeAvg60 / 100,
			Labels: map[string]string{"instance": c.Node, "source": cpnode.SourceNodeAgent}})
	}
}

// AddComponents adds the node tier's component figures to res, the node's CPU pressure (PSI "some", the
// share of the last minute in which a task waited for a CPU) of each node, and, where one component's
// saturation (its CPU against its own cores, or its run-queue wait share where it lost at least
// MinRunQueueWait) is above the window's
// MetricCPUSaturation, makes it the figure, named by component and basis. A component that waits for a CPU
// with no limit of its own is starved by its neighbours on the node, and its basis says so.
func AddComponents(res *result.Result, figs []ComponentFigure, last []cpnode.Component) {
	lab := func(f ComponentFigure, extra ...string) map[string]string {
		l := map[string]string{"component": f.Name, "node": f.Node, "source": cpnode.SourceNodeAgent}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	var best *ComponentFigure
	bestV, bestBasis := 0.0, ""
	for i, f := range figs {
		add(MetricComponentCPUCores, "cores", f.Cores, lab(f))
		if f.Available > 0 {
			add(MetricComponentCoresAvailable, "cores", f.Available, lab(f, "basis", f.Basis))
			add(MetricComponentSaturation, "ratio", f.Saturation, lab(f, "basis", f.Basis))
		}
		add(MetricComponentSchedWait, "seconds/second", f.WaitRate, lab(f))
		add(MetricComponentWaitShare, "ratio", f.WaitShare, lab(f))
		if f.OwnLimit {
			add(MetricComponentThrottled, "ratio", f.Throttled, lab(f))
		}
		if f.Saturation > bestV {
			best, bestV, bestBasis = &figs[i], f.Saturation, BasisComponentLimit
		}
		if f.WaitRate >= MinRunQueueWait && f.WaitShare > bestV {
			best, bestV, bestBasis = &figs[i], f.WaitShare, BasisRunQueueWait
		}
	}
	addNodePressure(res, MetricCPUPressure, last)
	if best == nil {
		return
	}
	cur := res.Metric(MetricCPUSaturation, nil)
	if cur != nil && cur.Value >= bestV {
		return
	}
	detail := Describe(*best)
	// The most starved by share may have lost little time (kube-scheduler waiting 100% of 0.29 s per second,
	// beside kube-apiserver's 95% of 2.43 s): the component that lost the most is said too.
	if bestBasis == BasisRunQueueWait {
		most := best
		for i, f := range figs {
			if f.WaitRate >= MinRunQueueWait && f.WaitRate > most.WaitRate {
				most = &figs[i]
			}
		}
		if most != best {
			detail += fmt.Sprintf("; %s on %s lost the most: its threads waited %.2f s per second for a CPU (%.0f%% of their runnable time)",
				most.Name, most.Node, most.WaitRate, most.WaitShare*100)
		}
	}
	l := lab(*best, "basis", bestBasis, "detail", detail)
	if cur != nil {
		cur.Value, cur.Labels = bestV, l
		return
	}
	add(MetricCPUSaturation, "ratio", bestV, l)
}

// Describe says a component's figures in a sentence for the finding.
func Describe(f ComponentFigure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s used %.2f cores", f.Name, f.Node, f.Cores)
	switch {
	case len(f.SharedWith) > 0:
		fmt.Fprintf(&b, " of %g (%s, shared with %s: %.0f%% used together)", f.Available, f.Basis, strings.Join(f.SharedWith, ", "), f.Saturation*100)
	case f.Available > 0:
		fmt.Fprintf(&b, " of %g (%s, %.0f%%)", f.Available, f.Basis, f.Saturation*100)
	}
	if f.OwnLimit && f.Throttled > 0 {
		fmt.Fprintf(&b, ", throttled in %.0f%% of its CFS periods", f.Throttled*100)
	}
	fmt.Fprintf(&b, "; its threads waited %.2f s per second for a CPU (%.0f%% of their runnable time)", f.WaitRate, f.WaitShare*100)
	if !f.OwnLimit && f.WaitShare >= 0.5 {
		b.WriteString(" with no CPU limit of its own: starved by its neighbours on the node")
	}
	return b.String()
}
