package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/engine/rule"
	"github.com/kubeslow/kubeslow/internal/engine/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/measure/availability/availabilitytest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestMarkOutages: etcd stalled 10 s (from T0+5 s) in a run. The benchmark and the observation that ran
// through it say so; the one that ran after does not; a finding resting on a result that ran through it is
// lowered to info and explained by KS-ETCD-STALL, which fired from the probe's result; a finding on a result
// clear of the stall is left alone.
func TestMarkOutages(t *testing.T) {
	av := availability.Analyze(availabilitytest.Timeline(availabilitytest.S("ok", 5), availabilitytest.S("etcd", 10), availabilitytest.S("ok", 30)))
	at := func(s int) time.Time { return ruletest.T0.Add(time.Duration(s) * time.Second) }
	rep := ruletest.Report(nil, av,
		result.Result{Name: "api.slo", Status: result.StatusFail, Reason: "p99 high", Start: at(0), End: at(40)},
		result.Result{Name: "pods.startup", Status: result.StatusError, Reason: "creating pods: etcdserver: request timed out", Start: at(3), End: at(12)},
		result.Result{Name: "nodes.health", Status: result.StatusFail, Start: at(20), End: at(25)},
		result.Result{Name: result.SelfPrefix + "overhead", Status: result.StatusPass, Start: at(0), End: at(40)},
	)
	findings, _ := rule.Evaluate(rep, availability.Rules())
	rep.Findings = append(findings,
		result.Finding{ID: "KS-API-LATENCY", Severity: result.SeverityError, Summary: "p99 2 s", Results: []string{"api.slo"}},
		result.Finding{ID: "KS-NODE-X", Severity: result.SeverityWarning, Summary: "node", Results: []string{"nodes.health"}})
	markOutages(rep)
	byName := map[string]result.Result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
	}
	if r := byName["pods.startup"]; r.Status != result.StatusError || !strings.HasPrefix(r.Reason, "creating pods") || !strings.Contains(r.Reason, "ran through an outage: etcd did not answer the apiserver for 10.0 s") {
		t.Errorf("pods.startup: %s %q", r.Status, r.Reason)
	}
	if r := byName["api.slo"]; !strings.Contains(r.Reason, "ran through an outage") {
		t.Errorf("api.slo: %q", r.Reason)
	}
	if r := byName["nodes.health"]; r.Reason != "" {
		t.Errorf("nodes.health ran after the stall: %q", r.Reason)
	}
	if r := byName[result.SelfPrefix+"overhead"]; r.Reason != "" {
		t.Errorf("kubeslow's own result marked: %q", r.Reason)
	}
	got := map[string]result.Finding{}
	for _, f := range rep.Findings {
		got[f.ID] = f
	}
	if f, ok := got[availability.RuleEtcdStall]; !ok || f.Severity != result.SeverityError {
		t.Fatalf("the stall is not named: %+v", rep.Findings)
	}
	if f := got["KS-API-LATENCY"]; f.Severity != result.SeverityInfo || f.ExplainedBy != availability.RuleEtcdStall || !strings.Contains(f.Summary, "measured through KS-ETCD-STALL") {
		t.Errorf("latency finding: %+v", f)
	}
	if f := got["KS-NODE-X"]; f.Severity != result.SeverityWarning || f.ExplainedBy != "" {
		t.Errorf("a finding clear of the stall changed: %+v", f)
	}
	if ExitCode(rep, result.SeverityWarning) != 1 {
		t.Error("a run that lived through an etcd stall exits 0")
	}
}
