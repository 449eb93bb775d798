// Package cpusage is the control-plane usage measurement: the CPU and memory kube-apiserver and etcd used
// over the observation window (their own process_* metrics), the cores they may use when that is knowable,
// and the apiserver's signs of saturation — API Priority and Fairness seats in use against their limits,
// requests in flight, Go scheduler latency and GC pauses, and on the lab the kernel's own counters of the
// control plane's cgroup (CPU time, CFS throttling). Case E's first answer was "the API server and etcd were fully
// using the available CPU"; this is the number behind it.
package cpusage

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/etcdscrape"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "controlplane.usage"

// Metric names of the result: rules read them through these.
const (
	// MetricCPUCores is the average CPU cores used over the window (label component: kube-apiserver, etcd,
	// or all for their sum).
	MetricCPUCores = "cpu_cores"
	// MetricCPUCoresBusiest is the cores kube-apiserver and etcd used together in the busiest BusiestSteps
	// consecutive steps of the window (label component=all).
	MetricCPUCoresBusiest = "cpu_cores_busiest"
	// MetricCoresAvailable is the cores they may use (label source: how it is known); absent when unknown.
	MetricCoresAvailable = "cores_available"
	// MetricCPUSaturation is MetricCPUCoresBusiest over MetricCoresAvailable.
	MetricCPUSaturation = "cpu_saturation"
	// MetricRSSBytes is the resident memory at the end of the window (label component).
	MetricRSSBytes = "rss_bytes"
	// MetricAPFSeatsRatio is the most seats in use over the nominal limit seen at a step (label priority_level).
	MetricAPFSeatsRatio = "apf_seats_in_use_ratio"
	// MetricInflight is the most requests in flight seen at a step (label request_kind).
	MetricInflight = "inflight_requests"
	// MetricGoSchedP99 is the p99 of the Go scheduler's latency over the window (label component): a
	// process short of CPU queues its goroutines.
	MetricGoSchedP99 = "go_sched_latency_p99"
	// MetricGoGCPauseShare is the share of the window the component's Go runtime spent in stop-the-world GC
	// pauses (go_gc_duration_seconds' sum over the window; label component).
	MetricGoGCPauseShare = "go_gc_pause_share"
	// MetricGoGCPauseMean is the mean stop-the-world GC pause in the window (label component).
	MetricGoGCPauseMean = "go_gc_pause_mean"
	// MetricCgroupCPUCores is the cores kube-apiserver and etcd used together by the kernel's count of their
	// shared cgroup (cpuacct.usage; the lab only).
	MetricCgroupCPUCores = "cgroup_cpu_cores"
	// MetricCgroupThrottledRatio is the share of the CFS periods with runnable tasks in which the control
	// plane's cgroup ran out of its quota (cpu.stat nr_throttled / nr_periods; the lab, under a quota).
	MetricCgroupThrottledRatio = "cgroup_throttled_ratio"
	// MetricCgroupThrottledSeconds is the time the control plane's cgroup spent throttled in the window.
	MetricCgroupThrottledSeconds = "cgroup_throttled_seconds"
	// MetricCgroupThrottledWindowShare is the share of the window's CFS periods in which the control plane's
	// cgroup (the most throttled of them, where each component has its own) ran out of its quota: throttled
	// periods × the CFS period ÷ the window. In each such period the cgroup used all of its quota, so this is a
	// lower bound of its saturation that the kernel counts, however starved the process is.
	MetricCgroupThrottledWindowShare = "cgroup_throttled_window_share"
	// MetricScrapesAttempted and MetricScrapesMissed count the scrapes of a component's own /metrics in the
	// window and those it did not answer (label component): a starved process answers late or not at all, so
	// its own counters under-read exactly when it is saturated.
	MetricScrapesAttempted = "scrapes_attempted"
	MetricScrapesMissed    = "scrapes_missed"
	// MetricCPUPressure is the share of the window in which some task on a control-plane host waited for a CPU
	// (PSI's cpu "some", node_exporter's node_pressure_cpu_waiting_seconds_total; label instance).
	MetricCPUPressure = "cpu_pressure_waiting_ratio"
	// MetricCPUPressureBefore is the node agent's PSI cpu "some" avg60 of a control-plane node as it read it at
	// the window's start (label instance): how much of the minute *before* the window some task waited for a
	// CPU. A starvation seen in the window reaches back that far where it is high too, so an outage in that
	// minute (the node agent's own start is slow on a starved node) is still read against it.
	MetricCPUPressureBefore = "cpu_pressure_before_ratio"
)

