// Package runner runs a selection of measurements against one cluster and assembles the report: read-only
// checks first, then benchmarks within a time budget, then the findings.
package runner

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/internal/version"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Options configure one run.
type Options struct {
	Client  kubernetes.Interface
	Config  *rest.Config
	Cluster result.Cluster
	Clock   clock.Clock
	Log     *slog.Logger
	RunID   string
	// Namespace is the run's own namespace (created by benchmarks that need one).
	Namespace string
	// Budget bounds the benchmarks' total time: none starts after it, and a running one stops waiting on the
	// cluster at it (measure.Env.WaitBound and BoundContext, which every benchmark's waits read); read-only
	// checks always run.
	Budget time.Duration
	// Progress gets one line per measurement.
	Progress func(format string, args ...any)
	// Rules are the findings engine's rules (evaluated after every measurement has run).
	Rules []rule.Rule
	// SkipBenchmarks, when set, is why the benchmarks cannot run (e.g. the namespace could not be created):
	// each becomes a Skip with this reason.
	SkipBenchmarks string
	// Skip are measurements that will not run, by name, with the reason (e.g. a permission they lack).
	Skip map[string]string
	// NodeTier is the run's shared control-plane node tier (measure.Env.NodeTier); NodeTierOff why there is none.
	NodeTier    measure.NodeTier
	NodeTierOff string
	// Said are sources (measure.GapSource's keys) the caller has already explained on its progress lines (a
	// development build's missing agent image): a skip for one of them names it instead of saying it again.
	Said []string
}

// WindowOver is the progress line said once the observers' window is over, before their results are read (which,
// through a slow apiserver, can take a while of its own).
const WindowOver = "observation window over: reading the observers' results"

