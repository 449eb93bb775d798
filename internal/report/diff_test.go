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

// TestCompareItems: a rule that fired in both runs is compared item by item; an item that only the second
// run lists is a regression, one that went away is listed as gone; items past a cut list are not judged.
func TestCompareItems(t *testing.T) {
	f := func(count int, keys ...string) result.Finding {
		fd := result.Finding{ID: "KS-NET-POD", Severity: result.SeverityWarning, Title: "pod network", Threshold: result.Threshold{Op: "<", Value: 0.9, Unit: "ratio"}, ItemCount: count}
		for i, k := range keys {
			fd.Items = append(fd.Items, result.Item{Key: k, Value: 0.1 * float64(i+1)})
		}
		return fd
	}
	a, b := sampleReport(), sampleReport()
	a.Findings = []result.Finding{f(2, "path=pod->pod", "path=pod->Service")}
	b.Findings = []result.Finding{f(2, "path=pod->Service", "path=pod->pod same node")}
	d := Compare(a, b, DefaultTolerance)
	if len(d.NewFindings) != 0 || len(d.FixedFindings) != 0 || len(d.Items) != 2 {
		t.Fatalf("diff %+v", d)
	}
	if it := d.Items[0]; !it.New || it.Key != "path=pod->pod same node" || it.ID != "KS-NET-POD" {
		t.Errorf("new item %+v", it)
	}
	if it := d.Items[1]; it.New || it.Key != "path=pod->pod" {
		t.Errorf("gone item %+v", it)
	}
	if d.Regressions() != 1 {
		t.Errorf("regressions %d, want 1 (the new item)", d.Regressions())
	}
	var buf bytes.Buffer
	if err := WriteDiffText(&buf, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "KS-NET-POD  path=pod->pod same node  0.2  new  (worse)") {
		t.Errorf("diff text:\n%s", buf.String())
	}
	// The first run's list was cut: an item missing from it may have fired; not judged.
	a.Findings = []result.Finding{f(3000, "path=pod->pod", "path=pod->Service")}
	if d := Compare(a, b, DefaultTolerance); d.Regressions() != 0 || len(d.Items) != 1 || d.Items[0].New {
		t.Errorf("cut list: %+v", d.Items)
	}
}
