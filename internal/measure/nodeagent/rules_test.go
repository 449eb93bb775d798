package nodeagent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/agent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent/nodeagenttest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
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
