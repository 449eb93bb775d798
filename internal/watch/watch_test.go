package watch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// script is a cycle function that returns its steps in turn (the last one again when they run out), moving
// the fake clock by a second as a cycle would.
type script struct {
	mu    sync.Mutex
	clk   *clocktesting.FakeClock
	steps []step
	calls int
}

type step struct {
	findings []result.Finding
	err      error
}

func (s *script) cycle(context.Context) (*result.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	s.clk.Step(time.Second)
	if st.err != nil {
		return nil, st.err
	}
	return sample(st.findings...), nil
}

func sample(fs ...result.Finding) *result.Report {
	return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "r1",
		Results: []result.Result{
			{Name: "api.latency", Status: result.StatusWarn, Reason: "slow", Metrics: []result.Metric{
				{Name: "p99", Unit: "seconds", Value: 1.5, Labels: map[string]string{"verb": "LIST", "resource": "pods"}},
				{Name: "p99", Unit: "seconds", Value: 0.2, Labels: map[string]string{"verb": "GET", "resource": "pods"}},
			}},
			{Name: "nodes.health", Status: result.StatusSkip, Reason: "no permission"},
			{Name: runner.OverheadName, Status: result.StatusPass, Metrics: []result.Metric{
				{Name: "cpu", Unit: "seconds", Value: 0.4},
				{Name: "api_requests_total", Unit: "count", Value: 120},
				{Name: "api_bytes_read_total", Unit: "bytes", Value: 5e6},
			}},
		},
		Findings: fs}
}

func finding(id, cause string, labels map[string]string) result.Finding {
	return result.Finding{ID: id, Severity: result.SeverityWarning, Title: id, ExplainedBy: cause,
		Evidence: []result.Evidence{{Name: "x", Value: 1, Labels: labels}}}
}

func newWatcher(t *testing.T, o Options, steps ...step) (*Watcher, *script, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	s := &script{clk: clk, steps: steps}
	o.Cycle, o.Clock = s.cycle, clk
	if o.Interval == 0 {
		o.Interval = time.Minute
	}
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return w, s, clk
}

func ids(fs []FindingState) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return strings.Join(out, ",")
}

