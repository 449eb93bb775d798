package rule

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func testRule() Rule {
	return Rule{ID: "KS-T-1", Title: "t", Severity: result.SeverityWarning,
		When: Condition{Metric: Metric{"m", "p99"}, Op: ">", Value: 10, Unit: "seconds"}, Source: "test",
		Summary: "p99 {{.value}} on {{.verb}} > {{.threshold}}", Remediation: "fix"}
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

// absent marks the rule's metric as absent from its source (a Prometheus without the series).
func absent(r *result.Report) *result.Report {
	r.Results[0].Absent = []result.Absence{{Metric: "p99", Series: "x_bucket", Reason: "not scraped"}}
	return r
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name     string
		r        *result.Report
		status   result.RuleStatus
		findings int
	}{
		{"fires once for several items", rep(result.StatusPass, 12, 31), result.RuleFired, 1},
		{"clear", rep(result.StatusPass, 3, 10), result.RuleClear, 0},
		{"skipped input is not evaluated", rep(result.StatusSkip), result.RuleNotEvaluated, 0},
		{"errored input is not evaluated", rep(result.StatusError), result.RuleNotEvaluated, 0},
		{"missing input is not evaluated", &result.Report{APIVersion: result.APIVersion, Kind: result.Kind}, result.RuleNotEvaluated, 0},
		{"absent metric is not evaluated", absent(rep(result.StatusPass)), result.RuleNotEvaluated, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, evals := Evaluate(c.r, []Rule{testRule()})
			if len(evals) != 1 || evals[0].Status != c.status || len(fs) != c.findings {
				t.Fatalf("evals %+v findings %d", evals, len(fs))
			}
			if c.status == result.RuleNotEvaluated && evals[0].Reason == "" {
				t.Fatal("not-evaluated without a reason")
			}
			c.r.Findings = append(c.r.Findings, fs...)
			if err := c.r.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	fs, _ := Evaluate(rep(result.StatusWarn, 12), []Rule{testRule()})
	if got := fs[0].Summary; got != "p99 12 s on GET > 10 s" {
		t.Fatalf("summary %q", got)
	}
	if fs[0].Evidence[0].Value != 12 || fs[0].Evidence[0].Result != "m" || fs[0].Threshold.Source != "test" {
		t.Fatalf("finding %+v", fs[0])
	}
}

// TestOneFindingPerCause: a rule that holds for several items is one finding, its summary and evidence the
// worst item's, every item listed worst first (in the threshold's direction), and a long list cut at
// MaxItems with the count of all.
func TestOneFindingPerCause(t *testing.T) {
	fs, _ := Evaluate(rep(result.StatusPass, 12, 31, 5, 40), []Rule{testRule()})
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Summary != "p99 40 s on LIST > 10 s" || f.Evidence[0].Value != 40 || f.ItemCount != 3 || len(f.Items) != 3 {
		t.Fatalf("finding %+v", f)
	}
	if f.Items[0].Key != "verb=LIST" || f.Items[0].Value != 40 || f.Items[1].Value != 31 || f.Items[2].Value != 12 || f.Items[2].Summary != "p99 12 s on GET > 10 s" {
		t.Fatalf("items %+v", f.Items)
	}
	// Below a threshold, the lowest is the worst.
	low := testRule()
	low.When.Op, low.When.Value = "<", 20
	if fs, _ := Evaluate(rep(result.StatusPass, 12, 31, 5), []Rule{low}); len(fs) != 1 || fs[0].Items[0].Value != 5 || fs[0].Items[1].Value != 12 {
		t.Fatalf("findings %+v", fs)
	}
	// Thousands of items: one finding, MaxItems listed, all counted.
	var many []float64
	for i := range 3000 {
		many = append(many, 11+float64(i))
	}
	fs, _ = Evaluate(rep(result.StatusPass, many...), []Rule{testRule()})
	if len(fs) != 1 || fs[0].ItemCount != 3000 || len(fs[0].Items) != result.MaxItems || fs[0].Items[0].Value != 3010 {
		t.Fatalf("%d findings, first with %d items of %d", len(fs), len(fs[0].Items), fs[0].ItemCount)
	}
	r := rep(result.StatusPass)
	r.Findings = fs
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A finding explained by another that fired is kept, lowered to info, and names it; alone it is unchanged.
func TestExplainedBy(t *testing.T) {
	cause := testRule()
	cause.ID, cause.Severity = "KS-T-CAUSE", result.SeverityError
	cause.When.Value = 20
	effect := testRule()
	effect.ExplainedBy = []string{"KS-T-CAUSE"}
	for _, c := range []struct {
		name       string
		values     []float64
		severity   result.Severity
		explained  string
		findingsNo int
	}{
		{"both fire", []float64{12, 31}, result.SeverityInfo, "KS-T-CAUSE", 2},
		{"the effect alone", []float64{12, 15}, result.SeverityWarning, "", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rep(result.StatusPass, c.values...)
			fs, _ := Evaluate(r, []Rule{effect, cause})
			if len(fs) != c.findingsNo {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			if f.ID != effect.ID || f.Severity != c.severity || f.ExplainedBy != c.explained {
				t.Fatalf("effect finding %+v", f)
			}
			if c.explained != "" && !strings.Contains(f.Summary, "a symptom of KS-T-CAUSE") {
				t.Fatalf("summary %q does not name the cause", f.Summary)
			}
			r.Findings = fs
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A rule that sees the same cause as another from a second source is folded into that one's finding when both
// fire (its summary and evidence kept under SeenAlso, its evaluation saying so), and stands alone otherwise.
func TestSameCause(t *testing.T) {
	api := testRule()
	api.ID = "KS-T-API"
	audit := testRule()
	audit.ID, audit.When.Value = "KS-T-AUDIT", 20
	audit.SameCause = []string{"KS-T-API"}
	for _, c := range []struct {
		name   string
		values []float64
		ids    []string
		seen   int
	}{
		{"both fire: one finding", []float64{12, 31}, []string{"KS-T-API"}, 1},
		{"the second source alone", []float64{12, 31}, []string{"KS-T-AUDIT"}, 0},
		{"the first source alone", []float64{12, 15}, []string{"KS-T-API"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rules := []Rule{audit, api}
			if c.ids[0] == "KS-T-AUDIT" {
				rules = []Rule{audit}
			}
			r := rep(result.StatusPass, c.values...)
			fs, evals := Evaluate(r, rules)
			var ids []string
			for _, f := range fs {
				ids = append(ids, f.ID)
			}
			if strings.Join(ids, ",") != strings.Join(c.ids, ",") {
				t.Fatalf("findings %v, want %v", ids, c.ids)
			}
			if len(fs[0].SeenAlso) != c.seen {
				t.Fatalf("seen also %+v", fs[0].SeenAlso)
			}
			if c.seen > 0 {
				s := fs[0].SeenAlso[0]
				if s.ID != "KS-T-AUDIT" || s.Summary != "p99 31 s on LIST > 20 s" || len(s.Evidence) == 0 {
					t.Fatalf("seen also %+v", s)
				}
				for _, e := range evals {
					if e.ID == "KS-T-AUDIT" && (e.Status != result.RuleFired || !strings.Contains(e.Reason, "folded into")) {
						t.Fatalf("evaluation %+v", e)
					}
				}
			}
			r.Findings = fs
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An item lowered below the rule's severity (evidence older than the run) follows the current ones, and a
// finding whose items are all lowered takes their severity.
func TestHitSeverity(t *testing.T) {
	rl := testRule()
	rl.Severity = result.SeverityError
	rl.Match = func(r *result.Report, rl Rule) []Hit {
		hits := rl.Crossing(r)
		for i := range hits {
			if hits[i].Value > 30 { // "old"
				hits[i].Severity = result.SeverityInfo
			}
		}
		return hits
	}
	fs, _ := Evaluate(rep(result.StatusPass, 12, 31), []Rule{rl})
	if fs[0].Severity != result.SeverityError || fs[0].Items[0].Value != 12 || fs[0].Items[1].Value != 31 {
		t.Fatalf("finding %s, items %+v", fs[0].Severity, fs[0].Items)
	}
	fs, _ = Evaluate(rep(result.StatusPass, 40, 31), []Rule{rl})
	if fs[0].Severity != result.SeverityInfo {
		t.Fatalf("all items lowered: finding %s", fs[0].Severity)
	}
}

// Causes chain: a symptom names its direct cause, which names its own; a cycle of declared causes never makes
// two findings each other's symptom; a symptom whose causes did not fire says so, with what was clear.
func TestCausalChain(t *testing.T) {
	mk := func(id string, v float64, by ...string) Rule {
		r := testRule()
		r.ID, r.When.Value, r.ExplainedBy = id, v, by
		return r
	}
	// On rep(12, 31): thresholds below 12 fire on both items, below 31 on one, 40 never.
	disk := mk("KS-T-DISK", 5)
	api := mk("KS-T-API", 5, "KS-T-DISK")
	slo := mk("KS-T-SLO", 5, "KS-T-CPU", "KS-T-API")
	cpu := mk("KS-T-CPU", 40)
	fs, _ := Evaluate(rep(result.StatusPass, 12, 31), []Rule{slo, api, disk, cpu})
	by := map[string]result.Finding{}
	for _, f := range fs {
		by[f.ID] = f
	}
	if by["KS-T-SLO"].ExplainedBy != "KS-T-API" || by["KS-T-API"].ExplainedBy != "KS-T-DISK" || by["KS-T-DISK"].ExplainedBy != "" {
		t.Fatalf("chain %+v", fs)
	}
	if by["KS-T-SLO"].NoCause != "" || by["KS-T-DISK"].NoCause != "" {
		t.Fatalf("a symptom with a cause, or a cause, says no cause was found: %+v", fs)
	}

	// The disk clear: the API latency is a symptom with no cause found, and says what was checked.
	disk.When.Value = 40
	fs, _ = Evaluate(rep(result.StatusPass, 12, 31), []Rule{slo, api, disk, cpu})
	for _, f := range fs {
		if f.ID == "KS-T-API" && (f.ExplainedBy != "" || !strings.HasPrefix(f.NoCause, "no cause found among the measured signals") || !strings.Contains(f.NoCause, "clear: KS-T-DISK")) {
			t.Fatalf("causeless symptom %+v", f)
		}
	}

	// Two rules declared each other's cause: one is the other's symptom, never both.
	a, b := mk("KS-T-A", 5, "KS-T-B"), mk("KS-T-B", 5, "KS-T-A")
	fs, _ = Evaluate(rep(result.StatusPass, 12, 31), []Rule{a, b})
	if n := btoi(fs[0].ExplainedBy != "") + btoi(fs[1].ExplainedBy != ""); n != 1 {
		t.Fatalf("cycle: %+v", fs)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
