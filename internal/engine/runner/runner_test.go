package runner_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type m struct {
	name string
	kind measure.Kind
	clk  *clocktesting.FakeClock
	took time.Duration
	ran  *[]string
	stat result.Status
	done *atomic.Bool
}

func (x *m) Name() string        { return x.name }
func (x *m) Description() string { return x.name }
func (x *m) Spec() measure.Spec  { return measure.Spec{Name: x.name, Kind: x.kind} }
func (x *m) Run(context.Context, *measure.Env) (result.Result, error) {
	*x.ran = append(*x.ran, x.name)
	x.clk.Step(x.took)
	if x.done != nil {
		x.done.Store(true)
	}
	return result.Result{Status: x.stat, Metrics: []result.Metric{{Name: "bad", Unit: "count", Value: 1}}}, nil
}

func finding(id string, sev result.Severity) result.Finding {
	return result.Finding{ID: id, Severity: sev, Title: id, Summary: id, Evidence: []result.Evidence{{Name: "x", Value: 1}},
		Threshold: result.Threshold{Op: ">", Source: "test"}, Remediation: "fix"}
}

// badRule fires on the "bad" metric of the named result.
func badRule(id, name string, sev result.Severity) rule.Rule {
	return rule.Rule{ID: id, Title: id, Severity: sev, When: rule.Condition{Metric: rule.Metric{Result: name, Name: "bad"}, Op: ">", Value: 0, Unit: "count"},
		Source: "test", Summary: id + " {{.value}}", Remediation: "fix"}
}

func TestRunOrderBudgetFindings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var ran []string
	ms := []measure.Measurement{
		&m{name: "bench.a", kind: measure.Benchmark, clk: clk, took: 6 * time.Minute, ran: &ran, stat: result.StatusPass},
		&m{name: "check.a", kind: measure.ReadOnly, clk: clk, took: time.Second, ran: &ran, stat: result.StatusWarn},
		&m{name: "bench.b", kind: measure.Benchmark, clk: clk, took: 6 * time.Minute, ran: &ran, stat: result.StatusFail},
		&m{name: "bench.c", kind: measure.Benchmark, clk: clk, took: time.Minute, ran: &ran, stat: result.StatusPass},
	}
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r", Budget: 10 * time.Minute,
		Rules: []rule.Rule{badRule("KS-A", "check.a", result.SeverityWarning), badRule("KS-B", "bench.b", result.SeverityError), badRule("KS-C", "bench.c", result.SeverityError)}}, ms)
	if got := join(ran); got != "check.a,bench.a,bench.b" {
		t.Fatalf("ran %s; want read-only first, then benchmarks until the budget is used", got)
	}
	if rep.Results[3].Name != "bench.c" || rep.Results[3].Status != result.StatusSkip {
		t.Fatalf("bench.c should be skipped for budget: %+v", rep.Results[3])
	}
	if len(rep.Findings) != 2 {
		t.Fatalf("findings %v", rep.Findings)
	}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	if runner.ExitCode(rep, result.SeverityWarning) != 1 || runner.ExitCode(rep, result.SeverityCritical) != 0 {
		t.Fatal("exit code does not follow --fail-on")
	}
}

// waiter is a benchmark that waits on the cluster for up to 5 minutes, bounded by the run's budget.
type waiter struct {
	m
	bounds *[]string
}

func (w *waiter) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	b := env.WaitBound(5 * time.Minute)
	*w.bounds = append(*w.bounds, fmt.Sprintf("%s %s %v", w.name, b.D, b.Cut))
	return w.m.Run(ctx, env)
}

// TestBudgetBoundsWaits: a benchmark started inside the budget may wait only until the budget ends; without a
// budget its own timeout stands.
func TestBudgetBoundsWaits(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var ran, bounds []string
	bench := func(name string, took time.Duration) measure.Measurement {
		return &waiter{m: m{name: name, kind: measure.Benchmark, clk: clk, took: took, ran: &ran, stat: result.StatusPass}, bounds: &bounds}
	}
	runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r", Budget: 10 * time.Minute},
		[]measure.Measurement{bench("a", 7*time.Minute), bench("b", time.Minute)})
	if got, want := join(bounds), "a 5m0s false,b 3m0s true"; got != want {
		t.Fatalf("wait bounds %s, want %s", got, want)
	}
	bounds = nil
	runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r"}, []measure.Measurement{bench("a", 7*time.Minute), bench("b", time.Minute)})
	if got, want := join(bounds), "a 5m0s false,b 5m0s false"; got != want {
		t.Fatalf("wait bounds without a budget %s, want %s", got, want)
	}
}

