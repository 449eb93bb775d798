package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/apiaudit/apiaudittest"
	"github.com/kubeslow/kubeslow/internal/measure/apislo/apislotest"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth/etcdhealthtest"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup/podstartuptest"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestTwoUnrelatedFaults: etcd's disk is slow (so the apiserver answers slowly) and, unrelated, pods ask for
// more CPU than any node has; a client's updates also keep conflicting, seen by the apiserver's counters and by
// the audit log. The report, from the measurements' own analyses of these inputs, leads with the two causes,
// each with its symptoms under it, and shows the conflicts once.
func TestTwoUnrelatedFaults(t *testing.T) {
	etcd := etcdhealthtest.Healthy
	etcd.Fsync = 0.04
	api := apislotest.With(func(a *apislotest.Server) {
		a.GetLatency = 3
		a.Conflicts = map[string]int{"ipamblocks": 3000}
	})
	r := ruletest.Report(nil, etcd.Result(t), api.Result(t), podstartuptest.Unschedulable.Result(), apiaudittest.Run(0, 800))
	r.Findings, r.Rules = rule.Evaluate(r, Rules())
	by := map[string]result.Finding{}
	for _, f := range r.Findings {
		by[f.ID] = f
	}
	for symptom, cause := range map[string]string{"KS-API-LATENCY": "KS-ETCD-FSYNC", "KS-POD-STUCK": "KS-POD-EVENTS"} {
		if f, ok := by[symptom]; !ok || f.ExplainedBy != cause || f.Severity != result.SeverityInfo {
			t.Errorf("%s: %+v, want a symptom of %s", symptom, f, cause)
		}
	}
	if _, ok := by["KS-AUDIT-409"]; ok || len(by["KS-API-409"].SeenAlso) != 1 || by["KS-API-409"].SeenAlso[0].ID != "KS-AUDIT-409" {
		t.Errorf("the conflicts are not one finding: %+v", by["KS-API-409"])
	}
	tree := report.CausalOrder(r.Findings)
	roots := map[string][]string{}
	for _, n := range tree {
		for _, s := range n.Symptoms {
			roots[n.Finding.ID] = append(roots[n.Finding.ID], s.Finding.ID)
		}
	}
	if strings.Join(roots["KS-ETCD-FSYNC"], ",") != "KS-API-LATENCY" || strings.Join(roots["KS-POD-EVENTS"], ",") != "KS-POD-STUCK" {
		t.Fatalf("causal order %v", roots)
	}
	for _, n := range tree {
		if n.Finding.ExplainedBy != "" {
			t.Errorf("a symptom at the top: %s", n.Finding.ID)
		}
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out[:strings.Index(out, "RULES:")])
	// The causes lead; each symptom is written after its cause and before the next cause.
	iEtcd, iAPI, iPods, iStuck := strings.Index(out, "] KS-ETCD-FSYNC"), strings.Index(out, "symptom of KS-ETCD-FSYNC: [INFO] KS-API-LATENCY"),
		strings.Index(out, "] KS-POD-EVENTS"), strings.Index(out, "symptom of KS-POD-EVENTS: [INFO] KS-POD-STUCK")
	if iEtcd < 0 || iAPI < 0 || iPods < 0 || iStuck < 0 || !(iPods < iStuck && iEtcd < iAPI) || (iEtcd < iPods && iAPI > iPods) || (iPods < iEtcd && iStuck > iEtcd) {
		t.Fatalf("text not in causal order:\n%s", out)
	}
}

// TestSymptomWithoutCause: a slow start-up with nothing measured to explain it says so.
func TestSymptomWithoutCause(t *testing.T) {
	r := ruletest.Report(nil, podstartuptest.SlowScheduler.Result())
	r.Findings, r.Rules = rule.Evaluate(r, Rules())
	var slo *result.Finding
	for i := range r.Findings {
		if r.Findings[i].ID == "KS-POD-SLO" {
			slo = &r.Findings[i]
		}
	}
	if slo == nil || slo.ExplainedBy != "" || !strings.HasPrefix(slo.NoCause, "no cause found among the measured signals") || !strings.Contains(slo.NoCause, "KS-POD-EVENTS") {
		t.Fatalf("KS-POD-SLO %+v", slo)
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "cause: no cause found among the measured signals") {
		t.Fatalf("text:\n%s", b.String())
	}
}
