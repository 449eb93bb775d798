package result_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

var update = flag.Bool("update", false, "rewrite golden files")

func sample() *result.Report {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return &result.Report{
		APIVersion: result.APIVersion, Kind: result.Kind, RunID: "20261122-100000-abcdef",
		Tool:    result.Tool{Name: "kubeslow", Version: "v0.1.0", Commit: "0123456"},
		Cluster: result.Cluster{Name: "lab", Server: "https://198.19.255.1:6443", UID: "uid-1", Version: "v1.36.3", Lab: true, Nodes: result.NodeCounts{Total: 51, Ready: 51, Simulated: 50}, Facts: map[string]string{"cni": "bridge"}},
		Start:   t0, End: t0.Add(90 * time.Second),
		Results: []result.Result{
			{Name: "pods.startup", Status: result.StatusFail, Reason: "p99 7.2 s > 5 s", Start: t0, End: t0.Add(time.Minute),
				Metrics: []result.Metric{{Name: "pod_startup_p99", Unit: "seconds", Value: 7.2, Labels: map[string]string{"phase": "sli"}}},
				Records: []result.Record{{ID: "ns/pod-1", Labels: map[string]string{"node": "kwok-node-1"}, Values: map[string]float64{"sli_seconds": 7.2}, Times: map[string]time.Time{"created": t0}}},
				Series:  []result.Series{{Name: "startup", Unit: "seconds", Points: []result.Point{{T: t0, V: 1.5}}, Marks: []result.Mark{{T: t0, Label: "change point"}}}}},
			{Name: "etcd.health", Status: result.StatusSkip, Reason: "no etcd endpoint configured",
				OutOfReach: []result.OutOfReach{{Signal: "etcd WAL fsync", Why: "no etcd endpoint configured", Fix: "pass --etcd-endpoint", Source: "etcd-metrics"}}},
		},
		Findings: []result.Finding{{
			ID: "KS-POD-001", Severity: result.SeverityError, Title: "Pod start-up SLO violated", Summary: "p99 7.2 s > 5 s; sandbox phase dominates",
			Evidence:    []result.Evidence{{Name: "pod_startup_p99", Value: 7.2, Unit: "seconds", Result: "pods.startup"}},
			Threshold:   result.Threshold{Op: ">", Value: 5, Unit: "seconds", Source: "Kubernetes SIG Scalability pod startup SLO"},
			Remediation: "look at the CNI", Cases: []string{"E"}, Results: []string{"pods.startup"},
			Items: []result.Item{{Key: "node=kwok-node-1", Value: 7.2, Summary: "p99 7.2 s > 5 s; sandbox phase dominates"}, {Key: "node=kwok-node-7", Value: 5.5, Summary: "p99 5.5 s > 5 s"}}, ItemCount: 1200,
		}},
		Rules: []result.RuleEvaluation{{ID: "KS-POD-001", Status: result.RuleFired}, {ID: "KS-ETCD-001", Status: result.RuleNotEvaluated, Reason: "etcd.health was not measured (Skip: no etcd endpoint configured)"}},
		Gaps: []result.Gap{{Source: "etcd-metrics", Title: "etcd's own metrics", Reason: "no etcd endpoint configured", Fix: "pass --etcd-endpoint",
			Measurements: []string{"etcd.health"}, Signals: []string{"etcd WAL fsync [etcd.health]"}, Rules: []string{"KS-ETCD-001"}}},
	}
}

func TestGoldenJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := result.Encode(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("report JSON differs from %s (run go test -update if the change is intended, and bump APIVersion if it is not additive):\n%s", golden, buf.String())
	}
	back, err := result.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := result.Encode(&again, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), want) {
		t.Fatal("decode/encode round trip changed the report")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(r *result.Report)
		want   string
	}{
		{"ok", func(*result.Report) {}, ""},
		{"wrong version", func(r *result.Report) { r.APIVersion = "v0" }, "not a kubeslow report"},
		{"skip without reason", func(r *result.Report) { r.Results[1].Reason = "" }, "needs a reason"},
		{"bad status", func(r *result.Report) { r.Results[0].Status = "Maybe" }, "invalid status"},
		{"bad rule status", func(r *result.Report) { r.Rules[0].Status = "passed" }, `status "passed"`},
		{"more items than counted", func(r *result.Report) { r.Findings[0].ItemCount = 1 }, "itemCount 1 below its 2 items"},
		{"NaN metric", func(r *result.Report) { r.Results[0].Metrics[0].Value = nan() }, "not finite"},
		{"finding without evidence", func(r *result.Report) { r.Findings[0].Evidence = nil }, "no evidence"},
		{"threshold without source", func(r *result.Report) { r.Findings[0].Threshold.Source = "" }, "no source"},
		{"no remediation", func(r *result.Report) { r.Findings[0].Remediation = "" }, "no remediation"},
		{"out of reach without a fix", func(r *result.Report) {
			r.Results[1].OutOfReach = []result.OutOfReach{{Signal: "etcd WAL fsync", Why: "managed control plane"}}
		}, "needs a signal, why and fix"},
		{"bad severity", func(r *result.Report) { r.Findings[0].Severity = "huge" }, "invalid severity"},
		{"gap without a reason", func(r *result.Report) { r.Gaps[0].Reason = "" }, "gaps[0]: needs a source, title and reason"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sample()
			c.mutate(r)
			err := r.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, c.want)
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestDecodeRejects(t *testing.T) {
	for name, in := range map[string]string{
		"garbage":       "not json",
		"unknown field": `{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","surprise":1}`,
		"other kind":    `{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Other"}`,
		"truncated":     `{"apiVersion":"kubeslow.dev/v1alpha1","kind":"Report","results":[`,
	} {
		if _, err := result.Decode(strings.NewReader(in)); err == nil {
			t.Errorf("%s: Decode accepted %q", name, in)
		}
	}
}

func TestSeverity(t *testing.T) {
	if _, err := result.ParseSeverity("loud"); err == nil {
		t.Fatal("ParseSeverity accepted an unknown severity")
	}
	order := []result.Severity{result.SeverityInfo, result.SeverityWarning, result.SeverityError, result.SeverityCritical}
	for i := 1; i < len(order); i++ {
		if order[i].Rank() <= order[i-1].Rank() {
			t.Fatalf("%s does not outrank %s", order[i], order[i-1])
		}
	}
}

func TestMetricLookup(t *testing.T) {
	r := sample()
	res := r.Result("pods.startup")
	if res == nil || res.Metric("pod_startup_p99", map[string]string{"phase": "sli"}) == nil {
		t.Fatal("metric not found by name and labels")
	}
	if res.Metric("pod_startup_p99", map[string]string{"phase": "other"}) != nil {
		t.Fatal("label mismatch matched")
	}
	if r.Result("nope") != nil {
		t.Fatal("unknown result found")
	}
}