// scrape parses /metrics with the classic (legacy) name validation: every name and label must be one that
// any Prometheus reads.
func scrape(t *testing.T, w *Watcher) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("/metrics is not valid exposition: %v\n%s", err, rec.Body)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	t.Helper()
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		ls := labels(m)
		ok := true
		for k, v := range match {
			if ls[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func TestHysteresis(t *testing.T) {
	a := finding("KS-A", "", nil)
	w, _, _ := newWatcher(t, Options{For: 2}, step{findings: []result.Finding{a}}, step{findings: []result.Finding{a}},
		step{}, step{findings: []result.Finding{a}}, step{findings: []result.Finding{a}})
	ctx := context.Background()
	for i, want := range []string{"", "KS-A", "", "", "KS-A"} {
		w.Step(ctx)
		if got := ids(w.Firing()); got != want {
			t.Errorf("cycle %d: firing %q, want %q", i+1, got, want)
		}
		_, exported := value(t, scrape(t, w), "kubeslow_finding", map[string]string{"id": "KS-A"})
		if exported != (want != "") {
			t.Errorf("cycle %d: kubeslow_finding exported %v, want %v", i+1, exported, want != "")
		}
	}
}

func TestStaleEvidenceNeverFires(t *testing.T) {
	a := finding("KS-A", "", nil)
	down := errors.New("dial tcp: connection refused")
	w, _, clk := newWatcher(t, Options{For: 2}, step{findings: []result.Finding{a}}, step{findings: []result.Finding{a}},
		step{err: down}, step{findings: []result.Finding{a}}, step{findings: []result.Finding{a}})
	ctx := context.Background()
	w.Step(ctx)
	w.Step(ctx)
	if ids(w.Firing()) != "KS-A" {
		t.Fatal("KS-A should fire on the 2nd cycle")
	}
	// A cycle that hangs: the last report grows older than 2 intervals.
	clk.Step(2*time.Minute + time.Second)
	if got := ids(w.Firing()); got != "" {
		t.Errorf("evidence older than 2 intervals: firing %q", got)
	}
	if _, ok := value(t, scrape(t, w), "kubeslow_finding", nil); ok {
		t.Error("stale evidence exported as kubeslow_finding")
	}
	// A failed cycle: nothing fires, and the finding must hold for 2 fresh cycles again.
	w.Step(ctx)
	if got := ids(w.Firing()); got != "" {
		t.Errorf("after a failed cycle: firing %q", got)
	}
	w.Step(ctx)
	if got := ids(w.Firing()); got != "" {
		t.Errorf("1st cycle after the failure: firing %q", got)
	}
	w.Step(ctx)
	if got := ids(w.Firing()); got != "KS-A" {
		t.Errorf("2nd cycle after the failure: firing %q, want KS-A", got)
	}
}

func TestCauseLabel(t *testing.T) {
	cause := finding("KS-CP-SATURATED", "", map[string]string{"node": "cp-1"})
	symptom := finding("KS-POD-PHASE", "KS-CP-SATURATED", map[string]string{"namespace": "web", "pod": "web-1"})
	w, _, _ := newWatcher(t, Options{For: 2}, step{findings: []result.Finding{cause, symptom}})
	w.Step(context.Background())
	w.Step(context.Background())
	fams := scrape(t, w)
	f := fams["kubeslow_finding"]
	if f == nil || len(f.GetMetric()) != 2 {
		t.Fatalf("kubeslow_finding: %v", f)
	}
	got := map[string]map[string]string{}
	for _, m := range f.GetMetric() {
		got[labels(m)["id"]] = labels(m)
	}
	if c := got["KS-CP-SATURATED"]; c["cause"] != "" || c["node"] != "cp-1" || c["severity"] != "warning" {
		t.Errorf("cause's labels: %v", c)
	}
	if s := got["KS-POD-PHASE"]; s["cause"] != "KS-CP-SATURATED" || s["namespace"] != "web" || s["pod"] != "web-1" || s["node"] != "" {
		t.Errorf("symptom's labels: %v", s)
	}
	if v, _ := value(t, fams, "kubeslow_findings", map[string]string{"state": "firing"}); v != 2 {
		t.Errorf("kubeslow_findings{state=firing} = %v, want 2", v)
	}
}

func TestMetricsExposition(t *testing.T) {
	w, _, _ := newWatcher(t, Options{For: 1, MaxSeries: 1}, step{findings: []result.Finding{finding("KS-A", "", nil)}})
	fams := scrape(t, w)
	if len(fams) != 1 || fams["kubeslow_cycles_total"] == nil {
		t.Errorf("before the first cycle: only kubeslow_cycles_total, got %d families", len(fams))
	}
	w.Step(context.Background())
	fams = scrape(t, w)
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"kubeslow_up", nil, 1},
		{"kubeslow_cycles_total", map[string]string{"result": "ok"}, 1},
		{"kubeslow_cycles_total", map[string]string{"result": "error"}, 0},
		{"kubeslow_cycle_duration_seconds", nil, 1},
		{"kubeslow_last_success_timestamp_seconds", nil, float64(t0.Add(time.Second).Unix())},
		{"kubeslow_finding", map[string]string{"id": "KS-A", "cause": ""}, 1},
		{"kubeslow_measurement_status", map[string]string{"measurement": "api.latency", "status": "Warn"}, 1},
		{"kubeslow_measurement_status", map[string]string{"measurement": "nodes.health", "status": "Skip"}, 1},
		{"kubeslow_metric", map[string]string{"measurement": "api.latency", "name": "p99", "unit": "seconds", "verb": "LIST", "resource": "pods"}, 1.5},
		{"kubeslow_metric_series_dropped", nil, 1}, // MaxSeries 1: the GET p99 is left out
		{"kubeslow_cycle_api_requests", nil, 120},
		{"kubeslow_cycle_api_bytes_read", nil, 5e6},
		{"kubeslow_cycle_cpu_seconds", nil, 0.4},
	} {
		got, ok := value(t, fams, c.name, c.match)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.match, got, ok, c.want)
		}
	}
	if n := len(fams["kubeslow_metric"].GetMetric()); n != 1 {
		t.Errorf("kubeslow_metric: %d series, want the cap of 1", n)
	}
	if _, ok := value(t, fams, "kubeslow_measurement_status", map[string]string{"measurement": runner.OverheadName}); ok {
		t.Error("kubeslow's own overhead exported as a measurement")
	}
}

