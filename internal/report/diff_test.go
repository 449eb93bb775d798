package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestCompare(t *testing.T) {
	before := sampleReport()
	after := sampleReport()
	// After the fix: the node finding is gone, the SLO finding stays; a latency doubled, a rate fell,
	// another moved within the tolerance; a new finding appears; a skipped result now measures and fails.
	after.Findings = after.Findings[1:]
	after.Findings = append(after.Findings, result.Finding{ID: "KS-ETCD-FSYNC", Severity: result.SeverityWarning, Title: "slow fsync"})
	set := func(r *result.Report, res, name string, v float64, unit string) {
		x := r.Result(res)
		x.Metrics = append(x.Metrics, result.Metric{Name: name, Unit: unit, Value: v})
	}
	set(before, "etcd.health", "wal_fsync_p99", 0.01, "seconds")
	set(after, "etcd.health", "wal_fsync_p99", 0.02, "seconds")
	set(before, "etcd.health", "requests_per_second", 100, "requests_per_second")
	set(after, "etcd.health", "requests_per_second", 50, "requests_per_second")
	set(before, "etcd.health", "commit_p99", 0.010, "seconds")
	set(after, "etcd.health", "commit_p99", 0.011, "seconds")
	set(before, "etcd.health", "keys", 10, "count")
	set(after, "etcd.health", "keys", 30, "count")
	after.Result("api.audit").Status = result.StatusFail

	d := Compare(before, after, DefaultTolerance)
	if len(d.NewFindings) != 1 || d.NewFindings[0].ID != "KS-ETCD-FSYNC" || len(d.FixedFindings) != 1 || d.FixedFindings[0].ID != "KS-POD-NODE" {
		t.Fatalf("findings: new %+v gone %+v", d.NewFindings, d.FixedFindings)
	}
	if len(d.Status) != 1 || !d.Status[0].Regression || d.Status[0].Result != "api.audit" {
		t.Fatalf("status %+v", d.Status)
	}
	byName := map[string]MetricChange{}
	for _, m := range d.Metrics {
		byName[m.Name] = m
	}
	if m, ok := byName["wal_fsync_p99"]; !ok || !m.Regression || m.Ratio != 2 {
		t.Errorf("latency doubling not a regression: %+v", m)
	}
	if m, ok := byName["requests_per_second"]; !ok || !m.Regression {
		t.Errorf("rate halving not a regression: %+v", m)
	}
	if _, ok := byName["commit_p99"]; ok {
		t.Error("a 10% move is within the tolerance")
	}
	if m, ok := byName["keys"]; !ok || m.Regression {
		t.Errorf("a count change is reported without judgement: %+v", m)
	}
	if d.Regressions() != 4 {
		t.Errorf("regressions %d, want 4 (new finding, status, latency, rate)", d.Regressions())
	}
	var b bytes.Buffer
	if err := WriteDiffText(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REGRESSIONS: 4", "NEW FINDINGS (1)", "GONE (1)", "api.audit: Skip -> Fail  (worse)", "x2.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("diff text lacks %q:\n%s", want, b.String())
		}
	}
	if same := Compare(before, before, DefaultTolerance); same.Regressions() != 0 || len(same.Metrics) != 0 {
		t.Errorf("a run against itself: %+v", same)
	}
}
