// Package churn is `kubeslow bench churn`: pods started and deleted one after another (or a few at a time) on
// chosen nodes for a count or a duration, each start timed by phase, while the nodes' disks are sampled every
// second; then the change point of start latency over time, and what the disk did at that moment (case C).
package churn

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the result.
const Name = "pods.churn"

// Metric names of the result that rules read.
const (
	MetricStartP50         = "start_p50"
	MetricStartP99         = "start_p99"
	MetricStartChanges     = "start_changes"
	MetricKneeIteration    = "knee_iteration"
	MetricKneeAfter        = "knee_after"
	MetricKneeP50Before    = "knee_p50_before"
	MetricKneeP50After     = "knee_p50_after"
	MetricKneeRatio        = "knee_ratio"
	MetricDiskSyncP99      = "disk_sync_p99"
	MetricDiskSyncChanges  = "disk_sync_changes"
	MetricKneeSyncBefore   = "knee_disk_sync_p99_before"
	MetricKneeSyncAfter    = "knee_disk_sync_p99_after"
	MetricKneeSyncRatio    = "knee_disk_sync_ratio"
	MetricKneePSIBefore    = "knee_io_pressure_before"
	MetricKneePSIAfter     = "knee_io_pressure_after"
	MetricKneeDStateBefore = "knee_dstate_before"
	MetricKneeDStateAfter  = "knee_dstate_after"
	MetricKneeIOPSBefore   = "knee_disk_iops_before"
	MetricKneeIOPSAfter    = "knee_disk_iops_after"
)

// Iteration is one pod started and deleted.
type Iteration struct {
	Index int
	Pod   string
	Node  string
	// Start is when the create request was sent.
	Start time.Time
	// Latency is the start-up SLI (created -> Running seen by the watch), seconds; NaN if it never ran.
	Latency float64
	Phases  map[string]float64
	// TimedOut says the pod was not Running after the pod time-out; Latency is then the time-out (a lower
	// bound).
	TimedOut bool
	// Delete is how long the pod took to disappear after the delete request, seconds (NaN: not seen gone).
	Delete float64
	Err    string
}

// NodeDisk is what was sampled on one node.
type NodeDisk struct {
	Node, Dir, Device string
	// Remote says an agent pod on the node took the samples (times from the node's clock); else this process.
	Remote  bool
	Samples []diskprobe.Sample
	// Reason says why there are no samples (not measured), if so.
	Reason string
}

// Input is what Analyze reads.
type Input struct {
	Iterations []Iteration
	Disks      []NodeDisk
}

// The magnitude a change in start latency must have to count (the change point itself is found by PELT with
// the MBIC penalty; these thresholds only keep statistically real but harmless shifts out of the report).
const (
	// KneeRatio is how much the median start latency must rise across a change point.
	KneeRatio = 2.0
	// KneeMinAfter is the smallest median after the change worth reporting, seconds.
	KneeMinAfter = 1.0
	// DiskRatio is how much the disk's sync p99 must rise at the same moment to name the disk.
	DiskRatio = 3.0
)