// SaturationThreshold is the share of the cores available that kube-apiserver and etcd use in their busiest
// stretch for KS-CP-SATURATED (case E: the control plane "fully using the available CPU"); the rule and the
// profiles of a past window read this one value.
const SaturationThreshold = 0.9

// The bases of MetricCPUSaturation (its label "basis"): which evidence gave the figure. The kernel's counts
// (the cgroup's CPU time, its throttled periods) are read by the kubelet's cAdvisor or the node, not by the
// starved process, so they stay right when the process's own /metrics under-read.
const (
	BasisProcessCPU = "process_cpu_seconds_total"
	BasisCgroupCPU  = "cgroup CPU time"
	BasisThrottled  = "CFS periods throttled"
)

// BusiestSteps is how many consecutive steps (of measure.ObserveStep) make the busiest interval.
const BusiestSteps = 3

// Components whose usage is measured.
const (
	APIServer = "kube-apiserver"
	Etcd      = "etcd"
	All       = "all"
)

// etcdPrefix marks etcd's families in the merged snapshot.
const etcdPrefix = "etcd:"

// Measurement observes the control plane's usage over a window.
type Measurement struct {
	Length time.Duration
	// EtcdEndpoint is etcd's metrics endpoint as the user states it (--etcd-endpoint); "": none.
	EtcdEndpoint string
	Client       *http.Client
}

// New returns the measurement.
func New(window time.Duration, etcdEndpoint string) *Measurement {
	return &Measurement{Length: window, EtcdEndpoint: etcdEndpoint, Client: &http.Client{Timeout: 10 * time.Second}}
}

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("control-plane usage: kube-apiserver and etcd CPU and memory vs the cores they have, APF seats, inflight requests, over %s", m.Length)
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

// Run observes the window on its own.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

func (m *Measurement) etcdEndpoint() string {
	return strings.TrimRight(m.EtcdEndpoint, "/")
}

// scrape reads the apiserver's /metrics and, when reachable, etcd's (etcd nil: etcd is not read), merged into
// one snapshot (etcd's families prefixed).
func (m *Measurement) scrape(ctx context.Context, env *measure.Env, etcd etcdscrape.Fetch) (*prom.Snapshot, error) {
	snap, err := env.APIServerMetrics(ctx)
	if err != nil {
		return nil, err
	}
	if etcd == nil {
		return snap, nil
	}
	es, err := etcd(ctx)
	if err != nil {
		return snap, nil // etcd's side is optional: the result says it is missing
	}
	for k, f := range es.Families {
		snap.Families[etcdPrefix+k] = f
	}
	return snap, nil
}

// UsesNodeTier implements measure.NodeTierUser: the components' CPU, and etcd's metrics without
// --etcd-endpoint, come from the node agent.
func (*Measurement) UsesNodeTier() bool { return true }

// nodeTier is what the node tier gave at the window's start: the session, the components as first read, and
// why it is out of reach (nil when it answered).
type nodeTier struct {
	tier  cpnode.Tier
	first []cpnode.Component
	at    time.Time
	err   error
}

// Start implements measure.Observer. Tiers: etcd's metrics from --etcd-endpoint, else through the node agent
// on etcd's node; the components' CPU, cgroup limits, run-queue wait and PSI from the node agent; the cores
// from the agent's read of the apiserver's node, else the control-plane nodes' capacity; whatever the node
// tier could not give is out of reach with its reason.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	cores, source := coresAvailable(ctx, env)
	var etcd etcdscrape.Fetch
	if ep := m.etcdEndpoint(); ep != "" {
		etcd = etcdscrape.At(env, m.Client, ep)
	}
	nt := &nodeTier{}
	nt.tier, nt.err = cpnode.From(ctx, env)
	if nt.err == nil {
		nt.at = env.Clock.Now()
		nt.first, nt.err = nt.tier.ControlPlane(ctx)
	}
	if nt.err == nil {
		for _, c := range nt.first {
			if c.Embeds(Etcd) && etcd == nil {
				etcd = etcdscrape.On(env, nt.tier, c.Node)
			}
			if c.Embeds(APIServer) && c.NodeCores > 0 {
				cores, source = SharedCores(c, nt.first)
			}
		}
	}
	s := &measure.Scrapes{
		Scrape: func(ctx context.Context) (*prom.Snapshot, error) { return m.scrape(ctx, env, etcd) },
		Step:   Step,
		Analyze: func(_ context.Context, first, last *prom.Snapshot) (result.Result, error) {
			return Analyze(first, last, cores, source), nil
		},
		Log: env.Log.Debug,
	}
	obs, err := s.Start(ctx)
	if err != nil {
		return nil, err
	}
	return &observation{Scrapes: obs, env: env, nt: nt}, nil
}