func TestBackoffAndRecovery(t *testing.T) {
	down := errors.New("connection refused")
	steps := []step{{err: down}, {err: down}, {err: down}, {err: down}, {err: down}, {}}
	w, _, _ := newWatcher(t, Options{Interval: time.Minute, RetryBase: 5 * time.Second}, steps...)
	ctx := context.Background()
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute} {
		if got := w.Step(ctx); got != want {
			t.Errorf("failure %d: retry after %s, want %s", i+1, got, want)
		}
		fams := scrape(t, w)
		if v, ok := value(t, fams, "kubeslow_up", nil); !ok || v != 0 {
			t.Errorf("failure %d: kubeslow_up %v (present %v), want 0", i+1, v, ok)
		}
	}
	if got := w.Step(ctx); got != time.Minute {
		t.Errorf("after recovery: next cycle in %s, want the interval", got)
	}
	fams := scrape(t, w)
	if v, _ := value(t, fams, "kubeslow_up", nil); v != 1 {
		t.Errorf("after recovery: kubeslow_up %v", v)
	}
	if v, _ := value(t, fams, "kubeslow_cycles_total", map[string]string{"result": "error"}); v != 5 {
		t.Errorf("kubeslow_cycles_total{result=error} = %v, want 5", v)
	}
	// The back-off starts again from its base after a recovery.
	w2, _, _ := newWatcher(t, Options{Interval: time.Minute, RetryBase: 5 * time.Second}, step{err: down}, step{}, step{err: down})
	w2.Step(ctx)
	w2.Step(ctx)
	if got := w2.Step(ctx); got != 5*time.Second {
		t.Errorf("failure after a recovery: retry after %s, want 5s", got)
	}
}