func TestInterruptedSkipsRest(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	var ran []string
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := runner.Run(ctx, runner.Options{Clock: clk}, []measure.Measurement{&m{name: "a", clk: clk, ran: &ran, stat: result.StatusPass}})
	if len(ran) != 0 || rep.Results[0].Status != result.StatusSkip {
		t.Fatalf("interrupted run executed measurements: %v %+v", ran, rep.Results)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// TestSkipBenchmarks: when the run's namespace cannot be made, every benchmark is a Skip with the reason —
// whatever its position — and the read-only checks still run.
func TestSkipBenchmarks(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	var ran []string
	ms := []measure.Measurement{
		&m{name: "bench.a", kind: measure.Benchmark, clk: clk, ran: &ran, stat: result.StatusPass},
		&m{name: "check.a", kind: measure.ReadOnly, clk: clk, ran: &ran, stat: result.StatusPass},
	}
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, SkipBenchmarks: "etcd full"}, ms)
	if join(ran) != "check.a" {
		t.Fatalf("ran %v", ran)
	}
	if r := rep.Result("bench.a"); r == nil || r.Status != result.StatusSkip || r.Reason != "etcd full" {
		t.Fatalf("benchmark not skipped with the reason: %+v", r)
	}
}

type loader struct {
	m
	qps   float32
	burst int
}

func (l *loader) ClientLoad() (float32, int) { return l.qps, l.burst }

// TestHeadroom: the client limit is kubeslow's own plus the largest single benchmark's rate (benchmarks run
// one at a time), so a 50 QPS pod benchmark is not throttled by kubeslow's 20 QPS default.
func TestHeadroom(t *testing.T) {
	ms := []measure.Measurement{&m{name: "ro"}, &loader{m: m{name: "a"}, qps: 50, burst: 20}, &loader{m: m{name: "b"}, qps: 30, burst: 60}}
	if q, b := runner.Headroom(20, 40, ms); q != 70 || b != 100 {
		t.Fatalf("headroom %v/%v, want 70/100", q, b)
	}
	if q, b := runner.Headroom(20, 40, ms[:1]); q != 20 || b != 40 {
		t.Fatalf("no benchmark: %v/%v", q, b)
	}
}

// TestOutcome: a report in which nothing was measured exits "could not run" and says why, even without
// findings; kubeslow's own overhead result is not a measurement of the cluster.
func TestOutcome(t *testing.T) {
	rep := &result.Report{Results: []result.Result{
		{Name: "nodes.config", Status: result.StatusSkip, Reason: "no permission to list nodes"},
		{Name: "api.responsiveness", Status: result.StatusError, Reason: "GET /metrics: timeout"},
		{Name: runner.OverheadName, Status: result.StatusPass},
	}}
	code, why := runner.Outcome(rep, result.SeverityWarning)
	if code != runner.ExitCouldNotRun || !strings.Contains(why, "no permission to list nodes") || !strings.Contains(why, "0 measurements ran, 1 skipped, 1 errored") {
		t.Fatalf("nothing measured: code %d %q", code, why)
	}
	rep.Results[1].Status = result.StatusPass
	if code, why := runner.Outcome(rep, result.SeverityWarning); code != runner.ExitOK || why != "" {
		t.Fatalf("one measurement ran: code %d %q", code, why)
	}
	rep.Findings = []result.Finding{finding("KS-A", result.SeverityError)}
	if code, _ := runner.Outcome(rep, result.SeverityWarning); code != runner.ExitFindings {
		t.Fatalf("finding: code %d", code)
	}
	if code, _ := runner.Outcome(&result.Report{}, result.SeverityWarning); code != runner.ExitCouldNotRun {
		t.Fatalf("empty report: code %d", code)
	}
}

type obsM struct {
	name    string
	window  time.Duration
	ran     *[]string
	mu      sync.Mutex
	samples int
}

func (o *obsM) Name() string          { return o.name }
func (o *obsM) Description() string   { return o.name }
func (o *obsM) Window() time.Duration { return o.window }
func (o *obsM) Run(context.Context, *measure.Env) (result.Result, error) {
	panic("an observer in a run is started and gathered, not run")
}
func (o *obsM) Start(context.Context, *measure.Env) (measure.Observation, error) {
	*o.ran = append(*o.ran, "start:"+o.name)
	return o, nil
}
func (o *obsM) Sample(context.Context) {
	o.mu.Lock()
	o.samples++
	o.mu.Unlock()
}
func (o *obsM) Gather(context.Context) (result.Result, error) {
	*o.ran = append(*o.ran, "gather:"+o.name)
	return result.Result{Status: result.StatusPass}, nil
}

// stepWhileWaiting moves clk a second on whenever, once from is set, both the run and the sampler wait on it,
// and only then, until done is closed.
func stepWhileWaiting(clk *clocktesting.FakeClock, from *atomic.Bool, done <-chan struct{}) {
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if from.Load() && clk.Waiters() == 2 {
				clk.Step(time.Second)
			}
			runtime.Gosched()
		}
	}()
}