type observation struct {
	*measure.Scrapes
	env *measure.Env
	nt  *nodeTier
}

// Gather adds what only the steps show (the busiest interval, peak seats and inflight requests) to the
// window's analysis.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	res, err := o.Scrapes.Gather(ctx)
	if err != nil {
		return res, err
	}
	AddScrapeGaps(&res, APIServer)(o.Gaps())
	FromSteps(&res)
	o.nodeTier(ctx, &res)
	return res, nil
}

// nodeTier adds the node tier's window of each component, or says why the node tier is out of reach.
func (o *observation) nodeTier(ctx context.Context, res *result.Result) {
	nt := o.nt
	var last []cpnode.Component
	if nt.err == nil {
		secs := o.env.Clock.Since(nt.at).Seconds()
		last, nt.err = nt.tier.ControlPlane(ctx)
		if nt.err == nil {
			AddComponents(res, Components(nt.first, last, secs), last)
			AddPressureBefore(res, nt.first)
			// The node agent's figures span its first read to its last: the result's window is theirs too
			// where the first scrape came later (on a starved node the scrapes lag by seconds).
			if res.Start.IsZero() || nt.at.Before(res.Start) {
				res.Start = nt.at
			}
			var names []string
			for _, c := range last {
				names = append(names, c.Name+"@"+c.Node)
			}
			note := "components' CPU, cgroup limits, run-queue wait and PSI read by the node agent (" + strings.Join(names, ", ") + ")"
			res.Reason = strings.TrimPrefix(note+"; "+res.Reason, "; ")
			res.Reason = strings.TrimSuffix(res.Reason, "; ")
		}
	}
	if nt.err == nil {
		return
	}
	// The node tier's reason is the why of what it would have given.
	replaced := false
	for i, r := range res.OutOfReach {
		if r.Signal == measure.OutOfReachEtcd.Signal || r.Signal == measure.OutOfReachComponentCPU.Signal {
			res.OutOfReach[i] = cpnode.OutOfReach(r, nt.err)
			replaced = replaced || r.Signal == measure.OutOfReachComponentCPU.Signal
		}
	}
	if !replaced {
		res.OutOfReach = append(res.OutOfReach, result.OutOfReach{Signal: measure.OutOfReachComponentCPU.Signal,
			Why: cpnode.Why(nt.err), Fix: measure.OutOfReachComponentCPU.Fix})
	}
}

// AddScrapeGaps returns a function adding the scrapes of component's /metrics attempted and missed to res.
func AddScrapeGaps(res *result.Result, component string) func(attempted, missed int) {
	return func(attempted, missed int) {
		comp := map[string]string{"component": component}
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricScrapesAttempted, Unit: "count", Value: float64(attempted), Labels: comp},
			result.Metric{Name: MetricScrapesMissed, Unit: "count", Value: float64(missed), Labels: comp})
	}
}

// coresAvailable is how many cores kube-apiserver and etcd may use, and how that is known: the capacity of the
// control-plane nodes when they are visible; 0 when unknown (a managed control plane, or one outside every
// node as on the lab: never the CLI host's CPUs, which say nothing of the cluster).
func coresAvailable(ctx context.Context, env *measure.Env) (float64, string) {
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/control-plane"})
	if err != nil || len(nodes.Items) == 0 {
		return 0, ""
	}
	least := 0.0
	for _, n := range nodes.Items {
		c := n.Status.Capacity[corev1.ResourceCPU]
		if v := c.AsApproximateFloat64(); v > 0 && (least == 0 || v < least) {
			least = v
		}
	}
	return least, "control-plane node capacity"
}

