package check

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestCNIIPAM: the combined rule needs both signals — a slow sandbox phase and a 409 storm on an IPAM
// resource; either alone is not case E.
func TestCNIIPAM(t *testing.T) {
	ph := map[string]string{"phase": "sandbox"}
	mk := func(sandboxMean, conflicts float64, resource string) *result.Report {
		return &result.Report{Results: []result.Result{
			{Name: podstartup.Name, Status: result.StatusFail, Metrics: []result.Metric{
				{Name: "tail_phase_share", Unit: "ratio", Value: 0.8, Labels: ph},
				{Name: "tail_phase_mean", Unit: "seconds", Value: sandboxMean, Labels: ph}}},
			{Name: apislo.Name, Status: result.StatusPass, Metrics: []result.Metric{
				{Name: "conflicts_per_minute", Unit: "per_minute", Value: conflicts, Labels: map[string]string{"resource": resource, "verb": "PUT"}}}},
		}}
	}
	for _, c := range []struct {
		name      string
		r         *result.Report
		wantFired bool
	}{
		{"both", mk(4, 3000, "ipamblocks"), true},
		{"conflicts elsewhere", mk(4, 3000, "configmaps"), false},
		{"fast sandbox", mk(0.3, 3000, "ipamblocks"), false},
		{"few conflicts", mk(4, 30, "ipamblocks"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := rule.Evaluate(c.r, CombinedRules())
			if (len(fs) == 1) != c.wantFired {
				t.Fatalf("findings %+v, evals %+v", fs, evals)
			}
			if c.wantFired && (fs[0].Evidence[0].Labels["resource"] != "ipamblocks" || fs[0].Evidence[1].Value != 4) {
				t.Fatalf("evidence %+v", fs[0].Evidence)
			}
		})
	}
	// Without the API measurement the rule is not evaluated, never passed.
	r := mk(4, 3000, "ipamblocks")
	r.Results = r.Results[:1]
	if _, evals := rule.Evaluate(r, CombinedRules()); evals[0].Status != result.RuleNotEvaluated {
		t.Fatalf("evals %+v", evals)
	}
}
