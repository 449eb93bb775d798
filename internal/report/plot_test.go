package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// plotSamples are results of the other kinds the report plots: bench net's path matrix (medians with their
// spread, ratios to the host) and a long observation window sampled at a fixed step with change points.
func plotSamples() []result.Result {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	np := result.Result{Name: "net.paths", Status: result.StatusPass, Start: t0, End: t0.Add(2 * time.Minute)}
	for i, p := range []string{"host->host", "host->pod", "pod->pod same node", "pod->pod other node", "pod->Service", "host->NodePort"} {
		f := []float64{1, 0.75, 0.98, 0.66, 0.62, 0.8}[i]
		fn := []float64{1, 0.88, 0.88, 0.8, 0.28, 0.3}[i]
		for _, c := range []struct {
			conn    string
			v, f    float64
			name, u string
		}{{"keepalive", 41000, f, "rps", "requests_per_second"}, {"new", 10000, fn, "rps", "requests_per_second"}, {"stream", 12, 1 - 0.02*float64(i), "stream_gbit", "gbit_per_second"}} {
			l := map[string]string{"path": p, "conn": c.conn}
			med := c.v * c.f
			np.Metrics = append(np.Metrics, result.Metric{Name: c.name, Unit: c.u, Value: med, Labels: l},
				result.Metric{Name: c.name + "_min", Unit: c.u, Value: med * 0.85, Labels: l},
				result.Metric{Name: c.name + "_max", Unit: c.u, Value: med * 1.05, Labels: l},
				result.Metric{Name: "ratio_to_host", Unit: "ratio", Value: c.f, Labels: l})
		}
	}
	// 30 minutes at a 1 s step: a daily-ish wave, noise, a burst-credit cliff at 20 min, one spike.
	disk := result.Result{Name: "disk.sync", Status: result.StatusWarn, Start: t0, End: t0.Add(30 * time.Minute)}
	s := result.Series{Name: "fsync_p99", Unit: "seconds", Labels: map[string]string{"node": "n1"}, Marks: []result.Mark{
		{T: t0.Add(20 * time.Minute), Label: "change point: 4.1x"}, {T: t0.Add(20*time.Minute + 20*time.Second), Label: "burst credits out"},
		{T: t0.Add(5 * time.Minute), Label: "fault injected"}}}
	for i := range 1800 {
		v := 0.004 + 0.001*math.Sin(float64(i)/120) + 0.0008*math.Sin(float64(i)*7.3)
		if i >= 1200 {
			v *= 4
		}
		if i == 600 {
			v = 0.05
		}
		s.Points = append(s.Points, result.Point{T: t0.Add(time.Duration(i) * time.Second), V: v})
	}
	disk.Series = []result.Series{s}
	return []result.Result{np, disk}
}

func TestSeriesPlotManyPoints(t *testing.T) {
	disk := plotSamples()[1]
	svg, ok := seriesPlot(disk.Series)
	if !ok {
		t.Fatal("no plot")
	}
	page := string(svg)
	// 1,800 samples over ~690 pixel columns: each column's min and max, not 1,800 points and no dots.
	if n := strings.Count(page, ","); n > 2*2*plotWidth {
		t.Errorf("%d coordinates for %d pixel columns", n, plotWidth)
	}
	if strings.Contains(page, "<circle") {
		t.Error("a dot per sample for 1,800 samples")
	}
	// The one-sample spike survives the thinning: some point sits at the spike's height.
	m := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no viewBox")
	}
	ys := regexp.MustCompile(`[ "]([0-9.]+),([0-9.]+)`).FindAllStringSubmatch(page[strings.Index(page, "<polyline"):], -1)
	top := math.Inf(1)
	for _, y := range ys {
		v, _ := strconv.ParseFloat(y[2], 64)
		top = math.Min(top, v)
	}
	if h, _ := strconv.ParseFloat(m[2], 64); top > h/3 {
		t.Errorf("highest point at y=%.0f of %.0f: the spike was lost", top, h)
	}
	// Three marks, two 20 s apart: every label drawn, the close ones on different rows.
	for _, l := range []string{"change point: 4.1x", "burst credits out", "fault injected", "time since 03:00:00 UTC (1800 samples)", "25 min", "seconds"} {
		if !strings.Contains(page, l) {
			t.Errorf("plot lacks %q", l)
		}
	}
	yOf := func(label string) string {
		m := regexp.MustCompile(`y="([0-9.]+)"[^>]*>` + regexp.QuoteMeta(label) + "<").FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no label %q", label)
		}
		return m[1]
	}
	if yOf("change point: 4.1x") == yOf("burst credits out") {
		t.Error("labels of marks 20 s apart on one row (they overlap)")
	}
	// Few samples: a dot for each.
	few := result.Series{Name: "x", Unit: "count"}
	for i := range 10 {
		few.Points = append(few.Points, result.Point{T: time.Unix(int64(i), 0), V: float64(i)})
	}
	svg, _ = seriesPlot([]result.Series{few})
	if n := strings.Count(string(svg), "<circle"); n != 10 {
		t.Errorf("%d dots for 10 samples", n)
	}
}