// SharedCores is what kube-apiserver (api) and etcd may use together by the node tier's read: the CPU limit
// of a cgroup holding both, else its cpuset, else its node's cores; with the source.
func SharedCores(api cpnode.Component, comps []cpnode.Component) (float64, string) {
	if cg := api.Cgroup; cg != nil && cg.LimitCores > 0 {
		shared := true
		for _, c := range comps {
			if c.Node == api.Node && c.Embeds(Etcd) && !c.Embeds(APIServer) && (c.Cgroup == nil || c.Cgroup.LimitPath != cg.LimitPath) {
				shared = false
			}
		}
		if shared {
			return cg.LimitCores, "node agent: CPU limit of kube-apiserver's and etcd's cgroup " + cg.LimitPath + " on " + api.Node
		}
	}
	if api.AllowedCPUs > 0 && api.AllowedCPUs < api.NodeCores {
		return float64(api.AllowedCPUs), "node agent: kube-apiserver's cpuset on " + api.Node
	}
	return float64(api.NodeCores), "node agent: cores of " + api.Node
}

// cpu returns each component's CPU seconds between two snapshots (counter resets count from zero).
func cpu(before, after *prom.Snapshot) map[string]float64 {
	out := map[string]float64{}
	for comp, fam := range map[string]string{APIServer: "process_cpu_seconds_total", Etcd: etcdPrefix + "process_cpu_seconds_total"} {
		d := prom.Delta(before, after, fam)
		if len(d) == 0 {
			continue
		}
		for _, s := range d {
			out[comp] += s.Value
		}
	}
	return out
}

// Step is one step of the series (pure): cores used per component and together, APF seats in use over the
// nominal limit per priority level, requests in flight.
//
// A snapshot is stamped when its answer came, but its counters were read when the apiserver wrote them: after
// a late answer the next interval looks short while its counters cover more time (CI's starved lab read 2.4 of
// 2 cores), so an interval is never taken shorter than the observers' step, the time the two scrapes' starts
// were apart.
func Step(prev, cur *prom.Snapshot) []result.Metric {
	if !cur.At.After(prev.At) {
		return nil
	}
	secs := max(cur.At.Sub(prev.At), measure.ObserveStep).Seconds()
	var out []result.Metric
	total, n := 0.0, 0
	used := cpu(prev, cur)
	for _, comp := range []string{APIServer, Etcd} {
		if v, ok := used[comp]; ok {
			out = append(out, result.Metric{Name: MetricCPUCores, Unit: "cores", Value: v / secs, Labels: map[string]string{"component": comp}})
			total += v / secs
			n++
		}
	}
	if n > 0 {
		out = append(out, result.Metric{Name: MetricCPUCores, Unit: "cores", Value: total, Labels: map[string]string{"component": All}})
	}
	if v, ok := counterDelta(prev, cur, famCgroupUsage); ok {
		out = append(out, result.Metric{Name: MetricCgroupCPUCores, Unit: "cores", Value: v / secs})
	}
	limits := map[string]float64{}
	for _, s := range cur.Series("apiserver_flowcontrol_nominal_limit_seats") {
		limits[s.Labels["priority_level"]] = s.Value
	}
	for _, s := range cur.Series("apiserver_flowcontrol_current_executing_seats") {
		if l := limits[s.Labels["priority_level"]]; l > 0 {
			out = append(out, result.Metric{Name: MetricAPFSeatsRatio, Unit: "ratio", Value: s.Value / l, Labels: map[string]string{"priority_level": s.Labels["priority_level"]}})
		}
	}
	for _, s := range cur.Series("apiserver_current_inflight_requests") {
		out = append(out, result.Metric{Name: MetricInflight, Unit: "count", Value: s.Value, Labels: map[string]string{"request_kind": s.Labels["request_kind"]}})
	}
	return out
}

