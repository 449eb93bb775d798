// Package throttle is system.throttling: the kernel's CFS throttling of kube-system's containers (CoreDNS,
// kube-proxy, CNI agents, metrics-server...) under their CPU limits, from cAdvisor's counters — each real
// node's kubelet /metrics/cadvisor read through the apiserver's node proxy at the start and the end of the
// run's window, or Prometheus's copy of them over a past window (promwindow). A throttled DNS or network pod
// slows the whole cluster without an error anywhere.
package throttle

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "system.throttling"

// Namespace is the namespace whose containers are read.
const Namespace = "kube-system"

// The metrics the rules read, per container (labels node, pod, container).
const (
	// MetricThrottledRatio is the share of the container's CFS periods in which it was throttled.
	MetricThrottledRatio = "cfs_throttled_ratio"
	// MetricCPUUsed is the CPU the container used over the window, in cores.
	MetricCPUUsed = "cpu_used_cores"
	// MetricCPULimit is the container's CPU limit (its CFS quota / period), in cores.
	MetricCPULimit = "cpu_limit_cores"
	// MetricThrottledSeconds is how long the kernel held the container's threads back over the window.
	MetricThrottledSeconds = "cfs_throttled_seconds"
	// MetricLimited counts kube-system's containers under a CPU limit (global).
	MetricLimited = "containers_limited"
)

// The cAdvisor families read.
const (
	FamPeriods          = "container_cpu_cfs_periods_total"
	FamThrottled        = "container_cpu_cfs_throttled_periods_total"
	FamThrottledSeconds = "container_cpu_cfs_throttled_seconds_total"
	FamUsage            = "container_cpu_usage_seconds_total"
	FamQuota            = "container_spec_cpu_quota"
	FamPeriod           = "container_spec_cpu_period"
)

// Families are the cAdvisor families the analysis reads.
var Families = []string{FamPeriods, FamThrottled, FamThrottledSeconds, FamUsage, FamQuota, FamPeriod}

// Container is what one kube-system container did over the window: its CFS periods and the throttled ones,
// the throttled time, the CPU it used (seconds, increases over the window) and its limit in cores (0: none).
type Container struct {
	Node, Pod, Container                                    string
	Periods, Throttled, ThrottledSeconds, CPUSeconds, Limit float64
}

// Key names the container.
func (c Container) Key() string { return c.Node + "/" + c.Pod + "/" + c.Container }

// Build is the result from the containers seen over a window of the given length: one set of metrics per
// container under a CPU limit that ran CFS periods in the window (throttling exists only under a limit), and
// the number of them.
func Build(cs []Container, window time.Duration, from, to time.Time) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass, Start: from, End: to}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Key() < cs[j].Key() })
	limited := 0
	var worst *Container
	worstRatio := 0.0
	for i := range cs {
		c := &cs[i]
		if c.Limit <= 0 || c.Periods <= 0 {
			continue
		}
		limited++
		l := map[string]string{"node": c.Node, "pod": c.Pod, "container": c.Container}
		ratio := c.Throttled / c.Periods
		res.Metrics = append(res.Metrics,
			result.Metric{Name: MetricThrottledRatio, Unit: "ratio", Value: ratio, Labels: l},
			result.Metric{Name: MetricCPUUsed, Unit: "cores", Value: c.CPUSeconds / window.Seconds(), Labels: l},
			result.Metric{Name: MetricCPULimit, Unit: "cores", Value: c.Limit, Labels: l},
			result.Metric{Name: MetricThrottledSeconds, Unit: "seconds", Value: c.ThrottledSeconds, Labels: l})
		if worst == nil || ratio > worstRatio {
			worst, worstRatio = c, ratio
		}
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricLimited, Unit: "count", Value: float64(limited)})
	switch {
	case limited == 0:
		res.Reason = fmt.Sprintf("no %s container runs under a CPU limit: none can be throttled", Namespace)
	default:
		res.Reason = fmt.Sprintf("%d %s containers under a CPU limit; most throttled %s/%s on %s: %.0f%% of its CFS periods over %s",
			limited, Namespace, worst.Pod, worst.Container, worst.Node, 100*worstRatio, window.Round(time.Second))
	}
	return res
}

// PodCgroup is the container label of a pod's own cgroup (cAdvisor's container=""): read only for a pod whose
// containers' cgroups cAdvisor does not name (the lab's kubelets with cgroupfs on a hybrid cgroup v1 layout
// show pods only), so a pod is counted once.
const PodCgroup = "(pod)"