func TestPhaseCDFPlot(t *testing.T) {
	var recs []result.Record
	for i := range 200 {
		recs = append(recs, result.Record{ID: fmt.Sprint(i), Values: map[string]float64{"schedule_seconds": 0.002 + float64(i)/1e5,
			"sandbox_seconds": 0.3, "start_seconds": 1 + float64(i)/100, "pull_seconds": 0, "sli_seconds": 1.4 + float64(i)/100}})
	}
	svg, ok := phaseCDFPlot(recs)
	if !ok {
		t.Fatal("no plot")
	}
	page := string(svg)
	for _, want := range []string{"seconds (log scale)", "fraction of pods ≤ x", "start-up SLI (total)", "schedule", "sandbox", "over 200 pods", "1 ms", "10 s"} {
		if !strings.Contains(page, want) {
			t.Errorf("CDF lacks %q", want)
		}
	}
	if strings.Contains(page, ">pull<") {
		t.Error("a curve for a phase that never took time")
	}
	if n := strings.Count(page, "<polyline"); n != 4 {
		t.Errorf("%d curves, want 4 (schedule, sandbox, start, SLI)", n)
	}
}

func TestPathPlots(t *testing.T) {
	np := plotSamples()[0]
	plots := spreadPlots(np.Metrics)
	if len(plots) != 3 {
		t.Fatalf("%d spread plots, want 3 (rps keep-alive, rps new, stream)", len(plots))
	}
	for i, want := range []string{"rps (conn=keepalive)", "rps (conn=new)", "stream_gbit (conn=stream)"} {
		if p := string(plots[i]); !strings.Contains(p, want) || !strings.Contains(p, "min–max over the repeats") || !strings.Contains(p, ">pod-&gt;Service<") {
			t.Errorf("plot %d lacks %q or its legend or a path", i, want)
		}
	}
	svg, ok := ratioPlot(np.Metrics)
	if !ok {
		t.Fatal("no ratio plot")
	}
	for _, want := range []string{"HTTP keep-alive", "HTTP new connection per request", "TCP stream", ">0.28<", `class="ref"`, "finding&#39;s threshold"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("ratio plot lacks %q", want)
		}
	}
}

// longSeries is n samples at a 100 ms step with one spike in the middle.
func longSeries(n int) result.Series {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	s := result.Series{Name: "x", Unit: "seconds", Marks: []result.Mark{{T: t0.Add(time.Duration(n/2) * 100 * time.Millisecond), Label: "change"}}}
	for i := range n {
		v := 1 + 0.1*math.Sin(float64(i))
		if i == n/3 {
			v = 50
		}
		s.Points = append(s.Points, result.Point{T: t0.Add(time.Duration(i) * 100 * time.Millisecond), V: v})
	}
	return s
}

// TestSeriesPlotSize: 100,000 samples make a plot of the size of 1,000 (a column's min and max), spike kept.
func TestSeriesPlotSize(t *testing.T) {
	big, _ := seriesPlot([]result.Series{longSeries(100000)})
	small, _ := seriesPlot([]result.Series{longSeries(1000)})
	if len(big) > 2*len(small) || len(big) > 64<<10 {
		t.Errorf("100,000 samples: %d bytes; 1,000 samples: %d bytes", len(big), len(small))
	}
	if !strings.Contains(string(big), ">50<") {
		t.Error("the y axis does not reach the spike")
	}
}

func BenchmarkSeriesPlot100k(b *testing.B) {
	s := []result.Series{longSeries(100000)}
	for b.Loop() {
		seriesPlot(s)
	}
}
