package nodeagent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent/nodeagenttest"
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