// Analyze computes the series, the change points and their numbers (pure).
func Analyze(in Input) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, l map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: l})
	}
	its := append([]Iteration(nil), in.Iterations...)
	sort.Slice(its, func(i, j int) bool { return its[i].Start.Before(its[j].Start) })
	var ok []Iteration
	failed := 0
	reasons := map[string]int{}
	for _, it := range its {
		if math.IsNaN(it.Latency) || it.Err != "" {
			failed++
			reasons[it.Err]++
			continue
		}
		ok = append(ok, it)
	}
	for r, n := range reasons {
		res.Records = append(res.Records, result.Record{ID: "failed: " + r, Values: map[string]float64{"count": float64(n)}})
	}
	sort.Slice(res.Records, func(i, j int) bool { return res.Records[i].ID < res.Records[j].ID })
	add("iterations", "count", float64(len(its)), nil)
	add("failed", "count", float64(failed), nil)
	timedOut := 0
	for _, it := range ok {
		if it.TimedOut {
			timedOut++
		}
	}
	add("timed_out", "count", float64(timedOut), nil)
	if len(ok) == 0 {
		res.Status, res.Reason = result.StatusError, "no pod started"
		return res
	}
	t0 := ok[0].Start
	lat := make([]float64, len(ok))
	logLat := make([]float64, len(ok))
	startSeries := result.Series{Name: "start_latency", Unit: "seconds"}
	for i, it := range ok {
		lat[i] = it.Latency
		logLat[i] = math.Log(max(it.Latency, 1e-3))
		startSeries.Points = append(startSeries.Points, result.Point{T: it.Start, V: it.Latency})
	}
	sorted := stats.Sorted(lat)
	add(MetricStartP50, "seconds", stats.Percentile(sorted, 0.5), nil)
	add(MetricStartP99, "seconds", stats.Percentile(sorted, 0.99), nil)
	if d := ok[len(ok)-1].Start.Sub(t0).Seconds(); d > 0 {
		add("starts_per_minute", "per_minute", float64(len(ok)-1)/d*60, nil)
	}
	for _, ph := range []string{"schedule", "sandbox", "start", "observe"} {
		var v []float64
		for _, it := range ok {
			if x, found := it.Phases[ph]; found {
				v = append(v, x)
			}
		}
		if len(v) > 0 {
			add("phase_"+ph+"_p50", "seconds", stats.Median(v), nil)
		}
	}

	// The change points of start latency (on the log scale: latency noise is multiplicative).
	cps := stats.Changes(logLat, stats.ChangeOptions{})
	segs := stats.Segments(lat, cps)
	add(MetricStartChanges, "count", float64(len(cps)), nil)
	knee := -1
	bestRatio := 1.0
	for k := 1; k < len(segs); k++ {
		r := segs[k].Median / max(segs[k-1].Median, 1e-9)
		startSeries.Marks = append(startSeries.Marks, result.Mark{T: ok[segs[k].Start].Start,
			Label: fmt.Sprintf("change: p50 %s -> %s", Secs(segs[k-1].Median), Secs(segs[k].Median))})
		if r > bestRatio {
			bestRatio, knee = r, k
		}
	}
	res.Series = append(res.Series, startSeries)
	var kneeT time.Time
	if knee > 0 {
		before, after := segs[knee-1], segs[knee]
		kneeT = ok[after.Start].Start
		// The starts that succeeded before the knee (failed ones have no latency to place).
		add(MetricKneeIteration, "count", float64(after.Start), nil)
		add(MetricKneeAfter, "seconds", kneeT.Sub(t0).Seconds(), nil)
		add(MetricKneeP50Before, "seconds", before.Median, nil)
		add(MetricKneeP50After, "seconds", after.Median, nil)
		add(MetricKneeRatio, "ratio", bestRatio, nil)
		// The rule reads these windows back as times.
		res.Records = append(res.Records, result.Record{ID: "knee", Times: map[string]time.Time{
			"before": ok[before.Start].Start, "at": kneeT, "end": ok[after.End-1].Start}})
	}

	for _, nd := range in.Disks {
		diskSeries(&res, nd, kneeT, add)
	}
	return res
}

