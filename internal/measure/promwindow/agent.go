package promwindow

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Agent is nodes.agent from Prometheus: what node_exporter exports of what the live node agent reads (conntrack
// against its limit, pressure, ARP entries, load, memory), one host per node_exporter instance, analysed by
// nodeagent.Analyze so that the node sweep's rules read it on their thresholds. What node_exporter does not
// export (the neighbour table's limits, the kernel log, D-state processes, the sync probe, rotational disks) is
// listed as absent, so those rules are not evaluated.
type Agent struct{ src *Source }

// NewAgent returns the measurement.
func NewAgent(s *Source) *Agent { return &Agent{src: s} }

// Name implements measure.Measurement: the live node sweep's name, so the same rules read it.
func (*Agent) Name() string { return nodeagent.Name }

// Description implements measure.Measurement.
func (a *Agent) Description() string {
	return fmt.Sprintf("node conntrack fill, pressure (worst minute), ARP entries, load and memory per node_exporter instance, from Prometheus over %s", a.src.Window)
}

// agentAbsent are the node agent's metrics node_exporter has no series for.
var agentAbsent = []result.Absence{
	{Metric: nodeagent.MetricNeighbourUsage, Series: "net.ipv4.neigh.default.gc_thresh3", Reason: "node_exporter exports ARP entries (node_arp_entries) but not the neighbour table's limits"},
	{Metric: nodeagent.MetricNeighbourSoftUsage, Series: "net.ipv4.neigh.default.gc_thresh2", Reason: "node_exporter exports ARP entries (node_arp_entries) but not the neighbour table's limits"},
	{Metric: nodeagent.MetricKernelLines, Series: "(kernel log)", Reason: "node_exporter does not read the kernel log: overflow, conntrack-full and hung-task lines need the live node agent"},
	{Metric: nodeagent.MetricDStatePersistent, Series: "(per-process D state)", Reason: "node_exporter counts blocked processes (node_procs_blocked), not which ones stay in D state"},
	{Metric: nodeagent.MetricSyncP50, Series: "(write+fdatasync probe)", Reason: "node_exporter exports the disks' mean time per write (node_disk_write_time_seconds_total, in nodes.prometheus), not a write+fdatasync probe of the runtime's directory"},
	{Metric: nodeagent.MetricDiskSpinning, Series: "(sysfs queue/rotational)", Reason: "node_exporter does not export whether a disk is rotational"},
}

// agentSeries are the series each of the node agent's metrics rests on.
var agentSeries = map[string]string{
	nodeagent.MetricConntrackUsage:       "node_nf_conntrack_entries / node_nf_conntrack_entries_limit",
	nodeagent.MetricIOPressureFull:       "rate(node_pressure_io_stalled_seconds_total) (worst in the window)",
	nodeagent.MetricIOPressureFullWindow: "rate(node_pressure_io_stalled_seconds_total) (worst in the window)",
	nodeagent.MetricIOPressureSomeWindow: "rate(node_pressure_io_waiting_seconds_total) (worst in the window)",
	nodeagent.MetricIOPressureSome:       "rate(node_pressure_io_waiting_seconds_total) (worst in the window)",
	nodeagent.MetricCPUPressureSome:      "rate(node_pressure_cpu_waiting_seconds_total) (worst in the window)",
	nodeagent.MetricMemPressureFull:      "rate(node_pressure_memory_stalled_seconds_total) (worst in the window)",
	nodeagent.MetricLoadPerCPU:           "node_load1 / node_cpu_seconds_total CPUs",
	nodeagent.MetricMemAvailable:         "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
}

// pressure is one PSI counter of node_exporter and the node agent's reading it becomes.
type pressure struct {
	resource, series string
	full             bool
}

var pressures = []pressure{
	{"io", "node_pressure_io_stalled_seconds_total", true},
	{"io", "node_pressure_io_waiting_seconds_total", false},
	{"cpu", "node_pressure_cpu_waiting_seconds_total", false},
	{"memory", "node_pressure_memory_stalled_seconds_total", true},
}

// Run implements measure.Measurement.
func (a *Agent) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := a.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("node-exporter")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("node-exporter"))
	}
	w := s.window()
	byInstance := func(q string) (map[string]float64, error) {
		v, err := s.Client.Instant(ctx, q, s.Window.To)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, smp := range v {
			if f := float64(smp.Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
				out[string(smp.Metric["instance"])] = f
			}
		}
		return out, nil
	}
	hosts := map[string]*agent.NodeHost{}
	host := func(inst string) *agent.NodeHost {
		h := hosts[inst]
		if h == nil {
			h = &agent.NodeHost{Node: inst, Net: &agent.NodeNet{ConntrackEntries: -1, ConntrackMax: -1, Neighbours: -1, NeighThresh1: -1, NeighThresh2: -1, NeighThresh3: -1}}
			hosts[inst] = h
		}
		return h
	}
	// The instances, from the signature series.
	up, err := byInstance(fmt.Sprintf("count by (instance) (last_over_time(%s[%s]))", selector("node_uname_info", job), w))
	if err != nil {
		return result.Result{}, err
	}
	for inst := range up {
		host(inst)
	}
	var absent []result.Absence
	// Conntrack: the fullest the table got in the window, against its limit.
	entries, err := byInstance(fmt.Sprintf("max by (instance) (max_over_time(%s[%s]))", selector("node_nf_conntrack_entries", job), w))
	if err != nil {
		return result.Result{}, err
	}
	limit, err := byInstance(fmt.Sprintf("min by (instance) (min_over_time(%s[%s]))", selector("node_nf_conntrack_entries_limit", job), w))
	if err != nil {
		return result.Result{}, err
	}
	for inst, e := range entries {
		if l, ok := limit[inst]; ok && l > 0 {
			h := host(inst)
			h.Net.ConntrackEntries, h.Net.ConntrackMax = int64(e), int64(l)
		}
	}
	if len(entries) == 0 || len(limit) == 0 {
		absent = append(absent, result.Absence{Metric: nodeagent.MetricConntrackUsage, Series: "node_nf_conntrack_entries",
			Reason: fmt.Sprintf("job %s has no node_nf_conntrack_entries/_limit in the window (conntrack collector off, or nf_conntrack not loaded)", jobValue(job))})
	}
	arp, err := byInstance(fmt.Sprintf("sum by (instance) (max_over_time(%s[%s]))", selector("node_arp_entries", job), w))
	if err != nil {
		return result.Result{}, err
	}
	for inst, n := range arp {
		host(inst).Net.Neighbours = int64(n)
	}
	// Pressure: the live agent reads the kernel's 60 s average at one moment; over a window, the worst
	// rate() of the stall counter over the profiles' rate window (1 minute up to a 1 h window), in percent.
	got := map[string]bool{}
	for _, p := range pressures {
		q := fmt.Sprintf("max by (instance) (max_over_time((100 * rate(%s[%s]))[%s:%s]))", selector(p.series, job), s.rate(), w, promql.PromDuration(s.Window.Step))
		v, err := byInstance(q)
		if err != nil {
			return result.Result{}, err
		}
		for inst, pct := range v {
			h := host(inst)
			if h.PSI == nil {
				h.PSI = map[string]agent.PSIPair{}
			}
			pp := h.PSI[p.resource]
			// The live agent's own-watch share is the counter's growth over its watch: here, over the rate window.
			if p.full {
				pp.FullAvg60, pp.FullWindow = pct, pct
			} else {
				pp.SomeAvg60, pp.SomeWindow = pct, pct
			}
			pp.WindowSeconds = s.Window.Rate.Seconds()
			h.PSI[p.resource] = pp
			got[p.series] = true
		}
	}
	if !got["node_pressure_io_stalled_seconds_total"] {
		for _, m := range []string{nodeagent.MetricIOPressureFullWindow, nodeagent.MetricIOPressureFull} {
			absent = append(absent, result.Absence{Metric: m, Series: "node_pressure_io_stalled_seconds_total",
				Reason: fmt.Sprintf("job %s has no pressure series in the window (pressure collector off, or a kernel without PSI)", jobValue(job))})
		}
	}
	load, err := byInstance(fmt.Sprintf("max by (instance) (max_over_time(%s[%s]))", selector("node_load1", job), w))
	if err != nil {
		return result.Result{}, err
	}
	cpus, err := byInstance(fmt.Sprintf("count by (instance) (last_over_time(%s[%s]))", selector("node_cpu_seconds_total", job, `mode="idle"`), w))
	if err != nil {
		return result.Result{}, err
	}
	memAvail, err := byInstance(fmt.Sprintf("min by (instance) (min_over_time(%s[%s]))", selector("node_memory_MemAvailable_bytes", job), w))
	if err != nil {
		return result.Result{}, err
	}
	memTotal, err := byInstance(fmt.Sprintf("max by (instance) (max_over_time(%s[%s]))", selector("node_memory_MemTotal_bytes", job), w))
	if err != nil {
		return result.Result{}, err
	}
	for inst, h := range hosts {
		h.CPUs = int(cpus[inst])
		if l, ok := load[inst]; ok {
			h.Load = &agent.LoadAvg{Load1: l}
		}
		if t, ok := memTotal[inst]; ok && t > 0 {
			h.MemTotal, h.MemAvailable = int64(t), int64(memAvail[inst])
		}
	}
	names := make([]string, 0, len(hosts))
	for n := range hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]agent.NodeHost, 0, len(names))
	for _, n := range names {
		list = append(list, *hosts[n])
	}
	res := nodeagent.Analyze(list, nil)
	res.Start, res.End = s.Window.From, s.Window.To
	res.Absent = append(absent, agentAbsent...)
	s.label(&res, "job "+jobValue(job), agentSeries)
	if err := s.addProfile(ctx, &res, profile{Result: nodeagent.Name, Metric: nodeagent.MetricIOPressureFullWindow, Unit: "percent", Rule: "KS-NODE-IO-PRESSURE",
		What: "node I/O pressure (full)", Top: 3,
		Query: fmt.Sprintf("100 * max by (instance) (rate(%s[%s]))", selector("node_pressure_io_stalled_seconds_total", job), s.rate())}); err != nil {
		return res, err
	}
	return res, nil
}
