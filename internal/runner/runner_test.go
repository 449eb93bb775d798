package runner_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/runner"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type m struct {
	name  string
	kind  measure.Kind
	clk   *clocktesting.FakeClock
	took  time.Duration
	ran   *[]string
	stat  result.Status
	finds []result.Finding
}

func (x *m) Name() string        { return x.name }
func (x *m) Description() string { return x.name }
func (x *m) Kind() measure.Kind  { return x.kind }
func (x *m) Run(context.Context, *measure.Env) (result.Result, error) {
	*x.ran = append(*x.ran, x.name)
	x.clk.Step(x.took)
	return result.Result{Status: x.stat}, nil
}
func (x *m) Diagnose(result.Result) []result.Finding { return x.finds }

func finding(id string, sev result.Severity) result.Finding {
	return result.Finding{ID: id, Severity: sev, Title: id, Summary: id, Evidence: []result.Evidence{{Name: "x", Value: 1}},
		Threshold: result.Threshold{Op: ">", Source: "test"}, Remediation: "fix"}
}

func TestRunOrderBudgetFindings(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var ran []string
	ms := []measure.Measurement{
		&m{name: "bench.a", kind: measure.Benchmark, clk: clk, took: 6 * time.Minute, ran: &ran, stat: result.StatusPass},
		&m{name: "check.a", kind: measure.ReadOnly, clk: clk, took: time.Second, ran: &ran, stat: result.StatusWarn, finds: []result.Finding{finding("KS-A", result.SeverityWarning)}},
		&m{name: "bench.b", kind: measure.Benchmark, clk: clk, took: 6 * time.Minute, ran: &ran, stat: result.StatusFail, finds: []result.Finding{finding("KS-B", result.SeverityError)}},
		&m{name: "bench.c", kind: measure.Benchmark, clk: clk, took: time.Minute, ran: &ran, stat: result.StatusPass},
	}
	rep := runner.Run(context.Background(), runner.Options{Clock: clk, RunID: "r", Budget: 10 * time.Minute}, ms)
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