// diskSeries adds one node's disk series, their own change points, and the disk's numbers before and after the
// start-latency knee (when there is one).
func diskSeries(res *result.Result, nd NodeDisk, kneeT time.Time, add func(string, string, float64, map[string]string)) {
	l := map[string]string{"node": nd.Node, "device": nd.Device, "dir": nd.Dir}
	if len(nd.Samples) == 0 {
		reason := nd.Reason
		if reason == "" {
			reason = "no samples"
		}
		res.Records = append(res.Records, result.Record{ID: "disk/" + nd.Node, Labels: map[string]string{"not_measured": reason}})
		return
	}
	mk := func(name, unit string, f func(diskprobe.Sample) float64) result.Series {
		s := result.Series{Name: name, Unit: unit, Labels: l}
		for _, smp := range nd.Samples {
			if v := f(smp); !math.IsNaN(v) {
				s.Points = append(s.Points, result.Point{T: smp.T, V: v})
			}
		}
		return s
	}
	sync := mk("disk_sync_latency", "seconds", func(s diskprobe.Sample) float64 { return s.SyncSeconds })
	psi := mk("io_pressure", "percent", func(s diskprobe.Sample) float64 { return s.IOSomePercent })
	iops := mk("disk_iops", "per_second", func(s diskprobe.Sample) float64 { return s.ReadIOPS + s.WriteIOPS })
	dst := mk("dstate_tasks", "count", func(s diskprobe.Sample) float64 { return float64(s.DState) })

	vals := func(s result.Series, from, to time.Time) []float64 {
		var v []float64
		for _, p := range s.Points {
			if (from.IsZero() || !p.T.Before(from)) && (to.IsZero() || p.T.Before(to)) {
				v = append(v, p.V)
			}
		}
		return v
	}
	all := vals(sync, time.Time{}, time.Time{})
	if len(all) > 0 {
		s := stats.Sorted(all)
		add("disk_sync_p50", "seconds", stats.Percentile(s, 0.5), l)
		add(MetricDiskSyncP99, "seconds", stats.Percentile(s, 0.99), l)
		logs := make([]float64, len(all))
		for i, v := range all {
			logs[i] = math.Log(max(v, 1e-6))
		}
		cps := stats.Changes(logs, stats.ChangeOptions{})
		add(MetricDiskSyncChanges, "count", float64(len(cps)), l)
		segs := stats.Segments(all, cps)
		for k := 1; k < len(segs); k++ {
			sync.Marks = append(sync.Marks, result.Mark{T: sync.Points[segs[k].Start].T,
				Label: fmt.Sprintf("change: p99 %s -> %s", Secs(segs[k-1].P99), Secs(segs[k].P99))})
		}
	}
	if p := vals(psi, time.Time{}, time.Time{}); len(p) > 0 {
		add("io_pressure_mean", "percent", mean(p), l)
	}
	if !kneeT.IsZero() {
		before := func(s result.Series) []float64 { return vals(s, time.Time{}, kneeT) }
		after := func(s result.Series) []float64 { return vals(s, kneeT, time.Time{}) }
		if b, a := before(sync), after(sync); len(b) > 0 && len(a) > 0 {
			add(MetricKneeSyncBefore, "seconds", stats.Percentile(stats.Sorted(b), 0.99), l)
			pa := stats.Percentile(stats.Sorted(a), 0.99)
			add(MetricKneeSyncAfter, "seconds", pa, l)
			add(MetricKneeSyncRatio, "ratio", pa/max(stats.Percentile(stats.Sorted(b), 0.99), 1e-6), l)
		}
		if b, a := before(psi), after(psi); len(b) > 0 && len(a) > 0 {
			add(MetricKneePSIBefore, "percent", mean(b), l)
			add(MetricKneePSIAfter, "percent", mean(a), l)
		}
		if b, a := before(iops), after(iops); len(b) > 0 && len(a) > 0 {
			add(MetricKneeIOPSBefore, "per_second", stats.Median(b), l)
			add(MetricKneeIOPSAfter, "per_second", stats.Median(a), l)
		}
		if b, a := before(dst), after(dst); len(b) > 0 && len(a) > 0 {
			add(MetricKneeDStateBefore, "count", mean(b), l)
			add(MetricKneeDStateAfter, "count", mean(a), l)
		}
		mark := result.Mark{T: kneeT, Label: "start-latency change point"}
		for _, s := range []*result.Series{&sync, &psi} {
			s.Marks = append(s.Marks, mark)
		}
	}
	res.Series = append(res.Series, sync, psi, iops, dst)
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Secs formats seconds the way the findings state them (0.8 s, 9 s, 180 ms, 400 µs).
func Secs(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f s", v)
	case v >= 1:
		return fmt.Sprintf("%.1f s", v)
	case v >= 0.01:
		return fmt.Sprintf("%.0f ms", v*1e3)
	case v >= 0.001:
		return fmt.Sprintf("%.1f ms", v*1e3)
	}
	return fmt.Sprintf("%.0f µs", v*1e6)
}

// KneeHeld reports whether its so far show a knee that counts (a rise of KneeRatio or more to a median of
// KneeMinAfter or more, Analyze's) followed by at least hold successful starts, and says so.
func KneeHeld(its []Iteration, hold int) (string, bool) {
	res := Analyze(Input{Iterations: its})
	at, ratio, after := res.Metric(MetricKneeIteration, nil), res.Metric(MetricKneeRatio, nil), res.Metric(MetricKneeP50After, nil)
	before := res.Metric(MetricKneeP50Before, nil)
	if at == nil || ratio == nil || after == nil || before == nil || ratio.Value < KneeRatio || after.Value < KneeMinAfter {
		return "", false
	}
	ok := 0
	for _, it := range its {
		if !math.IsNaN(it.Latency) && it.Err == "" {
			ok++
		}
	}
	past := ok - int(at.Value)
	if past < hold {
		return "", false
	}
	return fmt.Sprintf("stopped after %d pods: start latency's knee at start %d (p50 %s -> %s) held for %d starts; more load would only hurt the node",
		len(its), int(at.Value), Secs(before.Value), Secs(after.Value), past), true
}