// TestRunSurvivesFailures runs the loop itself on the fake clock: failed cycles are retried, the loop does
// not exit, and cancelling the context stops it.
func TestRunSurvivesFailures(t *testing.T) {
	down := errors.New("connection refused")
	w, s, clk := newWatcher(t, Options{Interval: time.Minute, RetryBase: 5 * time.Second}, step{err: down}, step{err: down}, step{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	calls := func() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }
	deadline := time.Now().Add(10 * time.Second)
	for calls() < 4 && time.Now().Before(deadline) {
		if clk.HasWaiters() {
			clk.Step(time.Minute)
		}
		time.Sleep(time.Millisecond)
	}
	if calls() < 4 {
		t.Fatalf("the loop ran %d cycles, want 4 (it must survive failed cycles)", calls())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop when the context was cancelled")
	}
	if v, _ := value(t, scrape(t, w), "kubeslow_up", nil); v != 1 {
		t.Errorf("kubeslow_up %v after the recovery", v)
	}
}

// TestRunStopsMidCycle cancels the context while a cycle runs (the pod's SIGTERM in the middle of a cycle's
// window): Run returns as soon as the cycle does, and the interrupted cycle's partial report (runner.Execute
// returns one, its measurements skipped) is not recorded: the finding that fired before it still fires, and
// only the whole cycle is counted.
func TestRunStopsMidCycle(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	inCycle := make(chan struct{})
	calls := 0
	cycle := func(ctx context.Context) (*result.Report, error) {
		calls++
		if calls == 1 {
			return sample(finding("KS-API-409", "", nil)), nil
		}
		close(inCycle)
		<-ctx.Done()
		return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "interrupted",
			Results: []result.Result{{Name: "api.latency", Status: result.StatusSkip, Reason: "run interrupted before this measurement"}}}, nil
	}
	w, err := New(Options{Cycle: cycle, Interval: time.Hour, For: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	w.Step(context.Background()) // the first cycle: KS-API-409 fires (For 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }() // Run starts the second cycle at once
	<-inCycle
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := ids(w.Firing()); got != "KS-API-409" {
		t.Errorf("firing after the interrupted cycle: %q, want KS-API-409 (an interrupted cycle is not evidence)", got)
	}
	fams := scrape(t, w)
	cycles := map[string]float64{}
	for _, m := range fams["kubeslow_cycles_total"].GetMetric() {
		cycles[labels(m)["result"]] = m.GetCounter().GetValue()
	}
	if cycles[CycleOK] != 1 || cycles[CycleEmpty] != 0 || cycles[CycleError] != 0 {
		t.Errorf("kubeslow_cycles_total %v, want one ok cycle (the interrupted one not counted)", cycles)
	}
	if v, _ := value(t, fams, "kubeslow_up", nil); v != 1 {
		t.Errorf("kubeslow_up %v after an interrupted cycle, want 1", v)
	}
}

func TestHistoryBounded(t *testing.T) {
	w, _, _ := newWatcher(t, Options{History: 5}, step{findings: []result.Finding{finding("KS-A", "", nil)}})
	for range 12 {
		w.Step(context.Background())
	}
	var got []summary
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/history", nil))
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Seq != 12 || got[4].Seq != 8 {
		t.Fatalf("history: %d entries from %d, want 5 newest first from 12", len(got), got[0].Seq)
	}
	if got[0].Result != CycleOK || len(got[0].Findings) != 1 || !got[0].Findings[0].Firing {
		t.Errorf("latest summary: %+v", got[0])
	}

	// By bytes: a long error is cut, and the entries kept fit the bound.
	long := errors.New(strings.Repeat("x", 10000))
	w, _, _ = newWatcher(t, Options{History: 50, HistoryBytes: 2000}, step{err: long})
	for range 20 {
		w.Step(context.Background())
	}
	rec = httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/history", nil))
	if rec.Body.Len() > 2000+1 {
		t.Errorf("history is %d bytes, bound 2000", rec.Body.Len())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) == 0 || len(got[0].Error) > maxErrorBytes {
		t.Errorf("history: %d entries, err %v", len(got), err)
	}
}

func TestEndpoints(t *testing.T) {
	w, _, _ := newWatcher(t, Options{}, step{findings: []result.Finding{finding("KS-A", "", nil)}})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		w.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, _ := get("/"); code != http.StatusServiceUnavailable {
		t.Errorf("/ before a cycle: %d", code)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	w.Step(context.Background())
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("/: %d, %d bytes", code, len(body))
	}
	if code, _ := get("/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d", code)
	}
}

func TestLabelSanitisation(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"node", "node"},
		{"pod-name", "pod_name"},
		{"k8s.io/role", "k8s_io_role"},
		{"1st", "_1st"},
		{"__name__", "x__name__"},
		{"", "_"},
		{"héllo wörld", "h_llo_w_rld"},
		{"a\nb\"c", "a_b_c"},
	} {
		if got := labelName(c.in); got != c.want {
			t.Errorf("labelName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"web-1", "web-1"},
		{"quote\" back\\ nl\n", "quote\" back\\ nl\n"}, // the exposition escapes these itself
		{"bad\xff\xfeutf8", "bad\uFFFDutf8"},
		{strings.Repeat("é", 200), strings.Repeat("é", 128)}, // 256 bytes, cut at a rune boundary
	} {
		if got := labelValue(c.in); got != c.want {
			t.Errorf("labelValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}

	// Whatever the evidence and the metrics carry, /metrics stays valid and each series keeps its labels.
	evil := map[string]string{"namespace": "ns\"}\n", "pod": "p\xff", "node": "n\\1", "name": "clash", "unit": "clash", "label_name": "clash2", "__x": "y", "9": "nine", "a-b": "1", "a_b": "2"}
	rep := sample(finding("KS-\"EVIL\"\n", "", evil))
	rep.Results[0].Metrics = append(rep.Results[0].Metrics, result.Metric{Name: "weird metric\"", Unit: "s", Value: 3, Labels: evil})
	clk := clocktesting.NewFakeClock(t0)
	w, err := New(Options{Cycle: func(context.Context) (*result.Report, error) { return rep, nil }, Clock: clk, For: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.Step(context.Background())
	fams := scrape(t, w)
	if v, ok := value(t, fams, "kubeslow_finding", map[string]string{"namespace": "ns\"}\n", "pod": "p\uFFFD", "node": "n\\1"}); !ok || v != 1 {
		t.Errorf("evil finding not exported with its labels")
	}
	m, ok := value(t, fams, "kubeslow_metric", map[string]string{"name": "weird metric\"", "label_label_name": "clash", "label_unit": "clash", // keys taken in sorted order: label_name before name
		"label_name": "clash2", "x__x": "y", "_9": "nine", "a_b": "1", "label_a_b": "2"})
	if !ok || m != 3 {
		t.Errorf("evil metric not exported with its labels: %v", fams["kubeslow_metric"])
	}
}