// Run executes ms and returns the report, clusterloader2's way: observers (measure.Observer: the metric-based
// measurements) start first, then the other read-only checks run, then the benchmarks within the budget,
// then the observers are gathered once their window has passed — so they report the control plane under the
// load the benchmarks made (each result lists that load), and a run takes max(window, benchmarks), not their
// sum. Each observer watches at least its own window from when its Start returned: one slow to start (the
// node tier's agent, created through a starved apiserver) does not end up with the window's remains. Results
// are listed in ms's order. Measurement failures are recorded in their results.
func Run(ctx context.Context, o Options, ms []measure.Measurement) *result.Report {
	v, commit := version.Get()
	rep := &result.Report{
		APIVersion: result.APIVersion, Kind: result.Kind, RunID: o.RunID,
		Tool:    result.Tool{Name: "kubeslow", Version: v, Commit: commit},
		Cluster: o.Cluster, Start: o.Clock.Now().UTC(), Results: []result.Result{}, Findings: []result.Finding{},
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	env := &measure.Env{Client: o.Client, Config: o.Config, Clock: o.Clock, Log: log, Namespace: o.Namespace, RunID: o.RunID,
		NodeTier: o.NodeTier, NodeTierOff: o.NodeTierOff, Scrapes: measure.NewSharedScrapes(o.Clock), Cadvisor: kubelet.NewCadvisor(o.Client),
		Nodes: measure.NewNodeCache(o.Client)}
	defer env.Nodes.Stop() // one node informer for the run's measurements (docs/scale.md)
	results := make([]*result.Result, len(ms))
	skips := skipNote{}
	for _, src := range o.Said {
		skips[src] = true
	}
	set := func(i int, r result.Result) {
		results[i] = &r
		progress("[%d/%d] %s: %s %s", i+1, len(ms), r.Name, r.Status, skips.say(r))
	}
	var observers, checks, bench []int
	for i, m := range ms {
		_, isObs := m.(measure.Observer)
		switch {
		case isObs:
			// An observing benchmark (the node agents) starts with the observers, so its watch spans the load.
			observers = append(observers, i)
		case measure.KindOf(m) == measure.Benchmark:
			bench = append(bench, i)
		default:
			checks = append(checks, i)
		}
	}
	interrupted := func(i int) bool {
		if why, ok := o.Skip[ms[i].Name()]; ok {
			results[i] = &result.Result{Name: ms[i].Name(), Status: result.StatusSkip, Reason: why}
			return true
		}
		if ctx.Err() == nil {
			return false
		}
		results[i] = &result.Result{Name: ms[i].Name(), Status: result.StatusSkip, Reason: "run interrupted before this measurement"}
		return true
	}

	// Observers start before anything else runs.
	type started struct {
		i     int
		start time.Time
		obs   measure.Observation
	}
	var running []started
	var window time.Duration
	// watched is when every observer started so far has watched its window since its Start returned.
	watched := o.Clock.Now()
	for _, i := range observers {
		if interrupted(i) {
			continue
		}
		if o.SkipBenchmarks != "" && measure.KindOf(ms[i]) == measure.Benchmark {
			set(i, result.Result{Name: ms[i].Name(), Status: result.StatusSkip, Reason: o.SkipBenchmarks})
			continue
		}
		ob := ms[i].(measure.Observer)
		progress("[%d/%d] %s: started (%s over at least %s)", i+1, len(ms), ob.Name(), ob.Description(), ob.Window())
		t := o.Clock.Now()
		st, err := ob.Start(kube.WithMeasurement(ctx, ob.Name()), env)
		if err != nil {
			set(i, measure.Complete(env, ob.Name(), t, result.Result{}, err))
			continue
		}
		running = append(running, started{i, t, namedObservation{st, ob.Name()}})
		window = max(window, ob.Window())
		if end := o.Clock.Now().Add(ob.Window()); end.After(watched) {
			watched = end
		}
	}
	obs := make([]measure.Observation, len(running))
	for k, r := range running {
		obs[k] = r.obs
	}
	stopSampling := measure.StartSampling(ctx, env, obs...)

	runNow := func(i int) {
		progress("[%d/%d] %s: %s", i+1, len(ms), ms[i].Name(), ms[i].Description())
		set(i, measure.RunOne(ctx, env, ms[i]))
	}
	for _, i := range checks {
		if !interrupted(i) {
			runNow(i)
		}
	}
	deadline := rep.Start.Add(o.Budget)
	if o.Budget > 0 {
		env.BenchDeadline = deadline // a started benchmark stops waiting on the cluster there too (Env.WaitBound)
	}
	var load []result.Span
	for _, i := range bench {
		switch {
		case interrupted(i):
		case o.SkipBenchmarks != "":
			set(i, result.Result{Name: ms[i].Name(), Status: result.StatusSkip, Reason: o.SkipBenchmarks})
		case o.Budget > 0 && !o.Clock.Now().Before(deadline):
			set(i, result.Result{Name: ms[i].Name(), Status: result.StatusSkip, Reason: fmt.Sprintf("time budget of %s used up", o.Budget)})
		default:
			runNow(i)
			load = append(load, result.Span{Name: ms[i].Name(), Start: results[i].Start, End: results[i].End})
		}
	}

	// The observers' window: at least each one's own from its start, and as long as the benchmarks took.
	if left := watched.Sub(o.Clock.Now()); len(running) > 0 && left > 0 {
		progress("observing %s more (the observation window is %s)", left.Round(time.Second), window)
		t := o.Clock.NewTimer(left)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
	if len(running) > 0 && ctx.Err() == nil {
		progress(WindowOver)
	}
	stopSampling()
	for _, r := range running {
		if ctx.Err() != nil {
			results[r.i] = &result.Result{Name: ms[r.i].Name(), Status: result.StatusSkip}
			results[r.i].Reason = "run interrupted before the observation window ended"
			continue
		}
		res, err := r.obs.Gather(kube.WithMeasurement(ctx, ms[r.i].Name()))
		res = measure.Complete(env, ms[r.i].Name(), r.start, res, err)
		if res.Status.Measured() {
			res.Observed, res.Load = true, load
		}
		set(r.i, res)
	}

	for i := range ms {
		rep.Results = append(rep.Results, *results[i])
	}
	findings, evals := rule.Evaluate(rep, o.Rules)
	rep.Findings = append(rep.Findings, findings...)
	rep.Rules = evals
	markOutages(rep)
	rep.Gaps = Gaps(rep, o.Rules)
	rep.End = o.Clock.Now().UTC()
	return rep
}

// ExitCode is 0 when no finding reaches the given severity, 1 otherwise (Outcome adds "nothing measured").
func ExitCode(r *result.Report, failOn result.Severity) int {
	for _, f := range r.Findings {
		if f.Severity.Rank() >= failOn.Rank() {
			return 1
		}
	}
	return 0
}

// StandaloneReport wraps the results of a command that measures no cluster (a load test against a URL, the
// network lab) in a report: the tool's identity, a fresh run id, the target named in Cluster.
func StandaloneReport(target, server string, start time.Time, results ...result.Result) *result.Report {
	v, commit := version.Get()
	return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: kube.NewRunID(start),
		Tool: result.Tool{Name: "kubeslow", Version: v, Commit: commit}, Cluster: result.Cluster{Name: target, Server: server},
		Start: start, End: time.Now(), Results: results, Findings: []result.Finding{}}
}

// namedObservation attributes an observation's requests (its samples and its gather) to its measurement in
// kubeslow's request counter.
type namedObservation struct {
	measure.Observation
	name string
}

func (o namedObservation) Sample(ctx context.Context) {
	o.Observation.Sample(kube.WithMeasurement(ctx, o.name))
}