// TestObserversSpanTheBenchmarks: observers start before the checks and benchmarks and are gathered after
// them, sampled at the fixed step in between; the run takes max(window, benchmarks), not their sum, and each
// observation lists the load that ran in its window.
func TestObserversSpanTheBenchmarks(t *testing.T) {
	for _, c := range []struct {
		bench, want time.Duration
	}{{6 * time.Second, 20 * time.Second}, {30 * time.Second, 30 * time.Second}} {
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		done := make(chan struct{})
		var benchDone atomic.Bool
		// Once the benchmark is done, time passes whenever both the run (the window's rest) and the sampler (its
		// next step) wait on the clock, and only then: a step taken while the sampler samples would skip its
		// next sample, and a sampler that left its timer behind would keep time running after the window.
		stepWhileWaiting(clk, &benchDone, done)
		var ran []string
		o := &obsM{name: "api.x", window: 20 * time.Second, ran: &ran}
		ms := []measure.Measurement{
			&m{name: "bench.a", kind: measure.Benchmark, clk: clk, took: c.bench, ran: &ran, stat: result.StatusPass, done: &benchDone},
			o,
			&m{name: "check.a", kind: measure.ReadOnly, clk: clk, ran: &ran, stat: result.StatusPass},
		}
		rep := runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r"}, ms)
		close(done)
		if got := join(ran); got != "start:api.x,check.a,bench.a,gather:api.x" {
			t.Fatalf("order %s", got)
		}
		// max(window, benchmarks), not their sum.
		if d := rep.End.Sub(rep.Start); d < c.want || d >= c.bench+o.window {
			t.Errorf("bench %s: run took %s, want max(window, benchmarks) = %s, below the sum %s", c.bench, d, c.want, c.bench+o.window)
		}
		r := rep.Result("api.x")
		if r == nil || r.Status != result.StatusPass || len(r.Load) != 1 || r.Load[0].Name != "bench.a" || r.Load[0].End.Sub(r.Load[0].Start) != c.bench {
			t.Fatalf("observation: %+v", r)
		}
		if rep.Results[0].Name != "bench.a" || rep.Results[1].Name != "api.x" {
			t.Errorf("results not in the measurements' order: %s, %s", rep.Results[0].Name, rep.Results[1].Name)
		}
		// While the run waits out the window, time moves in steps the sampler sees (the fake benchmark jumps
		// its whole duration at once, which the sampler sees as one step).
		o.mu.Lock()
		if min := int((c.want-c.bench)/measure.ObserveStep) / 2; o.samples < min {
			t.Errorf("%d samples while waiting %s, want at least %d at a %s step", o.samples, c.want-c.bench, min, measure.ObserveStep)
		}
		o.mu.Unlock()
	}
}

// slowStart is an observer whose Start takes `took` of the run's clock (the node tier's agent created through a
// starved apiserver).
type slowStart struct {
	obsM
	clk  *clocktesting.FakeClock
	took time.Duration
}

func (s *slowStart) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	s.clk.Step(s.took)
	return s.obsM.Start(ctx, env)
}

// TestObserverStartedLateWatchesItsWindow: an observer whose Start took longer than the window still watches
// the whole window from when it returned (not the window's remains, nothing), and the run says when the window
// is over before it reads the observers' results.
func TestObserverStartedLateWatchesItsWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	done := make(chan struct{})
	defer close(done)
	var started atomic.Bool
	// Time passes while the run and the sampler both wait on the clock, once every observer has started.
	stepWhileWaiting(clk, &started, done)
	var ran, lines []string
	fast := &obsM{name: "api.x", window: 20 * time.Second, ran: &ran}
	slow := &slowStart{obsM: obsM{name: "controlplane.usage", window: 20 * time.Second, ran: &ran}, clk: clk, took: 30 * time.Second}
	check := &m{name: "check.a", kind: measure.ReadOnly, clk: clk, ran: &ran, stat: result.StatusPass}
	var mu sync.Mutex
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r", Progress: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		line := fmt.Sprintf(format, args...)
		if format == runner.WindowOver {
			line = "window over"
		}
		if strings.Contains(line, "check.a: ") && !strings.Contains(line, "Pass") {
			started.Store(true) // the checks run once every observer has started
		}
		lines = append(lines, line)
	}}, []measure.Measurement{fast, slow, check})
	if got := join(ran); got != "start:api.x,start:controlplane.usage,check.a,gather:api.x,gather:controlplane.usage" {
		t.Fatalf("order %s", got)
	}
	// The slow observer returned 30 s in: its window ends at 50 s, where the first's ended at 20 s.
	if d := rep.End.Sub(rep.Start); d < 50*time.Second || d > 52*time.Second {
		t.Errorf("run took %s, want the late observer's start (30 s) and its whole window (20 s)", d)
	}
	over := -1
	for i, l := range lines {
		if l == "window over" {
			over = i
		}
	}
	if over < 0 || over > len(lines)-3 {
		t.Errorf("no window-over line before the two observers' results: %q", lines)
	}
}

