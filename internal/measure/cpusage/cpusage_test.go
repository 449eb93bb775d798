package cpusage

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func snapshot(t *testing.T, at time.Time, text string) *prom.Snapshot {
	t.Helper()
	s, err := prom.Parse(strings.NewReader(text), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAnalyzeGCAndCgroup: GC pauses over the window from the summary's sum and count, and the cgroup's CPU
// time and throttling from the kernel's files read at each end of the window.
func TestAnalyzeGCAndCgroup(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	at := func(secs float64, gcSum float64, gcCount int, usageNs, periods, throttled int64) *prom.Snapshot {
		s := snapshot(t, t0.Add(time.Duration(secs*float64(time.Second))),
			"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "+ftoa(10+0.2*secs)+"\n"+
				"# TYPE go_gc_duration_seconds summary\ngo_gc_duration_seconds{quantile=\"1\"} 0.01\ngo_gc_duration_seconds_sum "+ftoa(gcSum)+
				"\ngo_gc_duration_seconds_count "+ftoa(float64(gcCount))+"\n")
		for f, v := range map[string]string{"cpuacct.usage": ftoa(float64(usageNs)),
			"cpu.stat": "nr_periods " + ftoa(float64(periods)) + "\nnr_throttled " + ftoa(float64(throttled)) + "\nthrottled_time 2000000000\n"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		AddCgroup(s, dir, dir)
		return s
	}
	first := at(0, 1.0, 500, 50e9, 1000, 100)
	last := at(20, 1.4, 700, 55e9, 1200, 280)
	res := Analyze(first, last, 0.25, "lab control-plane CPU quota")
	want := map[string]float64{
		MetricGoGCPauseShare:       0.4 / 20,
		MetricGoGCPauseMean:        0.4 / 200,
		MetricCgroupCPUCores:       5.0 / 20,
		MetricCgroupThrottledRatio: 180.0 / 200,
	}
	for name, v := range want {
		m := res.Metric(name, nil)
		if m == nil || math.Abs(m.Value-v) > 1e-9 {
			t.Errorf("%s = %+v, want %g", name, m, v)
		}
	}
	// Without the cgroup's files (a real cluster) and without a GC summary, those figures are absent.
	bare := Analyze(snapshot(t, t0, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n"),
		snapshot(t, t0.Add(20*time.Second), "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n"), 2, "lab host CPUs")
	for name := range want {
		if m := bare.Metric(name, nil); m != nil {
			t.Errorf("%s reported without its source: %+v", name, m)
		}
	}
	if bare.Status != result.StatusPass {
		t.Errorf("status %s", bare.Status)
	}
}

func ftoa(v float64) string { return strings.TrimRight(strings.TrimRight(fmtF(v), "0"), ".") }

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

// TestSaturationBases: the busiest stretch is the larger of the processes' own CPU count and the kernel's count
// of their cgroup, named by its source; the saturation is that over the cores, or the share of the window's CFS
// periods throttled when that is higher (each throttled period used the whole quota), named by its basis.
// Without the cores, there is no saturation.
func TestSaturationBases(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	series := func(name string, labels map[string]string, vs ...float64) result.Series {
		s := result.Series{Name: name, Unit: "cores", Labels: labels}
		for i, v := range vs {
			s.Points = append(s.Points, result.Point{T: t0.Add(time.Duration(i) * 2 * time.Second), V: v})
		}
		return s
	}
	all := map[string]string{"component": All}
	for _, c := range []struct {
		name                 string
		process, cgroup      []float64
		cores, throttledWin  float64
		wantBusiest, wantSat float64
		wantSource, wantBase string
	}{
		{"process count", []float64{0.5, 1.8, 1.9, 1.9, 0.4}, nil, 2, 0, 1.8666, 0.9333, BasisProcessCPU, BasisProcessCPU},
		{"starved: the kernel's count is higher", []float64{0.05, 0.06, 0.07}, []float64{0.1, 0.1, 0.1}, 0.1, 0, 0.1, 1, BasisCgroupCPU, BasisCgroupCPU},
		{"throttled periods bound it", []float64{0.05, 0.06, 0.07}, nil, 0.1, 0.97, 0.06, 0.97, BasisProcessCPU, BasisThrottled},
		{"no cores", []float64{1, 1, 1}, nil, 0, 0, 1, -1, BasisProcessCPU, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := result.Result{Series: []result.Series{series(MetricCPUCores, all, c.process...)}}
			if c.cgroup != nil {
				res.Series = append(res.Series, series(MetricCgroupCPUCores, nil, c.cgroup...))
			}
			if c.cores > 0 {
				res.Metrics = append(res.Metrics, result.Metric{Name: MetricCoresAvailable, Unit: "cores", Value: c.cores})
			}
			if c.throttledWin > 0 {
				res.Metrics = append(res.Metrics, result.Metric{Name: MetricCgroupThrottledWindowShare, Unit: "ratio", Value: c.throttledWin})
			}
			FromSteps(&res)
			b := res.Metric(MetricCPUCoresBusiest, nil)
			if b == nil || math.Abs(b.Value-c.wantBusiest) > 0.001 || b.Labels["source"] != c.wantSource {
				t.Errorf("busiest %+v, want %g by %s", b, c.wantBusiest, c.wantSource)
			}
			s := res.Metric(MetricCPUSaturation, nil)
			if c.wantSat < 0 {
				if s != nil {
					t.Errorf("saturation %+v without the cores", s)
				}
				return
			}
			if s == nil || math.Abs(s.Value-c.wantSat) > 0.001 || s.Labels["basis"] != c.wantBase {
				t.Errorf("saturation %+v, want %g by %s", s, c.wantSat, c.wantBase)
			}
		})
	}
}

// TestCoresOutOfReach: with the cores unknown (a control plane outside every node), the verdict rests on the
// API tier and says so, listing the components' CPU and etcd as out of reach; without even the apiserver's
// scheduling delay there is nothing to judge by, which is a Skip, never a Pass.
func TestCoresOutOfReach(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	cpuOnly := "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n"
	sched := "# TYPE go_sched_latencies_seconds histogram\ngo_sched_latencies_seconds_bucket{le=\"0.001\"} %d\ngo_sched_latencies_seconds_bucket{le=\"+Inf\"} %d\ngo_sched_latencies_seconds_sum 0\ngo_sched_latencies_seconds_count %d\n"
	with := Analyze(snapshot(t, t0, fmt.Sprintf(cpuOnly, 10.0)+fmt.Sprintf(sched, 0, 0, 0)), snapshot(t, t0.Add(20*time.Second), fmt.Sprintf(cpuOnly, 12.0)+fmt.Sprintf(sched, 900, 1000, 1000)), 0, "")
	if with.Status != result.StatusPass || !strings.Contains(with.Reason, "judged from the API tier only") || len(with.OutOfReach) != 2 {
		t.Errorf("API tier readable: %s %q, %d out of reach", with.Status, with.Reason, len(with.OutOfReach))
	}
	without := Analyze(snapshot(t, t0, fmt.Sprintf(cpuOnly, 10.0)), snapshot(t, t0.Add(20*time.Second), fmt.Sprintf(cpuOnly, 12.0)), 0, "")
	if without.Status != result.StatusSkip || !strings.Contains(without.Reason, "nothing to judge") {
		t.Errorf("nothing to judge by: %s %q", without.Status, without.Reason)
	}
	for _, o := range append(with.OutOfReach, without.OutOfReach...) {
		if o.Fix == "" || o.Why == "" {
			t.Errorf("out of reach without why or fix: %+v", o)
		}
	}
	known := Analyze(snapshot(t, t0, fmt.Sprintf(cpuOnly, 10.0)), snapshot(t, t0.Add(20*time.Second), fmt.Sprintf(cpuOnly, 12.0)), 4, "control-plane node capacity")
	if known.Status != result.StatusPass {
		t.Errorf("cores known: %s %q", known.Status, known.Reason)
	}
}

// TestBusiestUnderLateScrapes: a control plane using its 2 cores to the full, scraped every 2 s, whose
// apiserver wrote one answer's counters on time (at 4 s) but delivered it 1.5 s late. Each snapshot is stamped
// at its answer, so the interval after the late one looked 0.6 s long for 2 s of counters: 6.7 cores of 2, and a
// busiest stretch of 3.6 (CI's starved lab said 2.4 of 2). No interval is taken shorter than the step, and the
// busiest stretch is at most the cores, with a note saying why when the data still exceed them.
func TestBusiestUnderLateScrapes(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	// (counter read at, answered at) per scrape, the process using 2 cores.
	scrapes := [][2]float64{{0, 0.1}, {2, 2.1}, {4, 5.5}, {6, 6.1}, {8, 8.1}, {10, 10.1}, {12, 12.1}}
	var snaps []*prom.Snapshot
	for _, s := range scrapes {
		snaps = append(snaps, snapshot(t, t0.Add(time.Duration(s[1]*float64(time.Second))),
			"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "+ftoa(100+2*s[0])+"\n"))
	}
	ser := result.Series{Name: MetricCPUCores, Unit: "cores", Labels: map[string]string{"component": All}}
	for i := 1; i < len(snaps); i++ {
		for _, m := range Step(snaps[i-1], snaps[i]) {
			if m.Labels["component"] == All {
				ser.Points = append(ser.Points, result.Point{T: snaps[i].At, V: m.Value})
				if m.Value > 2+1e-9 {
					t.Errorf("step to %s: %.2f cores of 2", snaps[i].At.Sub(t0), m.Value)
				}
			}
		}
	}
	res := result.Result{Series: []result.Series{ser}, Metrics: []result.Metric{{Name: MetricCoresAvailable, Unit: "cores", Value: 2}}}
	FromSteps(&res)
	if b := res.Metric(MetricCPUCoresBusiest, nil); b == nil || b.Value > 2 || b.Value < 1.5 {
		t.Errorf("busiest %+v, want at most 2 (and near it)", b)
	}

	// Data that still exceed the cores are bounded by them, saying so.
	over := result.Result{Series: []result.Series{{Name: MetricCPUCores, Unit: "cores", Labels: map[string]string{"component": All},
		Points: []result.Point{{T: t0, V: 2.4}, {T: t0.Add(2 * time.Second), V: 2.4}, {T: t0.Add(4 * time.Second), V: 2.4}}}},
		Metrics: []result.Metric{{Name: MetricCoresAvailable, Unit: "cores", Value: 2}}}
	FromSteps(&over)
	b := over.Metric(MetricCPUCoresBusiest, nil)
	if b == nil || b.Value != 2 || b.Labels["measured"] == "" || !strings.Contains(over.Reason, "bounded to 2") || !strings.Contains(over.Reason, "late") {
		t.Errorf("bounded: %+v, reason %q", b, over.Reason)
	}
	if s := over.Metric(MetricCPUSaturation, nil); s == nil || s.Value > 1 {
		t.Errorf("saturation %+v", s)
	}
}
