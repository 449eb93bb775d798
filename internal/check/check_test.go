package check

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

var update = flag.Bool("update", false, "regenerate docs/rules.md")

func rule() Rule {
	return Rule{ID: "KS-T-1", Title: "t", Severity: result.SeverityWarning, Needs: []string{"m"},
		Threshold: result.Threshold{Op: ">", Value: 10, Unit: "seconds", Source: "test"},
		Summary:   "p99 {{.value}} on {{.verb}} > {{.threshold}}", Remediation: "fix",
		Match: MetricAbove("m", "p99", ">", 10, "seconds")}
}

func rep(status result.Status, values ...float64) *result.Report {
	r := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind}
	res := result.Result{Name: "m", Status: status}
	if !status.Measured() {
		res.Reason = "no permission"
	}
	for i, v := range values {
		res.Metrics = append(res.Metrics, result.Metric{Name: "p99", Unit: "seconds", Value: v, Labels: map[string]string{"verb": []string{"GET", "LIST"}[i%2]}})
	}
	r.Results = append(r.Results, res)
	return r
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name     string
		r        *result.Report
		status   string
		findings int
	}{
		{"fires per hit", rep(result.StatusPass, 12, 31), Fired, 2},
		{"clear", rep(result.StatusPass, 3, 10), Clear, 0},
		{"skipped input is not evaluated", rep(result.StatusSkip), NotEvaluated, 0},
		{"errored input is not evaluated", rep(result.StatusError), NotEvaluated, 0},
		{"missing input is not evaluated", &result.Report{APIVersion: result.APIVersion, Kind: result.Kind}, NotEvaluated, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := Evaluate(c.r, []Rule{rule()})
			if len(evals) != 1 || evals[0].Status != c.status || len(fs) != c.findings {
				t.Fatalf("evals %+v findings %d", evals, len(fs))
			}
			if c.status == NotEvaluated && evals[0].Reason == "" {
				t.Fatal("not-evaluated without a reason")
			}
			c.r.Findings = append(c.r.Findings, fs...)
			if err := c.r.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	fs, _ := Evaluate(rep(result.StatusWarn, 12), []Rule{rule()})
	if got := fs[0].Summary; got != "p99 12 s on GET > 10 s" {
		t.Fatalf("summary %q", got)
	}
	if fs[0].Evidence[0].Value != 12 || fs[0].Evidence[0].Result != "m" || fs[0].Threshold.Source != "test" {
		t.Fatalf("finding %+v", fs[0])
	}
}

func TestRulesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
		if r.Title == "" || r.Severity.Rank() == 0 || r.Threshold.Source == "" || r.Remediation == "" || len(r.Needs) == 0 || r.Match == nil || r.Summary == "" {
			t.Errorf("rule %s is incomplete: %+v", r.ID, r)
		}
		if !strings.HasPrefix(r.ID, "KS-") {
			t.Errorf("rule id %s does not start with KS-", r.ID)
		}
	}
}

// TestReferenceUpToDate keeps docs/rules.md generated from the rules.
func TestReferenceUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "rules.md")
	want := Reference(Rules())
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/rules.md is out of date: run go test ./internal/check -update (%v)", err)
	}
}