// benchObs is an observer of Kind Benchmark (it creates objects): the node agents' sweep.
type benchObs struct{ obsM }

func (b *benchObs) Spec() measure.Spec { return measure.Spec{Name: b.name, Kind: measure.Benchmark} }

// TestObservingBenchmark: a benchmark that observes (the node agents, whose watch should span the load) starts
// with the observers, before the checks and the other benchmarks, and is gathered after them; when the
// benchmarks cannot run it is skipped with their reason and never started.
func TestObservingBenchmark(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var ran []string
	agents := &benchObs{obsM{name: "nodes.agent", ran: &ran}}
	ms := []measure.Measurement{
		&m{name: "bench.a", kind: measure.Benchmark, clk: clk, ran: &ran, stat: result.StatusPass},
		agents,
		&m{name: "check.a", kind: measure.ReadOnly, clk: clk, ran: &ran, stat: result.StatusPass},
	}
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r"}, ms)
	if got := join(ran); got != "start:nodes.agent,check.a,bench.a,gather:nodes.agent" {
		t.Fatalf("order %s", got)
	}
	if r := rep.Result("nodes.agent"); r == nil || r.Status != result.StatusPass || len(r.Load) != 1 || r.Load[0].Name != "bench.a" {
		t.Fatalf("observing benchmark: %+v", r)
	}

	ran = nil
	rep = runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r", SkipBenchmarks: "etcd full"}, ms)
	if got := join(ran); got != "check.a" {
		t.Fatalf("with the benchmarks skipped, ran %s", got)
	}
	if r := rep.Result("nodes.agent"); r == nil || r.Status != result.StatusSkip || r.Reason != "etcd full" {
		t.Fatalf("observing benchmark not skipped with the benchmarks' reason: %+v", r)
	}
}

type permM struct {
	m
	perms []measure.Permission
}

func (p *permM) Spec() measure.Spec {
	s := p.m.Spec()
	s.Permissions = p.perms
	return s
}

// TestPreflight: a measurement lacking a permission is skipped with the permission and its reason named,
// said once before any work; a benchmark also needs the run's namespace; the granted ones run.
func TestPreflight(t *testing.T) {
	c := fake.NewClientset()
	var asked int
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, apiruntime.Object, error) {
		asked++
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
		ra, nr := r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes
		// A view-like user: reads pods, nothing else.
		r.Status.Allowed = nr == nil && ra.Resource == "pods" && (ra.Verb == "list" || ra.Verb == "get")
		return true, r, nil
	})
	ms := []measure.Measurement{
		&permM{m: m{name: "pods.read"}, perms: []measure.Permission{{Verbs: []string{"list"}, Resource: "pods", Reason: "r"}}},
		&permM{m: m{name: "api.metrics"}, perms: []measure.Permission{{Verbs: []string{"get"}, NonResourceURL: "/metrics", Reason: "the apiserver's metrics"}}},
		&permM{m: m{name: "pods.read2"}, perms: []measure.Permission{{Verbs: []string{"list"}, Resource: "pods", Reason: "r"}}},
		// A permission the measurement does without is not asked and does not skip it.
		&permM{m: m{name: "pods.nodes"}, perms: []measure.Permission{{Verbs: []string{"list"}, Resource: "pods", Reason: "r"},
			{Verbs: []string{"list"}, Resource: "nodes", Reason: "capacity", Optional: true}}},
		&m{name: "bench.x", kind: measure.Benchmark},
	}
	var lines []string
	skip := runner.Preflight(context.Background(), &measure.Reviewer{Client: c}, ms, func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })
	if len(skip) != 2 || !strings.Contains(skip["api.metrics"], "no permission to get /metrics (the apiserver's metrics)") ||
		!strings.Contains(skip["bench.x"], "namespaces") {
		t.Fatalf("skips %v", skip)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "api.metrics will be skipped: ") {
		t.Fatalf("progress %q", lines)
	}
	if asked != 3 { // list pods (asked once for both), get /metrics, create namespaces
		t.Errorf("%d access reviews, want 3", asked)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	var ran []string
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, Skip: skip}, []measure.Measurement{
		&m{name: "pods.read", clk: clk, ran: &ran, stat: result.StatusPass}, &m{name: "api.metrics", clk: clk, ran: &ran, stat: result.StatusPass}})
	if join(ran) != "pods.read" || rep.Results[1].Status != result.StatusSkip || rep.Results[1].Reason != skip["api.metrics"] {
		t.Fatalf("ran %v, results %+v", ran, rep.Results)
	}
}
