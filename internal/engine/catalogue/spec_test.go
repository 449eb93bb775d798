package catalogue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/cli/rbac"
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// throwaway is a measurement as a newcomer would add one: a package's Spec with one rule, one permission and one
// Prometheus family, and nothing else (here: no package, the Spec appended to the list as its line in Specs).
type throwaway struct{ window time.Duration }

func (*throwaway) Name() string        { return "test.throwaway" }
func (*throwaway) Description() string { return "a measurement that exists only in this test" }
func (*throwaway) Run(context.Context, *measure.Env) (result.Result, error) {
	return result.Result{Status: result.StatusPass}, nil
}

var throwawaySpec = measure.Spec{
	Name: "test.throwaway", Kind: measure.ReadOnly,
	New: func(o measure.Options) measure.Measurement { return &throwaway{window: o.Window} },
	Rules: func() []rule.Rule {
		return []rule.Rule{{ID: "KS-TEST-THROWAWAY", Title: "The throwaway's pressure is high", Severity: result.SeverityWarning,
			When:   rule.Condition{Metric: rule.Metric{Result: "test.throwaway", Name: "pressure"}, Op: ">", Value: 50, Unit: "percent"},
			Source: "this test", Summary: "pressure {{.value}} > {{.threshold}}", Remediation: "none: it is a test"}}
	},
	Permissions: []measure.Permission{{Verbs: []string{"list"}, Group: "example.com", Resource: "widgets", Reason: "the throwaway's widgets"}},
	Prometheus: []measure.PromFamily{{Role: "node-exporter", Metric: "pressure", Unit: "percent", What: "throwaway CPU pressure",
		Rule: "KS-TEST-THROWAWAY", Query: "100 * max by (instance) (rate(node_pressure_cpu_waiting_seconds_total{$job}[$rate]))"}},
}

// TestThrowawaySpec: a new measurement is its Spec plus its line in Specs, and nothing else by hand: the
// registry of `run` builds it with the run's options, the findings engine and docs/rules.md carry its rule,
// `kubeslow rbac` grants its permission in the read-only role, and the past-window path reads its family from
// a Prometheus (backfilled with node_exporter's PSI counter at 80 % for the window) so that its rule fires there.
func TestThrowawaySpec(t *testing.T) {
	specs := append(catalogue.Specs(), throwawaySpec)

	ms, err := measure.NewRegistryOf(catalogue.Options{}, specs).Select([]string{"test.throwaway"}, nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("registry: %v %v", ms, err)
	}
	if m, ok := ms[0].(*throwaway); !ok || m.window != 20*time.Second {
		t.Fatalf("registry built %#v, want the throwaway with the default window", ms[0])
	}
	if _, err := catalogue.Registry(catalogue.Options{}).Select([]string{"test.throwaway"}, nil); err == nil {
		t.Fatal("the throwaway is in the real registry")
	}

	if ref := rule.Reference(check.RulesOf(specs)); !strings.Contains(ref, "## KS-TEST-THROWAWAY — The throwaway's pressure is high") {
		t.Fatal("docs/rules.md's generator does not see the throwaway's rule")
	}

	ro, bench := rbac.NeedsOf(specs)
	var b strings.Builder
	if err := rbac.Write(&b, ro, bench); err != nil {
		t.Fatal(err)
	}
	roles := strings.Split(b.String(), "---\n")
	if !strings.Contains(roles[0], "# test.throwaway: the throwaway's widgets (list)\n- apiGroups: [\"example.com\"]\n  resources: [\"widgets\"]\n  verbs: [\"list\"]") {
		t.Fatalf("kubeslow rbac does not grant the throwaway's permission in the read-only role:\n%s", roles[0])
	}

	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	var scrapes []promtest.Scrape
	for i, at := 0, t0; !at.After(t0.Add(10 * time.Minute)); i, at = i+1, at.Add(15*time.Second) {
		text := fmt.Sprintf("# TYPE node_uname_info gauge\nnode_uname_info{nodename=\"n1\"} 1\n"+
			"# TYPE node_pressure_cpu_waiting_seconds_total counter\nnode_pressure_cpu_waiting_seconds_total %g\n", float64(i)*15*0.8)
		scrapes = append(scrapes, promtest.Scrape{At: at, Text: []byte(text), Labels: map[string]string{"job": "node", "instance": "n1:9100"}})
	}
	url := promtest.Start(t, scrapes) // skips without prometheus and promtool
	c, err := promql.New(promql.Options{URL: url, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := promql.NewWindow(t0, t0.Add(10*time.Minute), 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pms, err := promwindow.RegistryOf(promwindow.NewSource(c, w, nil, check.RulesOf(specs)), specs).Select([]string{"test.throwaway"}, nil)
	if err != nil || len(pms) != 1 {
		t.Fatalf("promwindow: %v %v", pms, err)
	}
	res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, pms[0])
	if res.Status != result.StatusPass || len(res.Metrics) != 1 || res.Metrics[0].Labels["instance"] != "n1:9100" {
		t.Fatalf("promwindow's result: %s %s %+v", res.Status, res.Reason, res.Metrics)
	}
	if v := res.Metrics[0].Value; v < 79 || v > 81 {
		t.Fatalf("pressure %g, want 80 (the counter grows 0.8 s/s)", v)
	}
	fs, _ := rule.Evaluate(&result.Report{Results: []result.Result{res}}, check.RulesOf(specs))
	if len(fs) != 1 || fs[0].ID != "KS-TEST-THROWAWAY" {
		t.Fatalf("findings on the past window: %+v", fs)
	}
	t.Log(fs[0].Summary)
}