// Analyze computes the window's figures from its first and last scrape (pure); cores is 0 when unknown.
func Analyze(first, last *prom.Snapshot, cores float64, source string) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	secs := last.At.Sub(first.At).Seconds()
	var notes []string
	used := cpu(first, last)
	if _, ok := used[APIServer]; !ok {
		notes = append(notes, "kube-apiserver exposes no process_cpu_seconds_total")
	}
	if _, ok := used[Etcd]; !ok {
		notes = append(notes, "etcd's metrics were not reachable: its usage is not counted")
		res.OutOfReach = append(res.OutOfReach, measure.OutOfReachEtcd)
	}
	if secs > 0 {
		total := 0.0
		for _, comp := range []string{APIServer, Etcd} {
			if v, ok := used[comp]; ok {
				add(MetricCPUCores, "cores", v/secs, map[string]string{"component": comp})
				total += v / secs
			}
		}
		if len(used) > 0 {
			add(MetricCPUCores, "cores", total, map[string]string{"component": All})
		}
	}
	for comp, fam := range map[string]string{APIServer: "process_resident_memory_bytes", Etcd: etcdPrefix + "process_resident_memory_bytes"} {
		if v, ok := last.Gauge(fam, nil); ok {
			add(MetricRSSBytes, "bytes", v, map[string]string{"component": comp})
		}
	}
	if cores > 0 {
		add(MetricCoresAvailable, "cores", cores, map[string]string{"source": source})
	} else {
		// Unknown is not healthy: the saturation is absent, so KS-CP-SATURATED is not evaluated (never clear).
		reason := "the cores kube-apiserver and etcd may use are unknown (no node labelled node-role.kubernetes.io/control-plane: a managed control plane); no saturation ratio"
		notes = append(notes, reason)
		res.OutOfReach = append(res.OutOfReach, measure.OutOfReachComponentCPU)
		series := "capacity of the control-plane nodes"
		res.Absent = append(res.Absent, result.Absence{Metric: MetricCoresAvailable, Series: series, Reason: reason},
			result.Absence{Metric: MetricCPUSaturation, Series: series, Reason: reason})
	}
	for comp, fam := range map[string]string{APIServer: "go_sched_latencies_seconds", Etcd: etcdPrefix + "go_sched_latencies_seconds"} {
		var h prom.Histogram
		for _, s := range prom.Delta(first, last, fam) {
			if s.Hist != nil {
				h.Add(s.Hist)
			}
		}
		if h.Count > 0 {
			if p99, ok := h.QuantileEstimate(0.99); ok {
				res.Metrics = append(res.Metrics, p99.Metric(MetricGoSchedP99, "seconds", map[string]string{"component": comp}))
			}
		}
	}
	for comp, fam := range map[string]string{APIServer: "go_gc_duration_seconds", Etcd: etcdPrefix + "go_gc_duration_seconds"} {
		for _, s := range prom.Delta(first, last, fam) {
			if s.Summary == nil || secs <= 0 {
				continue
			}
			add(MetricGoGCPauseShare, "ratio", s.Summary.Sum/secs, map[string]string{"component": comp})
			if s.Summary.Count > 0 {
				add(MetricGoGCPauseMean, "seconds", s.Summary.Sum/s.Summary.Count, map[string]string{"component": comp})
			}
		}
	}
	if v, ok := counterDelta(first, last, famCgroupUsage); ok && secs > 0 {
		add(MetricCgroupCPUCores, "cores", v/secs, nil)
	}
	if periods, ok := counterDelta(first, last, famCgroupPeriods); ok {
		throttled, _ := counterDelta(first, last, famCgroupThrottled)
		secsThrottled, _ := counterDelta(first, last, famCgroupThrottledSec)
		add(MetricCgroupThrottledSeconds, "seconds", secsThrottled, nil)
		if periods > 0 {
			add(MetricCgroupThrottledRatio, "ratio", throttled/periods, nil)
		}
		if period, ok := last.Gauge(famCgroupPeriodSeconds, nil); ok && period > 0 && secs > 0 {
			add(MetricCgroupThrottledWindowShare, "ratio", min(1, throttled*period/secs), nil)
		}
	}
	if res.Metric(MetricGoSchedP99, map[string]string{"component": APIServer}) == nil {
		res.Absent = append(res.Absent, result.Absence{Metric: MetricGoSchedP99, Series: "go_sched_latencies_seconds of kube-apiserver",
			Reason: "kube-apiserver exposes no go_sched_latencies_seconds (or none in the window)"})
	}
	if cores <= 0 {
		// No cores to hold the CPU against: the verdict rests on the API tier's signs of a starved apiserver
		// (its goroutines' wait for a CPU here; API latency and APF queueing in api.responsiveness), and says
		// so. Without them there is nothing to judge by, which is not a pass.
		if res.Metric(MetricGoSchedP99, map[string]string{"component": APIServer}) != nil {
			notes = append([]string{"saturation judged from the API tier only (kube-apiserver's goroutine scheduling delay, API latency and APF queueing: KS-CP-SATURATED-API)"}, notes...)
		} else {
			res.Status = result.StatusSkip
			notes = append([]string{"nothing to judge the control plane's saturation by: the cores are unknown and kube-apiserver exposes no go_sched_latencies_seconds"}, notes...)
		}
	}
	res.Reason = strings.Join(notes, "; ")
	return res
}

