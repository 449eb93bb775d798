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

	"github.com/kubeslow/kubeslow/internal/check"
	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/measure"
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
	Lab       *measure.LabInfo
	// Budget bounds the benchmarks' total time; read-only checks always run.
	Budget time.Duration
	// Progress gets one line per measurement.
	Progress func(format string, args ...any)
	// Rules are the findings engine's rules (evaluated after every measurement has run).
	Rules []check.Rule
	// SkipBenchmarks, when set, is why the benchmarks cannot run (e.g. the namespace could not be created):
	// each becomes a Skip with this reason.
	SkipBenchmarks string
}

// Run executes ms and returns the report. Measurement failures are recorded in their results; Run itself
// fails only if ctx is cancelled before anything ran.
func Run(ctx context.Context, o Options, ms []measure.Measurement) *result.Report {
	v, commit := version.Get()
	rep := &result.Report{
		APIVersion: result.APIVersion, Kind: result.Kind, RunID: o.RunID,
		Tool:    result.Tool{Name: "kubeslow", Version: v, Commit: commit},
		Cluster: o.Cluster, Start: o.Clock.Now().UTC(), Results: []result.Result{}, Findings: []result.Finding{},
	}
	env := &measure.Env{Client: o.Client, Config: o.Config, Clock: o.Clock, Log: o.Log, Namespace: o.Namespace, RunID: o.RunID, Lab: o.Lab}
	var readOnly, bench []measure.Measurement
	for _, m := range ms {
		if measure.KindOf(m) == measure.ReadOnly {
			readOnly = append(readOnly, m)
		} else {
			bench = append(bench, m)
		}
	}
	deadline := o.Clock.Now().Add(o.Budget)
	for i, m := range append(readOnly, bench...) {
		var res result.Result
		switch {
		case ctx.Err() != nil:
			res = result.Result{Name: m.Name(), Status: result.StatusSkip, Reason: "run interrupted before this measurement"}
		case i >= len(readOnly) && o.SkipBenchmarks != "":
			res = result.Result{Name: m.Name(), Status: result.StatusSkip, Reason: o.SkipBenchmarks}
		case i >= len(readOnly) && o.Budget > 0 && !o.Clock.Now().Before(deadline):
			res = result.Result{Name: m.Name(), Status: result.StatusSkip, Reason: fmt.Sprintf("time budget of %s used up", o.Budget)}
		default:
			if o.Progress != nil {
				o.Progress("[%d/%d] %s: %s", i+1, len(ms), m.Name(), m.Description())
			}
			res = measure.RunOne(ctx, env, m)
			if o.Progress != nil {
				o.Progress("[%d/%d] %s: %s %s", i+1, len(ms), m.Name(), res.Status, res.Reason)
			}
		}
		rep.Results = append(rep.Results, res)
		if d, ok := m.(measure.Diagnoser); ok && res.Status.Measured() {
			rep.Findings = append(rep.Findings, d.Diagnose(res)...)
		}
	}
	findings, evals := check.Evaluate(rep, o.Rules)
	rep.Findings = append(rep.Findings, findings...)
	rep.Rules = evals
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
