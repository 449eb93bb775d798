package podstartup_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup/podstartuptest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestPodPhaseAttribution: the dominant phase is named only when the tail is slow and the phase's time per
// pod is above the server timestamps' 1 s precision.
func TestPodPhaseAttribution(t *testing.T) {
	ph := func(p string) map[string]string { return map[string]string{"phase": p} }
	mk := func(p90, share, mean float64) *result.Report {
		return &result.Report{Results: []result.Result{{Name: podstartup.Name, Status: result.StatusPass, Metrics: []result.Metric{
			{Name: "startup_sli_p90", Unit: "seconds", Value: p90},
			{Name: "tail_phase_share", Unit: "ratio", Value: share, Labels: ph("sandbox")},
			{Name: "tail_phase_share", Unit: "ratio", Value: 1 - share, Labels: ph("schedule")},
			{Name: "tail_phase_mean", Unit: "seconds", Value: mean, Labels: ph("sandbox")},
			{Name: "tail_phase_mean", Unit: "seconds", Value: mean * (1 - share) / share, Labels: ph("schedule")},
		}}}}
	}
	var rl rule.Rule
	for _, r := range podstartup.Rules() {
		if r.ID == "KS-POD-PHASE" {
			rl = r
		}
	}
	for _, c := range []struct {
		name             string
		p90, share, mean float64
		want             bool
	}{
		{"slow tail, sandbox dominates", 6, 0.8, 4.8, true},
		{"fast tail", 0.9, 0.8, 0.7, false},
		{"no dominant phase", 6, 0.5, 3, false},
		{"dominant but within timestamp precision", 1.4, 0.64, 0.9, false},
		{"dominant only with the truncated second", 1.38, 0.73, 1.01, false},
		{"dominant beyond the truncated second", 3, 0.9, 2.7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := rule.Evaluate(mk(c.p90, c.share, c.mean), []rule.Rule{rl})
			if got := len(fs) == 1; got != c.want {
				t.Fatalf("fired=%v, want %v (%+v)", got, c.want, fs)
			}
			if c.want && fs[0].Evidence[0].Labels["phase"] != "sandbox" {
				t.Fatalf("wrong phase %+v", fs[0].Evidence)
			}
		})
	}
}

// TestPodNodeNamesNodeAndPhase: KS-POD-NODE's first evidence names the slow node and the phase it is slow in
// (what the lab's slow-node scenario test reads), and only that node is an item.
func TestPodNodeNamesNodeAndPhase(t *testing.T) {
	fs, _ := rule.Evaluate(ruletest.Report(nil, podstartuptest.SlowSandboxNode.Result()), []rule.Rule{podstartup.NodeRule()})
	if len(fs) != 1 || fs[0].ItemCount != 1 || fs[0].Items[0].Key != "node=n2" {
		t.Fatalf("findings %+v", fs)
	}
	if e := fs[0].Evidence[0]; e.Name != podstartup.MetricNodeSLIRatio || e.Labels["node"] != "n2" || e.Labels["phase"] != "sandbox" || e.Value < 5 {
		t.Fatalf("first evidence %+v", e)
	}
}

// TestEventsRuleMechanisms: KS-POD-EVENTS names the class on two mechanisms (an unschedulable pod, a sandbox
// that fails on one node) and stays quiet on a healthy run and on kubeslow's own pods that found no pod slot;
// the slow-start findings carry the events inside them.
func TestEventsRuleMechanisms(t *testing.T) {
	for _, c := range []struct {
		name  string
		run   podstartuptest.Run
		class string
	}{
		{"unschedulable", podstartuptest.Unschedulable, "FailedScheduling: Insufficient cpu"},
		{"sandbox fails", podstartuptest.SandboxFails, "FailedCreatePodSandBox: RuntimeClass handler"},
		{"healthy", podstartuptest.Healthy, ""},
		{"own limit", podstartuptest.OwnLimit, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := rule.Evaluate(ruletest.Report(nil, c.run.Result()), podstartup.Rules())
			var ev, slow *result.Finding
			for i := range fs {
				switch fs[i].ID {
				case podstartup.EventsRuleID:
					ev = &fs[i]
				case "KS-POD-SLO", "KS-POD-STUCK":
					slow = &fs[i]
				}
			}
			if c.class == "" {
				if ev != nil || slow != nil {
					t.Fatalf("fired: %+v", fs)
				}
				return
			}
			if ev == nil || ev.Items[0].Key != "class="+c.class || ev.Evidence[0].Value != 1 {
				t.Fatalf("events finding %+v", ev)
			}
			if slow == nil || slow.ExplainedBy != podstartup.EventsRuleID || !strings.Contains(slow.Summary, "events on the") || !strings.Contains(slow.Summary, c.class) {
				t.Fatalf("slow-start finding %+v", slow)
			}
			t.Log(ev.Summary)
			t.Log(slow.Summary)
		})
	}
}

