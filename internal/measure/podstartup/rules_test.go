package podstartup_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/rule"
	"github.com/kubeslow/kubeslow/internal/engine/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup/podstartuptest"
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
