package nodeagent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent/nodeagenttest"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet/nodenettest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestNodeRulesNameTheWorstNode: the finding is one per rule, its items worst first, naming the node.
func TestNodeRulesNameTheWorstNode(t *testing.T) {
	s := nodeagenttest.WithHost("n2", "neigh-overflow")
	s.Hosts["n3"] = "neigh-near"
	fs, _ := rule.Evaluate(ruletest.Report(nil, s.Result(t)), nodeagent.Rules())
	var neigh *result.Finding
	for i := range fs {
		if fs[i].ID == "KS-NODE-NEIGH-ALL" {
			neigh = &fs[i]
		}
	}
	if neigh == nil || neigh.ItemCount != 2 || neigh.Items[0].Key != "node=n2" || neigh.Items[1].Key != "node=n3" {
		t.Fatalf("neighbour finding %+v", neigh)
	}
}

// BenchmarkSweep5000 is the node sweep's analysis and rules over 5,000 node reports (the healthy fixture
// host, three of them with faults): what kubeslow's side costs per sweep at 5,000 nodes, besides the
// API requests.
func BenchmarkSweep5000(b *testing.B) {
	var hosts []agent.NodeHost
	trees := []string{"healthy", "neigh-overflow", "hung-io", "neigh-near"}
	read := map[string]*agent.NodeHost{}
	for _, tree := range trees {
		r := filepath.Join(nodeagenttest.Hosts, tree)
		read[tree] = agent.ReadNodeHost(context.Background(), agent.NodeHostOptions{Proc: r + "/proc", NetProc: r + "/proc", Sys: r + "/sys", Root: r + "/root",
			Window: time.Millisecond})
	}
	for i := range 5000 {
		tree := trees[0]
		if i%1667 == 1 {
			tree = trees[1+i/1667%3]
		}
		h := *read[tree]
		h.Node = fmt.Sprintf("node-%04d", i)
		h.Sync = []agent.SyncProbe{{Role: "runtime", P50: 0.0002, P99: 0.002}, {Role: "kubelet", P50: 0.0002, P99: 0.002}}
		hosts = append(hosts, h)
	}
	rules := nodeagent.Rules()
	b.ResetTimer()
	for range b.N {
		res := nodeagent.Analyze(hosts, nil)
		fs, _ := rule.Evaluate(ruletest.Report(nil, res), rules)
		if len(fs) == 0 {
			b.Fatal("no finding from the faulty hosts")
		}
	}
}

// TestKernelLinesAge: a kernel line logged during the run is a current error, with its age; the same line
// logged an hour before the run began is lowered to info and says it is past evidence; where the run's times
// are unknown the finding stands.
func TestKernelLinesAge(t *testing.T) {
	s := nodeagenttest.WithHost("n2", "neigh-overflow")
	runStart := ruletest.T0
	for _, c := range []struct {
		name      string
		age       float64 // seconds before the sweep's read; <0: the fixture's own (100 s)
		times     bool
		severity  result.Severity
		wantInSum string
	}{
		{"during the run", -1, true, result.SeverityError, "the newest 1m40s before the sweep read it)"},
		{"an hour before the run", 3700, true, result.SeverityInfo, "before this run began: past evidence"},
		{"run times unknown", 3700, false, result.SeverityError, "the newest 1h1m40s before the sweep read it)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := s.Result(t)
			if c.times {
				res.Start, res.End = runStart.Add(30*time.Second), runStart.Add(50*time.Second)
			}
			for i, m := range res.Metrics {
				if m.Name == nodeagent.MetricKernelNewestAge && m.Labels["class"] == agent.KernNeighOverflow && c.age >= 0 {
					res.Metrics[i].Value = c.age
				}
			}
			rep := ruletest.Report(nil, res)
			if c.times {
				rep.Start = runStart
			}
			fs, _ := rule.Evaluate(rep, nodeagent.Rules())
			var f *result.Finding
			for i := range fs {
				if fs[i].ID == "KS-NODE-NEIGH-OVERFLOW" {
					f = &fs[i]
				}
			}
			if f == nil {
				t.Fatal("KS-NODE-NEIGH-OVERFLOW did not fire")
			}
			if f.Severity != c.severity || !strings.Contains(f.Summary, c.wantInSum) {
				t.Fatalf("%s %q, want %s with %q", f.Severity, f.Summary, c.severity, c.wantInSum)
			}
		})
	}
}

// TestMTURuleOverTheSweep: the node agent reads every real node's links; one node's eth0 at 1400 under flannel.1
// at 1450 is named by KS-NET-MTU over nodes.agent, the node and the link; the healthy lab and a bridge lab raise
// nothing; a node whose agent did not report leaves it not evaluated, with why.
func TestMTURuleOverTheSweep(t *testing.T) {
	hosts := func(edit2 ...func(*agent.NodeNet)) []agent.NodeHost {
		return []agent.NodeHost{{Node: "lab-node-1", Net: nodenettest.FlannelNode(t)}, {Node: "lab-node-2", Net: nodenettest.FlannelNode(t, edit2...)},
			{Node: "lab-node-3", Net: nodenettest.FlannelNode(t)}}
	}
	eval := func(hs []agent.NodeHost, failures map[string]string) ([]result.Finding, result.RuleEvaluation) {
		fs, evals := rule.Evaluate(ruletest.Report(nil, nodeagent.Analyze(hs, failures)), []rule.Rule{nodeagent.MTURule()})
		return fs, evals[0]
	}
	fs, _ := eval(hosts(nodenettest.SetMTU("eth0", 1400)), nil)
	if len(fs) != 1 || fs[0].ID != "KS-NET-MTU" || fs[0].ItemCount != 1 || fs[0].Items[0].Key != "link=node lab-node-2/eth0" ||
		!strings.Contains(fs[0].Summary, "lab-node-2's eth0 MTU 1400 < flannel.1 1450 + VXLAN 50 = 1500") ||
		!strings.Contains(fs[0].Summary, "sent by lab-node-1, lab-node-2, lab-node-3") || fs[0].Results[0] != nodeagent.Name {
		t.Fatalf("findings %+v", fs)
	}
	if fs, ev := eval(hosts(), nil); len(fs) != 0 || ev.Status != result.RuleClear {
		t.Errorf("healthy flannel: %+v %+v", fs, ev)
	}
	bridge := []agent.NodeHost{{Node: "n1", Net: nodenettest.FlannelNode(t, nodenettest.NoOverlay)}, {Node: "n2", Net: nodenettest.FlannelNode(t, nodenettest.NoOverlay)}}
	if fs, ev := eval(bridge, nil); len(fs) != 0 || ev.Status != result.RuleClear {
		t.Errorf("bridge: %+v %+v", fs, ev)
	}
	if fs, ev := eval(hosts(), map[string]string{"lab-node-4": "agent kubeslow-node-agent-x not Ready (ImagePullBackOff)"}); len(fs) != 0 ||
		ev.Status != result.RuleNotEvaluated || !strings.Contains(ev.Reason, "lab-node-4: the agent did not report: agent kubeslow-node-agent-x not Ready") {
		t.Errorf("an agent missing: %+v %+v", fs, ev)
	}
	// The fixture hosts as the agent's own reader reads them (eth0 the default route's, no overlay): clear.
	if fs, evals := rule.Evaluate(ruletest.Report(nil, nodeagenttest.Healthy.Result(t)), []rule.Rule{nodeagent.MTURule()}); len(fs) != 0 ||
		evals[0].Status != result.RuleClear {
		t.Errorf("fixture hosts: %+v %+v", fs, evals)
	}
}
