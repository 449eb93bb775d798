package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestWriteText(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := func(id string, sev result.Severity) result.Finding {
		return result.Finding{ID: id, Severity: sev, Title: "title " + id, Summary: "summary " + id,
			Evidence: []result.Evidence{{Name: "x", Value: 1}}, Threshold: result.Threshold{Op: ">", Value: 0.5, Unit: "seconds", Source: "src"}, Remediation: "fix " + id}
	}
	r := &result.Report{RunID: "r1", Start: t0, End: t0.Add(2 * time.Second), Cluster: result.Cluster{Name: "c", Server: "s", Nodes: result.NodeCounts{Total: 3, Ready: 2}},
		Results: []result.Result{{Name: "a.b", Status: result.StatusSkip, Reason: "no permission",
			OutOfReach: []result.OutOfReach{{Signal: "etcd WAL fsync latency", Why: "a managed control plane", Fix: "pass --etcd-endpoint"}}},
			{Name: "c.d", Status: result.StatusWarn, Metrics: []result.Metric{{Name: "lat", Unit: "seconds", Value: 0.123456, Labels: map[string]string{"verb": "GET", "a": "1"}}}}},
		Findings: []result.Finding{f("KS-B", result.SeverityWarning), f("KS-A", result.SeverityCritical), f("KS-C", result.SeverityWarning)},
		Rules:    []result.RuleEvaluation{{ID: "KS-A", Status: result.RuleFired}, {ID: "KS-X", Status: result.RuleNotEvaluated, Reason: "a.b was not measured"}},
	}
	// KS-C fired on 1,200 nodes: one finding, the worst first, the first ten listed and the rest counted.
	for i := range result.MaxItems {
		r.Findings[2].Items = append(r.Findings[2].Items, result.Item{Key: fmt.Sprintf("node=n%d", i), Value: float64(100 - i)})
	}
	r.Findings[2].ItemCount = 1200
	r.Findings[0].SeenAlso = []result.SeenAlso{{ID: "KS-B-AUDIT", Title: "t", Summary: "800 409s from calico-node", Results: []string{"api.audit"}}}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ia, ib, ic := strings.Index(out, "KS-A"), strings.Index(out, "KS-B"), strings.Index(out, "KS-C")
	if ia < 0 || !(ia < ib && ib < ic) {
		t.Fatalf("findings not worst first then by id:\n%s", out)
	}
	for _, want := range []string{"FINDINGS (3)", "[CRITICAL] KS-A", "seen also by KS-B-AUDIT (api.audit): 800 409s from calico-node", "threshold: > 0.5 seconds (src)", "fix: fix KS-A",
		"RULES: 1 fired, 0 clear, 1 not evaluated",
		"COULD NOT MEASURE (1 source(s))", "  etcd WAL fsync latency: a managed control plane\n      measurements: a.b\n", "rules not evaluated: KS-X\n", "fix: pass --etcd-endpoint",
		"1200 items, worst first (the first 50 listed):", "node=n0  100 s", "node=n9  91 s", "... and 1190 more (-o json lists 50)", "a.b  Skip  see could not measure: etcd WAL fsync latency", "0.123", "a=1 verb=GET"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestQuantileRows(t *testing.T) {
	ph := func(p string) map[string]string { return map[string]string{"phase": p} }
	ms := []result.Metric{
		{Name: "phase_p50", Unit: "seconds", Value: 1, Labels: ph("a")},
		{Name: "phase_p99", Unit: "seconds", Value: 3, Labels: ph("a")},
		{Name: "phase_p50", Unit: "seconds", Value: 4, Labels: ph("b")},
		{Name: "phase_max", Unit: "seconds", Value: 5, Labels: ph("b")},
		{Name: "phase_p50", Unit: "seconds", Value: 7, Labels: ph("c")}, // alone: stays a plain metric
		{Name: "pods", Unit: "count", Value: 9},
		{Name: "_p50", Unit: "count", Value: 2},
	}
	rows, rest := QuantileRows(ms)
	if len(rows) != 2 || rows[0].Labels["phase"] != "a" || rows[1].Labels["phase"] != "b" {
		t.Fatalf("rows %+v", rows)
	}
	if *rows[0].Values[0] != 1 || rows[0].Values[1] != nil || *rows[0].Values[2] != 3 || rows[0].Values[3] != nil || *rows[1].Values[3] != 5 {
		t.Fatalf("row values wrong: %+v", rows)
	}
	if len(rest) != 3 || rest[0].Labels["phase"] != "c" || rest[1].Name != "pods" || rest[2].Name != "_p50" {
		t.Fatalf("rest %+v", rest)
	}
	var b bytes.Buffer
	if err := WriteText(&b, &result.Report{Results: []result.Result{{Name: "x", Status: result.StatusPass, Metrics: ms}}}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "p50  p90  p99  max") || !strings.Contains(out, "phase  1    -    3    -") {
		t.Fatalf("no quantile table:\n%s", out)
	}
}

// TestTextBounds: a quantile estimated within a histogram bucket says so, with the bucket, in the metric
// list and in a quantile table; an exact value says nothing more.
func TestTextBounds(t *testing.T) {
	ms := []result.Metric{
		{Name: "latency_p99_single", Unit: "seconds", Value: 0.0495, Labels: map[string]string{"verb": "PUT"}, Bounds: &result.Bounds{Lower: 0.04, Upper: 0.05}},
		{Name: "apf_wait_p99", Unit: "seconds", Value: 60, Bounds: &result.Bounds{Lower: 60, Upper: 60, Unbounded: "upper"}},
		{Name: "offset_p99", Unit: "seconds", Value: -0.2, Bounds: &result.Bounds{Lower: -0.2, Upper: -0.2, Unbounded: "lower"}},
		{Name: "requests", Unit: "count", Value: 12},
		{Name: "op_p50", Unit: "seconds", Value: 0.015, Bounds: &result.Bounds{Lower: 0.01, Upper: 0.02}},
		{Name: "op_max", Unit: "seconds", Value: 0.3},
	}
	var b bytes.Buffer
	if err := WriteText(&b, &result.Report{Results: []result.Result{{Name: "x", Status: result.StatusPass, Metrics: ms}}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"0.0495 (estimate, bucket 0.04–0.05 s)", "60 (estimate: at least 60 s, in the +Inf bucket)",
		"-0.2 (estimate: at most -0.2 s, in the lowest bucket)", "0.015 (estimate, bucket 0.01–0.02 s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "estimate") != 4 {
		t.Errorf("exact values marked as estimates:\n%s", out)
	}
}

// TestCausalOrder: causes lead (worst first), each symptom under its cause down the chain, and a symptom with no
// cause found follows the causes, saying so.
func TestCausalOrder(t *testing.T) {
	f := func(id string, sev result.Severity, by, noCause string) result.Finding {
		return result.Finding{ID: id, Severity: sev, Title: id, Summary: "s " + id, ExplainedBy: by, NoCause: noCause, Remediation: "fix"}
	}
	fs := []result.Finding{
		f("KS-SLO", result.SeverityInfo, "KS-API", ""),
		f("KS-LONE", result.SeverityError, "", "no cause found among the measured signals; clear: KS-X"),
		f("KS-API", result.SeverityInfo, "KS-DISK", ""),
		f("KS-DISK", result.SeverityWarning, "", ""),
		f("KS-EVENTS", result.SeverityError, "", ""),
		f("KS-STUCK", result.SeverityInfo, "KS-EVENTS", ""),
	}
	tree := CausalOrder(fs)
	var got []string
	var walk func(ns []CauseNode, depth int)
	walk = func(ns []CauseNode, depth int) {
		for _, n := range ns {
			got = append(got, strings.Repeat(">", depth)+n.Finding.ID)
			walk(n.Symptoms, depth+1)
		}
	}
	walk(tree, 0)
	if want := "KS-EVENTS >KS-STUCK KS-DISK >KS-API >>KS-SLO KS-LONE"; strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
	var b bytes.Buffer
	if err := WriteText(&b, &result.Report{Findings: fs}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"FINDINGS (6): 2 cause(s) first, each with its symptoms under it; then 1 symptom(s) with no cause found",
		"\n          └ symptom of KS-API: [INFO] KS-SLO", "cause: no cause found among the measured signals; clear: KS-X"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}
