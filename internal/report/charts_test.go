package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
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

// TestWriteSamplePage writes the sample report's page for a look in a browser (KUBESLOW_SAMPLE_HTML=path).
func TestWriteSamplePage(t *testing.T) {
	path := os.Getenv("KUBESLOW_SAMPLE_HTML")
	if path == "" {
		t.Skip("set KUBESLOW_SAMPLE_HTML to a file to write")
	}
	rep := fullSample()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteHTML(f, rep); err != nil {
		t.Fatal(err)
	}
	after := fullSample()
	for i := range after.Results {
		for j := range after.Results[i].Series {
			for k := range after.Results[i].Series[j].Points {
				after.Results[i].Series[j].Points[k].V *= 1.5
			}
		}
		for j := range after.Results[i].Metrics {
			after.Results[i].Metrics[j].Value *= 1.3
		}
	}
	var b bytes.Buffer
	if err := WriteDiffHTML(&b, rep, after, Compare(rep, after, DefaultTolerance)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".html")+"-diff.html", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// moreSamples are the results of the other plots: an observed control plane window under a load (series,
// load span, quantiles estimated within histogram buckets), churn (start latency and disk sync on one time
// axis with the knee), DNS lag per pod and latency per replica, a Prometheus window's onsets.
func moreSamples() []result.Result {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	cp := result.Result{Name: "api.responsiveness", Status: result.StatusWarn, Reason: "mutating p99 above 1 s", Start: t0, End: t0.Add(10 * time.Minute), Observed: true,
		Load: []result.Span{{Name: "pods.startup", Start: t0.Add(2 * time.Minute), End: t0.Add(7 * time.Minute)}}}
	for _, q := range []struct {
		verb           string
		p50, p90, p99  float64
		b50, b90, b99  [2]float64
		max            float64
		estimatedAbove bool
	}{{"GET", 0.004, 0.02, 0.0495, [2]float64{0.0025, 0.005}, [2]float64{0.01, 0.025}, [2]float64{0.025, 0.05}, 0.08, true},
		{"POST", 0.03, 0.4, 1.8, [2]float64{0.025, 0.05}, [2]float64{0.25, 0.5}, [2]float64{1, 2}, 2.4, true}} {
		l := map[string]string{"verb": q.verb}
		cp.Metrics = append(cp.Metrics,
			result.Metric{Name: "request_latency_p50", Unit: "seconds", Value: q.p50, Labels: l, Bounds: &result.Bounds{Lower: q.b50[0], Upper: q.b50[1]}},
			result.Metric{Name: "request_latency_p90", Unit: "seconds", Value: q.p90, Labels: l, Bounds: &result.Bounds{Lower: q.b90[0], Upper: q.b90[1]}},
			result.Metric{Name: "request_latency_p99", Unit: "seconds", Value: q.p99, Labels: l, Bounds: &result.Bounds{Lower: q.b99[0], Upper: q.b99[1]}},
			result.Metric{Name: "request_latency_max", Unit: "seconds", Value: q.max, Labels: l})
	}
	cp.Metrics = append(cp.Metrics, result.Metric{Name: "latency_p99_single", Unit: "seconds", Value: 0.0495, Bounds: &result.Bounds{Lower: 0.025, Upper: 0.05}})
	lat := result.Series{Name: "request_latency_p99", Unit: "seconds", Labels: map[string]string{"verb": "POST"}}
	apf := result.Series{Name: "apf_wait_p99", Unit: "seconds", Labels: map[string]string{"priority_level": "workload-low"}}
	cpu := result.Series{Name: "apiserver_cpu", Unit: "cores"}
	for i := range 60 {
		at := t0.Add(time.Duration(i*10) * time.Second)
		load := 0.0
		if i >= 12 && i < 42 {
			load = 1
		}
		lat.Points = append(lat.Points, result.Point{T: at, V: 0.05 + 1.6*load*float64(i-11)/30})
		apf.Points = append(apf.Points, result.Point{T: at, V: 0.001 + 0.3*load})
		cpu.Points = append(cpu.Points, result.Point{T: at, V: 0.2 + 1.7*load})
	}
	cp.Series = []result.Series{lat, apf, cpu}

	churn := result.Result{Name: "pods.churn", Status: result.StatusFail, Reason: "start latency p50 went from 0.9 s to 4.2 s", Start: t0, End: t0.Add(20 * time.Minute)}
	knee := t0.Add(12 * time.Minute)
	st := result.Series{Name: "start_latency", Unit: "seconds", Marks: []result.Mark{{T: knee, Label: "change: p50 0.9 s -> 4.2 s"}}}
	for i := range 1200 {
		v := 0.9 + 0.2*math.Sin(float64(i)*1.7)
		if i >= 720 {
			v = 4.2 + 0.8*math.Sin(float64(i)*2.3)
		}
		st.Points = append(st.Points, result.Point{T: t0.Add(time.Duration(i) * time.Second), V: v})
	}
	sync := result.Series{Name: "disk_sync_latency", Unit: "seconds", Labels: map[string]string{"node": "lab-node-1", "device": "vda"},
		Marks: []result.Mark{{T: knee.Add(-20 * time.Second), Label: "change: p99 2 ms -> 40 ms"}, {T: knee, Label: "start-latency change point"}}}
	for i := range 240 {
		v := 0.002
		if i >= 140 {
			v = 0.04
		}
		sync.Points = append(sync.Points, result.Point{T: t0.Add(time.Duration(i*5) * time.Second), V: v})
	}
	churn.Series = []result.Series{st, sync}
	churn.Metrics = []result.Metric{{Name: "start_p50", Unit: "seconds", Value: 1.9}, {Name: "knee_ratio", Unit: "ratio", Value: 4.7}}

	dns := result.Result{Name: "dns.readiness", Status: result.StatusWarn, Reason: "3 of 12 names resolved more than 5 s after their pod was Ready", Start: t0, End: t0.Add(time.Minute)}
	for i := range 12 {
		lag := 0.2 + 0.05*float64(i)
		if i%4 == 3 {
			lag = 5 + float64(i)/4
		}
		dns.Records = append(dns.Records, result.Record{ID: fmt.Sprintf("default/peer-%d", i), Labels: map[string]string{"name": fmt.Sprintf("peer-%d.peers", i)},
			Values: map[string]float64{"dns_lag_seconds": lag, "endpoint_lag_seconds": 0.1 + 0.01*float64(i), "attempts": 3}})
	}
	load := result.Result{Name: "dns.load", Status: result.StatusPass, Start: t0, End: t0.Add(time.Minute)}
	for i, rep := range []string{"service", "coredns-a (lab-node-1)", "coredns-b (lab-node-1)", "coredns-c (lab-node-2)"} {
		l := map[string]string{"target": rep}
		f := []float64{1.5, 1, 3.2, 1}[i]
		load.Metrics = append(load.Metrics, result.Metric{Name: "latency_p50", Unit: "seconds", Value: 0.0008 * f, Labels: l},
			result.Metric{Name: "latency_p99", Unit: "seconds", Value: 0.004 * f, Labels: l}, result.Metric{Name: "latency_max", Unit: "seconds", Value: 0.012 * f, Labels: l})
	}
	tl := result.Result{Name: "prometheus.timeline", Status: result.StatusPass, Start: t0, End: t0.Add(30 * time.Minute)}
	for i, w := range []string{"etcd WAL fsync p99", "apiserver mutating p99", "APF queue wait p99", "pod start-up p99"} {
		tl.Records = append(tl.Records, result.Record{ID: w, Labels: map[string]string{"what": w}, Values: map[string]float64{"value": 1, "threshold": 0.5},
			Times: map[string]time.Time{"onset": t0.Add(time.Duration(300+i*45) * time.Second)}})
	}
	return []result.Result{cp, churn, dns, load, tl}
}

// fullSample is the sample report with every kind of plot.
func fullSample() *result.Report {
	rep := sampleReport()
	rep.Results = append(rep.Results, plotSamples()...)
	rep.Results = append(rep.Results, moreSamples()...)
	rep.Findings = append(rep.Findings, result.Finding{ID: "KS-CP-SATURATED", Severity: result.SeverityCritical, Title: "The control plane is out of CPU",
		Summary:     "the apiserver used 1.9 of its 2 cores (95 %) while pods started; mutating requests waited 0.3 s in APF queues",
		Evidence:    []result.Evidence{{Name: "cpu_ratio", Value: 0.95, Unit: "ratio", Result: "api.responsiveness"}},
		Threshold:   result.Threshold{Op: ">", Value: 0.9, Unit: "ratio", Source: "kubeslow: a control plane above 90 % of its CPU queues requests"},
		Remediation: "give the control plane more CPU (or lower the client QPS of the controllers)", Cases: []string{"D"}, Results: []string{"api.responsiveness"}})
	for i := range rep.Findings {
		if rep.Findings[i].ID == "KS-POD-SLO" {
			rep.Findings[i].ExplainedBy, rep.Findings[i].Severity = "KS-CP-SATURATED", result.SeverityInfo
		}
	}
	return rep
}

func chartsOf(t *testing.T, rep *result.Report, name string) []chartSpec {
	t.Helper()
	res := rep.Result(name)
	if res == nil {
		t.Fatalf("no result %s", name)
	}
	return resultCharts(rep, *res)
}

func TestCausesNestSymptoms(t *testing.T) {
	cs := causes(fullSample().Findings)
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	// KS-POD-SLO is explained by KS-CP-SATURATED: a symptom under it, not a cause of its own.
	if len(cs) != 2 || cs[0].ID != "KS-CP-SATURATED" || cs[1].ID != "KS-POD-NODE" {
		t.Fatalf("causes %v, want KS-CP-SATURATED, KS-POD-NODE", ids)
	}
	if len(cs[0].Symptoms) != 1 || cs[0].Symptoms[0].ID != "KS-POD-SLO" || cs[0].Key != "0.95" || cs[1].Key != "5.4" {
		t.Errorf("cause 1: symptoms %v, key %q; cause 2 key %q", cs[0].Symptoms, cs[0].Key, cs[1].Key)
	}
	// A finding explained by one absent from the report stays a cause.
	fs := []result.Finding{{ID: "A", Severity: result.SeverityInfo, ExplainedBy: "GONE", Evidence: []result.Evidence{{Value: 1, Unit: "seconds"}}}}
	if cs := causes(fs); len(cs) != 1 || cs[0].Key != "1 s" {
		t.Errorf("orphan symptom: %+v", cs)
	}
}

// TestEstimates: a quantile interpolated within a histogram bucket reads as an estimate with its bucket, in
// the tables and in the plot (a whisker over the bucket).
func TestEstimates(t *testing.T) {
	rep := fullSample()
	var b bytes.Buffer
	if err := WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`title="estimate, within bucket [0.025, 0.05]">≈0.0495</span>`, "(estimate, within bucket [0.025, 0.05])"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	cs := chartsOf(t, rep, "api.responsiveness")
	if cs[0].key != "quantiles:seconds" {
		t.Fatalf("first chart %q", cs[0].key)
	}
	p99 := cs[0].Panels[0].Series[2]
	if p99.Name != "p99" || p99.Whisker != "estimate, within histogram bucket" || *p99.Lo[1] != 1 || *p99.Hi[1] != 2 || *p99.Values[1] != 1.8 {
		t.Errorf("p99 series %+v", p99)
	}
	if mx := cs[0].Panels[0].Series[3]; mx.Lo != nil {
		t.Error("the max (not an estimate) has a whisker")
	}
	if !strings.Contains(cs[0].Note, "6 of these values are estimates") {
		t.Errorf("note %q", cs[0].Note)
	}
}

func TestThinKeepsSpikes(t *testing.T) {
	t0 := time.Unix(0, 0)
	var pts []result.Point
	for i := range 100000 {
		v := 1.0
		if i == 31337 {
			v = 50
		}
		pts = append(pts, result.Point{T: t0.Add(time.Duration(i) * 100 * time.Millisecond), V: v})
	}
	pts = append(pts, result.Point{T: t0, V: math.NaN()})
	out := thin(pts)
	if len(out) > maxPoints || len(out) < maxPoints/2 {
		t.Fatalf("%d points", len(out))
	}
	top := 0.0
	for i, p := range out {
		top = math.Max(top, float64(p[1]))
		if i > 0 && p[0] < out[i-1][0] {
			t.Fatal("points out of time order")
		}
	}
	if top != 50 {
		t.Errorf("the spike was lost: max %v", top)
	}
	if n := len(thin(pts[:500])); n != 500 {
		t.Errorf("500 points thinned to %d", n)
	}
}

// TestTimeCharts: a result's series share one time axis, a panel per quantity, with their marks; an
// observed window's load is shaded.
func TestTimeCharts(t *testing.T) {
	rep := fullSample()
	cs := chartsOf(t, rep, "pods.churn")
	if len(cs) != 1 || cs[0].Kind != "time" || len(cs[0].Panels) != 2 {
		t.Fatalf("churn: %d charts", len(cs))
	}
	start, sync := cs[0].Panels[0], cs[0].Panels[1]
	if start.Title != "start_latency (seconds)" || sync.Title != "disk_sync_latency (seconds)" || len(start.Lines) != 1 || len(sync.Lines) != 2 ||
		sync.Lines[1].Label != "start-latency change point" || sync.Lines[1].V != start.Lines[0].V {
		t.Errorf("churn panels: %+v %+v", start.Lines, sync.Lines)
	}
	cp := chartsOf(t, rep, "api.responsiveness")
	tc := cp[len(cp)-1]
	if tc.Kind != "time" || len(tc.Panels) != 3 || len(tc.Spans) != 1 || tc.Spans[0].Name != "pods.startup" || tc.Spans[0].End-tc.Spans[0].Start != 300000 {
		t.Errorf("control plane: %+v", tc.Spans)
	}
}

func TestOnsetOrder(t *testing.T) {
	cs := chartsOf(t, fullSample(), "prometheus.timeline")
	if len(cs) != 1 || cs[0].key != "onsets" {
		t.Fatalf("%d charts", len(cs))
	}
	c := cs[0]
	if c.Cats[0] != "1. etcd WAL fsync p99 (03:05:00)" || c.Cats[3] != "4. pod start-up p99 (03:07:15)" || *c.Panels[0].Series[0].Values[3] != 435 {
		t.Errorf("onsets %v %v", c.Cats, *c.Panels[0].Series[0].Values[3])
	}
}

func TestCDFAndNodes(t *testing.T) {
	var recs []result.Record
	for i := range 2000 {
		recs = append(recs, result.Record{ID: fmt.Sprint(i), Labels: map[string]string{"node": fmt.Sprintf("n%d", i%4)}, Values: map[string]float64{"schedule_seconds": 0.002 + float64(i)/1e5,
			"sandbox_seconds": 0.3 + 2*float64(i%4/3), "start_seconds": 1 + float64(i)/1000, "pull_seconds": 0, "sli_seconds": 1.4 + float64(i)/1000}})
	}
	rep := &result.Report{Results: []result.Result{{Name: "pods.startup", Records: recs}}}
	cs := resultCharts(rep, rep.Results[0])
	if len(cs) != 2 || cs[0].Kind != "cdf" || cs[1].key != "nodes" {
		t.Fatalf("%d charts", len(cs))
	}
	cdf := cs[0]
	var names []string
	for _, s := range cdf.Panels[0].Series {
		names = append(names, s.Name)
		if len(s.Points) > cdfPoints+1 || s.Points[len(s.Points)-1][1] != 1 {
			t.Errorf("%s: %d points, last %v", s.Name, len(s.Points), s.Points[len(s.Points)-1])
		}
	}
	if strings.Join(names, ",") != "schedule,sandbox,start,start-up SLI (total)" || !cdf.Log || cdf.Panels[0].Lines[0].V != 5 {
		t.Errorf("cdf: %v log %v lines %v", names, cdf.Log, cdf.Panels[0].Lines)
	}
	if n := cs[1]; n.Cats[0] != "n3 (500 pods)" || !n.Panels[0].Stack {
		t.Errorf("the slow node is not first: %v", n.Cats)
	}
}

// TestDiffCharts: each plot of the second run carries the first run's series, named "(before)", on the
// same categories or time axis.
func TestDiffCharts(t *testing.T) {
	a, b := fullSample(), fullSample()
	b.Start = b.Start.Add(time.Hour)
	for i := range b.Results {
		r := &b.Results[i]
		for j := range r.Series {
			for k := range r.Series[j].Points {
				r.Series[j].Points[k].T = r.Series[j].Points[k].T.Add(time.Hour)
				r.Series[j].Points[k].V *= 2
			}
		}
	}
	cs := diffCharts(a, b, *a.Result("pods.startup"), *b.Result("pods.startup"))
	if len(cs) != 3 {
		t.Fatalf("%d diff charts", len(cs))
	}
	q := cs[0].Panels[0].Series
	if q[0].Name != "p50 (before)" || !q[0].Before || q[1].Name != "p50" || len(q) != 8 {
		t.Errorf("quantile diff series %v", q)
	}
	ch := diffCharts(a, b, *a.Result("pods.churn"), *b.Result("pods.churn"))
	tc := ch[0]
	s0, s1 := tc.Panels[0].Series[0], tc.Panels[0].Series[1]
	if !tc.Relative || !s0.Before || s0.Points[0][0] != 0 || s1.Points[0][0] != 0 || s1.Points[0][1] != 2*s0.Points[0][1] {
		t.Errorf("time diff: relative %v, %v %v", tc.Relative, s0.Points[0], s1.Points[0])
	}
	var buf bytes.Buffer
	if err := WriteDiffHTML(&buf, a, b, Compare(a, b, DefaultTolerance)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `<div class="chart"`); n < 10 || !strings.Contains(buf.String(), "The plots of both runs") {
		t.Errorf("diff page: %d charts", n)
	}
}