// FromSteps adds the figures only the steps show: the busiest BusiestSteps-step interval's cores and its
// ratio to the cores available, and the peak APF seat ratio and requests in flight.
//
// The busiest interval is read from two counts of the same CPU time: the processes' own
// (process_cpu_seconds_total, series cpu_cores{component=all}) and the kernel's count of their cgroup
// (cgroup_cpu_cores, where a source has it). A starved apiserver answers its scrapes late or not at all, so its
// own count under-reads exactly when it is saturated; the larger of the two is the figure, named by its label
// "source". The saturation is the larger of that over the cores available and the share of the window's CFS
// periods in which the cgroup's quota ran out (each such period used the whole quota), named by its "basis".
func FromSteps(res *result.Result) {
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	busiest, source, found := 0.0, "", false
	for _, s := range res.Series {
		switch {
		case len(s.Points) > 0 && (s.Name == MetricCPUCores && s.Labels["component"] == All || s.Name == MetricCgroupCPUCores):
			b, src := busiestMean(s.Points), BasisProcessCPU
			if s.Name == MetricCgroupCPUCores {
				src = BasisCgroupCPU
			}
			// The kernel's count is taken when it reads more than kernelMargin above the processes' own: the
			// two count the same CPU time, and their samples are taken at slightly different instants.
			if !found || (src == BasisCgroupCPU && b > busiest*(1+kernelMargin)) || (src == BasisProcessCPU && busiest <= b*(1+kernelMargin)) {
				busiest, source = b, src
			}
			found = true
		case s.Name == MetricAPFSeatsRatio || s.Name == MetricInflight:
			peak := 0.0
			for _, p := range s.Points {
				peak = max(peak, p.V)
			}
			add(s.Name, s.Unit, peak, s.Labels)
		}
	}
	if !found {
		return
	}
	c := res.Metric(MetricCoresAvailable, nil)
	labels := map[string]string{"component": All, "source": source}
	if c != nil && c.Value > 0 && busiest > c.Value {
		// Bounded: the control plane cannot use more cores than it has; a figure above them is its counters read
		// through late scrapes (a starved process answers late), not CPU it had.
		labels["measured"] = result.FormatQuantity(busiest, "cores")
		note := fmt.Sprintf("the busiest %d steps read %s of the %s available, bounded to %s: more than the cores is not CPU the control plane had "+
			"but its counters read through late or uneven scrapes (a starved process answers late)",
			BusiestSteps, result.FormatQuantity(busiest, "cores"), result.FormatQuantity(c.Value, "cores"), result.FormatQuantity(c.Value, "cores"))
		res.Reason = strings.TrimPrefix(res.Reason+"; "+note, "; ")
		busiest = c.Value
	}
	add(MetricCPUCoresBusiest, "cores", busiest, labels)
	if c == nil || c.Value <= 0 {
		return
	}
	sat, basis := busiest/c.Value, source
	if th := res.Metric(MetricCgroupThrottledWindowShare, nil); th != nil && th.Value > sat {
		sat, basis = th.Value, BasisThrottled
	}
	add(MetricCPUSaturation, "ratio", sat, map[string]string{"basis": basis})
}

// kernelMargin is how much more than the processes' own count the kernel's count of their cgroup must read to
// be the busiest figure (equal counts keep the processes' figure, and no note of a starved process).
const kernelMargin = 0.02

// busiestMean is the highest mean of BusiestSteps consecutive points (of all of them when fewer).
func busiestMean(points []result.Point) float64 {
	n := min(BusiestSteps, len(points))
	best := 0.0
	for i := 0; i+n <= len(points); i++ {
		sum := 0.0
		for _, p := range points[i : i+n] {
			sum += p.V
		}
		best = max(best, sum/float64(n))
	}
	return best
}