// PreferContainers keeps, for each node and pod, its containers' cgroups when there are any, else the pod's
// own cgroup (renamed PodCgroup).
func PreferContainers(cs []Container) []Container {
	named := map[string]bool{}
	for _, c := range cs {
		if c.Container != "" {
			named[c.Node+"/"+c.Pod] = true
		}
	}
	var out []Container
	for _, c := range cs {
		if c.Container == "" {
			if named[c.Node+"/"+c.Pod] {
				continue
			}
			c.Container = PodCgroup
		}
		out = append(out, c)
	}
	return out
}

// system is a kube-system container's or pod's cgroup (not the sandbox's, container "POD").
func system(l prom.Labels) bool {
	return l["namespace"] == Namespace && l["container"] != "POD"
}

// Analyze is the result from each node's first and last cAdvisor scrape (by node name): counters are
// differenced (a container that restarted counts from zero, as Prometheus's increase() does), the limit is
// the last scrape's quota / period. The window is the longest between a node's two scrapes.
func Analyze(first, last map[string]*prom.Snapshot) result.Result {
	byKey := map[string]*Container{}
	var window time.Duration
	var from, to time.Time
	nodes := make([]string, 0, len(last))
	for n := range last {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		a, b := first[n], last[n]
		if a == nil || b == nil {
			continue
		}
		if d := b.At.Sub(a.At); d > window {
			window, from, to = d, a.At, b.At
		}
		get := func(l prom.Labels) *Container {
			c := &Container{Node: n, Pod: l["pod"], Container: l["container"]}
			if o := byKey[c.Key()]; o != nil {
				return o
			}
			byKey[c.Key()] = c
			return c
		}
		for _, f := range []struct {
			name string
			add  func(c *Container, v float64)
		}{
			{FamPeriods, func(c *Container, v float64) { c.Periods += v }},
			{FamThrottled, func(c *Container, v float64) { c.Throttled += v }},
			{FamThrottledSeconds, func(c *Container, v float64) { c.ThrottledSeconds += v }},
			{FamUsage, func(c *Container, v float64) { c.CPUSeconds += v }},
		} {
			for _, s := range prom.Delta(a, b, f.name) {
				if system(s.Labels) {
					f.add(get(s.Labels), s.Value)
				}
			}
		}
		period := map[string]float64{}
		for _, s := range b.Series(FamPeriod) {
			if system(s.Labels) {
				period[s.Labels.Key()] = s.Value
			}
		}
		for _, s := range b.Series(FamQuota) {
			if p := period[s.Labels.Key()]; system(s.Labels) && p > 0 && s.Value > 0 {
				c := get(s.Labels)
				c.Limit = max(c.Limit, s.Value/p)
			}
		}
	}
	cs := make([]Container, 0, len(byKey))
	for _, c := range byKey {
		cs = append(cs, *c)
	}
	cs = PreferContainers(cs)
	if window <= 0 {
		window = time.Second // a single scrape: no increase, nothing throttled
	}
	return Build(cs, window, from, to)
}

// Measurement reads the real nodes' cAdvisor at the start and the end of the run's window.
type Measurement struct{ Length time.Duration }

// New returns the measurement over a window of at least length.
func New(length time.Duration) *Measurement { return &Measurement{Length: length} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "CFS throttling of kube-system's containers under their CPU limits (cAdvisor through the node proxy, at the start and the end of the window)"
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

// Run implements measure.Measurement (the run starts and gathers it as an observer).
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

type observation struct{ ends Ends }

// Start implements measure.Observer: the first read of every real node's cAdvisor.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	o := &observation{ends: Ends{Reader: Name, Families: Families, Window: m.Length, NoNode: "simulated nodes have no kubelet, hence no cAdvisor"}}
	if err := o.ends.Start(ctx, env, nil); err != nil {
		return nil, err
	}
	return o, nil
}

// Sample implements measure.Observation: counters need only the window's two ends.
func (*observation) Sample(context.Context) {}

// Gather implements measure.Observation: the last read, and the analysis.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	last, missed, errs, err := o.ends.Last(ctx)
	res := Analyze(kubelet.Snaps(o.ends.First), kubelet.Snaps(last))
	if err != nil {
		return res, err
	}
	if len(missed) > 0 {
		res.Reason += fmt.Sprintf("; not read on %s (%s)", strings.Join(missed, ", "), JoinErrs(errs))
	}
	return res, nil
}
