package result_test

import (
	"reflect"
	"testing"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestFoldGaps: one gap per source, in the order the results name them; a result not measured under its first
// out-of-reach signal's source, the same signal of two results listed once with both, absent metrics by their
// reason, and each rule not evaluated under what starved it (a result, an absent metric, a result not run).
func TestFoldGaps(t *testing.T) {
	etcd := result.OutOfReach{Signal: "etcd's metrics", Why: "no endpoint", Fix: "--etcd-endpoint", Source: "etcd"}
	r := &result.Report{
		Results: []result.Result{
			{Name: "etcd.health", Status: result.StatusSkip, Reason: "no etcd metrics", OutOfReach: []result.OutOfReach{etcd}},
			{Name: "cp.usage", Status: result.StatusPass, OutOfReach: []result.OutOfReach{etcd},
				Absent: []result.Absence{{Metric: "saturation", Series: "cores", Reason: "cores unknown"}, {Metric: "cores", Series: "cores", Reason: "cores unknown"}}},
			{Name: "dns.a", Status: result.StatusSkip, Reason: "no image 1"},
			{Name: "dns.b", Status: result.StatusSkip, Reason: "no image 2"}, // the same reason, numbers aside
			{Name: "ok", Status: result.StatusPass},
		},
		Rules: []result.RuleEvaluation{
			{ID: "R-ETCD", Status: result.RuleNotEvaluated, Reason: "etcd.health was not measured (Skip: no etcd metrics)"},
			{ID: "R-SAT", Status: result.RuleNotEvaluated, Reason: "cp.usage saturation is absent: series cores (cores unknown)"},
			{ID: "R-NET", Status: result.RuleNotEvaluated, Reason: "net.paths was not run"},
			{ID: "R-DNS", Status: result.RuleNotEvaluated, Reason: "anything"},
			{ID: "R-OK", Status: result.RuleClear},
		},
	}
	got := result.FoldGaps(r, nil, map[string]result.Starved{"R-DNS": {Result: "dns.b"}})
	want := []result.Gap{
		{Source: "etcd", Title: "etcd's metrics", Reason: "no endpoint", Fix: "--etcd-endpoint", Measurements: []string{"etcd.health"},
			Signals: []string{"etcd's metrics [etcd.health, cp.usage]"}, Rules: []string{"R-ETCD"}},
		{Source: "reason:cores unknown", Title: "cores unknown", Reason: "cores unknown", Signals: []string{"saturation [cp.usage]", "cores [cp.usage]"}, Rules: []string{"R-SAT"}},
		{Source: "reason:no image #", Title: "no image 1", Reason: "no image 1", Measurements: []string{"dns.a", "dns.b"}, Rules: []string{"R-DNS"}},
		{Source: result.SourceNotRun, Title: "measurements this run did not include", Reason: "not part of this run: `kubeslow bench` runs them, or --only/--skip left them out",
			Fix: "`kubeslow bench --help` lists the benches; a measurement --only or --skip left out runs without them", Measurements: []string{"net.paths"}, Rules: []string{"R-NET"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FoldGaps:\n got %+v\nwant %+v", got, want)
	}

	// A source's Via lists the entry under the source it was to be read through, said once there.
	via := func(e result.GapEntry) result.GapKey {
		k := result.DefaultGapSource(e)
		if e.OutOfReach != nil {
			k.Via = &result.GapKey{Source: "tier", Title: "the node tier", Reason: "no control-plane node"}
		}
		return k
	}
	gs := result.FoldGaps(r, via, map[string]result.Starved{"R-DNS": {Result: "dns.b"}})
	if len(gs) != 5 || gs[1].Source != "tier" || !reflect.DeepEqual(gs[1].Signals, []string{"etcd's metrics [etcd.health, cp.usage]"}) || len(gs[1].Rules) != 0 {
		t.Fatalf("via: %+v", gs)
	}
	// An unknown rule reason is a gap of its own, never dropped.
	gs = result.FoldGaps(r, nil, nil)
	if last := gs[len(gs)-1]; last.Source != "reason:anything" || !reflect.DeepEqual(last.Rules, []string{"R-DNS"}) {
		t.Fatalf("unknown rule reason: %+v", last)
	}
	// A report that carries its gaps is rendered from them.
	r.Gaps = want[:1]
	if !reflect.DeepEqual(r.FoldedGaps(), want[:1]) {
		t.Fatal("FoldedGaps did not return the report's own gaps")
	}
}

func TestStarvedFromReason(t *testing.T) {
	for reason, want := range map[string]result.Starved{
		"etcd.health was not measured (Skip: x)":          {Result: "etcd.health"},
		"net.paths was not run":                           {Result: "net.paths"},
		"cp.usage cpu_saturation is absent: series s (r)": {Result: "cp.usage", Metric: "cpu_saturation"},
	} {
		if got, ok := result.StarvedFromReason(reason); !ok || got != want {
			t.Errorf("%q: %+v %v", reason, got, ok)
		}
	}
	if _, ok := result.StarvedFromReason("something else entirely"); ok {
		t.Error("an unknown reason was read")
	}
}

// TestGapDetail: a gap whose title is its reason's first clause says that clause once.
func TestGapDetail(t *testing.T) {
	for _, c := range []struct{ title, reason, want string }{
		{"lab-control-plane", "lab-control-plane: the uplink ksl-br0's MTU was not read", "the uplink ksl-br0's MTU was not read"},
		{"no image", "no image", ""},
		{"cores unknown", "cores unknown; the quota is unset", "the quota is unset"},
		{"etcd's metrics", "no endpoint", "no endpoint"},
	} {
		if got := (result.Gap{Title: c.title, Reason: c.reason}).Detail(); got != c.want {
			t.Errorf("Detail(%q, %q) = %q, want %q", c.title, c.reason, got, c.want)
		}
	}
}