// TestWhereTheTimeGoesUnderSLO: where start-up time goes is information while the SLO holds. A scheduler that
// queues pods 1-1.3 s (the 5,000-node run: p99 1.34 s, schedule 94% of the tail) raises KS-POD-PHASE at info,
// with the p99 and the SLO in its evidence and summary; a scheduler that misses the SLO (p99 ~20 s) keeps the
// warning. KS-POD-NODE alike: a node 3.2 s slow in its sandbox with p99 under 5 s is info, 6.5 s slow is a
// warning.
func TestWhereTheTimeGoesUnderSLO(t *testing.T) {
	queue := podstartuptest.Run{N: 100, Gap: 0.05, Creator: "client", QPS: 20, Ph: func(i int) (string, float64, float64, float64, float64) {
		node, _, sb, st, obs := podstartuptest.Even(i)
		return node, 1 + 0.3*float64(i)/100, sb, st, obs
	}}
	slowNode := podstartuptest.SlowSandboxNode
	slowNode.Ph = func(i int) (string, float64, float64, float64, float64) {
		node, s, sb, st, obs := podstartuptest.Even(i)
		if node == "n2" {
			sb = 6.5
		}
		return node, s, sb, st, obs
	}
	for _, c := range []struct {
		name string
		run  podstartuptest.Run
		rl   rule.Rule
		want result.Severity
	}{
		{"phase, SLO held", queue, podstartup.PhaseRule(), result.SeverityInfo},
		{"phase, SLO missed", podstartuptest.SlowScheduler, podstartup.PhaseRule(), result.SeverityWarning},
		{"node, SLO held", podstartuptest.SlowSandboxNode, podstartup.NodeRule(), result.SeverityInfo},
		{"node, SLO missed", slowNode, podstartup.NodeRule(), result.SeverityWarning},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := ruletest.Report(nil, c.run.Result())
			p99 := rep.Result(podstartup.Name).Metric(podstartup.MetricSLIP99, nil)
			fs, _ := rule.Evaluate(rep, []rule.Rule{c.rl})
			if len(fs) != 1 {
				t.Fatalf("p99 %v: %d findings, want 1 (an info finding is still a finding)", p99.Value, len(fs))
			}
			f := fs[0]
			if f.Severity != c.want {
				t.Fatalf("p99 %.2f s: severity %s, want %s: %s", p99.Value, f.Severity, c.want, f.Summary)
			}
			held := c.want == result.SeverityInfo
			if held != strings.Contains(f.Summary, "within the SLO, <= 5 s") {
				t.Errorf("summary %q", f.Summary)
			}
			if held && f.Evidence[len(f.Evidence)-1].Name != podstartup.MetricSLIP99 {
				t.Errorf("no p99 in the evidence: %+v", f.Evidence)
			}
			if f.Threshold.Source == "" || f.Remediation == "" {
				t.Errorf("threshold or remediation missing: %+v", f)
			}
		})
	}
}

// TestCreateRuleNeedsAPace: KS-POD-CREATE names a pace, not one stall: 50 pods requested at 20/s whose creation
// stalled 0.6 s halfway (a slow etcd commit on a busy machine) are 0.6 s late, under the second a mutating
// call's p99 may take, and raise nothing, though their rate through the middle is ~15/s; stalled 2 s they are
// late by that and it fires, as it does for pods paced at 10/s throughout.
func TestCreateRuleNeedsAPace(t *testing.T) {
	even := podstartuptest.Run{N: 50, Gap: 0.05, Creator: "client", QPS: 20, Ph: podstartuptest.Even}
	for _, c := range []struct {
		name  string
		pause float64
		gap   float64
		fire  bool
	}{{"stall 0.6 s", 0.6, 0.05, false}, {"stall 2 s", 2, 0.05, true}, {"paced at 10/s", 0, 0.1, true}} {
		run := even
		run.Gap, run.Pause, run.PauseAt = c.gap, c.pause, 25
		res := run.Result()
		fs, _ := rule.Evaluate(ruletest.Report(nil, res), podstartup.Rules())
		var got *result.Finding
		for i := range fs {
			if fs[i].ID == "KS-POD-CREATE" {
				got = &fs[i]
			}
		}
		ratio := res.Metric(podstartup.MetricCreationRateRatio, map[string]string{"creator": "client"})
		if ratio == nil || ratio.Value >= 0.8 {
			t.Fatalf("%s: creation rate ratio %+v, want under 0.8 (each case below the rate)", c.name, ratio)
		}
		if (got != nil) != c.fire {
			t.Errorf("%s: KS-POD-CREATE %v (ratio %.2f, late %v), want fired %v", c.name, got != nil, ratio.Value,
				res.Metric(podstartup.MetricCreationLate, map[string]string{"creator": "client"}), c.fire)
		} else if got != nil {
			t.Log(got.Summary)
		}
	}
}
