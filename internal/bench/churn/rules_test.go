package churn_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/bench/churn"
	"github.com/kubeslow/kubeslow/internal/bench/churn/churntest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Every churn rule fires on its mechanism and stays clear on the others: a disk that ran out of credits and a
// disk shared with a noisy neighbour are both a sudden disk slowdown; a steady slow disk is told apart from
// them; a slowdown the disk did not share is not blamed on it; a healthy run raises nothing.
func TestChurnRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		model churntest.Model
		want  string
	}{
		{"credits spent (case C)", churntest.Credits, "KS-CHURN-DISK-KNEE"},
		{"noisy neighbour on the disk", churntest.Neighbour, "KS-CHURN-DISK-KNEE"},
		{"steady slow disk", churntest.SteadySlowDisk, "KS-CHURN-DISK-SLOW"},
		{"slow disk, fast starts", churntest.SlowDiskFastStarts, ""},
		{"control plane slowed, disk steady", churntest.ControlPlane, "KS-CHURN-KNEE"},
		{"knee, disk not sampled", churntest.CreditsNoDisk, "KS-CHURN-KNEE"},
		{"healthy", churntest.Healthy, ""},
	} {
		rep := &result.Report{Results: []result.Result{churn.Analyze(c.model.Input())}}
		fs, evals := rule.Evaluate(rep, churn.Rules())
		var ids []string
		for _, f := range fs {
			ids = append(ids, f.ID)
		}
		sort.Strings(ids)
		if got := strings.Join(ids, ","); got != c.want {
			t.Errorf("%s: fired %q, want %q", c.name, got, c.want)
			for _, f := range fs {
				t.Logf("  %s", f.Summary)
			}
		}
		for _, e := range evals {
			if e.Status == result.RuleNotEvaluated {
				t.Errorf("%s: %s not evaluated: %s", c.name, e.ID, e.Reason)
			}
		}
		for _, f := range fs {
			if strings.Contains(f.Summary, "{{") || strings.Contains(f.Summary, "no value") || len(f.Evidence) == 0 {
				t.Errorf("%s: %s: %q %+v", c.name, f.ID, f.Summary, f.Evidence)
			}
			t.Logf("%s: %s", c.name, f.Summary)
		}
	}
}

func TestChurnKneeSummary(t *testing.T) {
	rep := &result.Report{Results: []result.Result{churn.Analyze(churntest.Credits.Input())}}
	fs, _ := rule.Evaluate(rep, churn.Rules())
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	s := fs[0].Summary
	for _, want := range []string{"start latency p50 rose from 8", "to 9.", "starts (4 min)", "fdatasync p99 on lab-node-1's disk (loop7) rose from", "and I/O pressure from ", "% to 70%", "D state"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q: %s", want, s)
		}
	}
	if fs[0].Items[0].Key != "node=lab-node-1" {
		t.Errorf("item %+v", fs[0].Items)
	}
	// Not measured: a churn run that could not run leaves every churn rule not evaluated.
	_, evals := rule.Evaluate(&result.Report{Results: []result.Result{{Name: churn.Name, Status: result.StatusSkip, Reason: "no real node"}}}, churn.Rules())
	for _, e := range evals {
		if e.Status != result.RuleNotEvaluated {
			t.Errorf("%s: %s", e.ID, e.Status)
		}
	}
}
