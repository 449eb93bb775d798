package churn_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/bench/churn/churntest"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func metric(t *testing.T, r result.Result, name string) float64 {
	t.Helper()
	m := r.Metric(name, nil)
	if m == nil {
		t.Fatalf("no metric %s in %+v", name, r.Metrics)
	}
	return m.Value
}

// The knee of case C is found where it is, with the numbers before and after, and the disk's numbers split at
// the same moment.
func TestAnalyzeCreditsKnee(t *testing.T) {
	in := churntest.Credits.Input()
	res := churn.Analyze(in)
	// The true knee: the first iteration started at or after 4 min.
	trueKnee := -1
	for _, it := range in.Iterations {
		if it.Start.Sub(in.Iterations[0].Start) >= 4*time.Minute {
			trueKnee = it.Index
			break
		}
	}
	got := metric(t, res, churn.MetricKneeIteration)
	if math.Abs(got-float64(trueKnee)) > 2 {
		t.Errorf("knee at iteration %v, true knee %d", got, trueKnee)
	}
	if b, a := metric(t, res, churn.MetricKneeP50Before), metric(t, res, churn.MetricKneeP50After); math.Abs(b/0.8-1) > 0.1 || math.Abs(a/9-1) > 0.1 {
		t.Errorf("p50 %v -> %v, want 0.8 -> 9", b, a)
	}
	if at := metric(t, res, churn.MetricKneeAfter); math.Abs(at-240) > 10 {
		t.Errorf("knee after %v s, want 240", at)
	}
	sb, sa := res.Metric(churn.MetricKneeSyncBefore, map[string]string{"node": "lab-node-1"}), res.Metric(churn.MetricKneeSyncAfter, nil)
	if sb == nil || sa == nil || sb.Value > 0.005 || sa.Value < 0.1 {
		t.Errorf("sync p99 around the knee: %+v %+v", sb, sa)
	}
	if pb, pa := res.Metric(churn.MetricKneePSIBefore, nil), res.Metric(churn.MetricKneePSIAfter, nil); pb == nil || pa == nil || pb.Value > 5 || pa.Value < 60 {
		t.Errorf("pressure around the knee: %+v %+v", pb, pa)
	}
	// Series with the change point marked on start latency, sync latency and pressure.
	marked := map[string]bool{}
	for _, s := range res.Series {
		if len(s.Points) == 0 {
			t.Errorf("series %s has no points", s.Name)
		}
		for _, mk := range s.Marks {
			if strings.Contains(mk.Label, "change") {
				marked[s.Name] = true
			}
		}
	}
	for _, n := range []string{"start_latency", "disk_sync_latency", "io_pressure"} {
		if !marked[n] {
			t.Errorf("series %s has no change mark", n)
		}
	}
	if err := (&result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "x", Results: []result.Result{res}, Findings: []result.Finding{}}).Validate(); err != nil {
		t.Errorf("invalid result: %v", err)
	}
}

// A steady run, fast or slow, has no knee; a steady slow disk has no change of its own.
func TestAnalyzeSteady(t *testing.T) {
	for name, m := range map[string]churntest.Model{"healthy": churntest.Healthy, "steady slow disk": churntest.SteadySlowDisk} {
		res := churn.Analyze(m.Input())
		if res.Metric(churn.MetricKneeIteration, nil) != nil {
			t.Errorf("%s: a knee: %+v", name, res.Metrics)
		}
		if c := res.Metric(churn.MetricDiskSyncChanges, nil); c == nil || c.Value != 0 {
			t.Errorf("%s: disk changes %+v", name, c)
		}
	}
}

func TestAnalyzeEdges(t *testing.T) {
	if res := churn.Analyze(churn.Input{}); res.Status != result.StatusError {
		t.Errorf("no iterations: %s", res.Status)
	}
	failed := churn.Input{Iterations: []churn.Iteration{{Latency: math.NaN(), Err: "not Running after 2m0s"}}}
	if res := churn.Analyze(failed); res.Status != result.StatusError || metric(t, res, "failed") != 1 {
		t.Errorf("all failed: %s %+v", res.Status, res.Metrics)
	}
	in := churntest.CreditsNoDisk.Input()
	res := churn.Analyze(in)
	var rec *result.Record
	for i := range res.Records {
		if res.Records[i].ID == "disk/lab-node-1" {
			rec = &res.Records[i]
		}
	}
	if rec == nil || rec.Labels["not_measured"] == "" {
		t.Errorf("an unsampled disk is not said to be unmeasured: %+v", res.Records)
	}
}

func TestSecs(t *testing.T) {
	for v, want := range map[float64]string{0.8: "800 ms", 9: "9.0 s", 82: "82 s", 0.0004: "400 µs", 0.18: "180 ms", 0.0025: "2.5 ms"} {
		if got := churn.Secs(v); got != want {
			t.Errorf("Secs(%v) = %q, want %q", v, got, want)
		}
	}
}

// The report page draws the three series with the change point marked on each.
func TestReportPlotsMarks(t *testing.T) {
	res := churn.Analyze(churntest.Credits.Input())
	rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "x", Results: []result.Result{res}, Findings: []result.Finding{}}
	var b strings.Builder
	if err := report.WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"start_latency", "disk_sync_latency", "io_pressure", "start-latency change point", "change: p50"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The run stops once the knee has held for the starts asked, not before, and never on a steady run.
func TestKneeHeld(t *testing.T) {
	all := churntest.Credits.Input().Iterations
	knee := int(metric(t, churn.Analyze(churntest.Credits.Input()), churn.MetricKneeIteration))
	if why, ok := churn.KneeHeld(all[:knee+5], 20); ok {
		t.Errorf("5 starts past the knee: stopped (%s)", why)
	}
	why, ok := churn.KneeHeld(all[:knee+25], 20)
	if !ok || !strings.Contains(why, "held for") {
		t.Fatalf("25 starts past the knee at %d: not stopped (%q)", knee, why)
	}
	t.Log(why)
	for name, m := range map[string]churntest.Model{"healthy": churntest.Healthy, "steady slow disk": churntest.SteadySlowDisk} {
		if why, ok := churn.KneeHeld(m.Input().Iterations, 20); ok {
			t.Errorf("%s: stopped (%s)", name, why)
		}
	}
}
