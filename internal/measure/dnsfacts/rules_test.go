package dnsfacts_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts/dnsfactstest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
)

// TestDNSHotspotNamesNodeAndShare: the hot spot names the packed node, its query share and rate; without
// the replicas' metrics (no pods/proxy) it still fires on placement, saying the share was not measured; a
// single-node cluster (nowhere to spread) stays clear.
func TestDNSHotspotNamesNodeAndShare(t *testing.T) {
	hot := dnsfacts.Rules()[:1]
	fs, _ := rule.Evaluate(ruletest.Report(nil, dnsfactstest.Packed.Result(t)), hot)
	if len(fs) != 1 || fs[0].ItemCount != 1 || fs[0].Items[0].Key != "node=n1" {
		t.Fatalf("findings %+v", fs)
	}
	if s := fs[0].Summary; !strings.Contains(s, "3 of the 4 DNS replicas run on n1") || !strings.Contains(s, "75% of the queries, 120 queries/s") {
		t.Fatalf("summary %q", s)
	}
	blind := dnsfactstest.Packed
	blind.NoMetrics = true
	fs, _ = rule.Evaluate(ruletest.Report(nil, blind.Result(t)), hot)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "query share not measured") {
		t.Fatalf("without metrics: %+v", fs)
	}
	single := dnsfactstest.Cluster{RealNodes: 1, Replicas: dnsfactstest.On(40, "n1", "n1")}
	if fs, _ := rule.Evaluate(ruletest.Report(nil, single.Result(t)), hot); len(fs) != 0 {
		t.Fatalf("one node, nowhere to spread: %+v", fs)
	}
}

// TestReplicaErrorsSummary: the outlier's error share and its excess are percentages.
func TestReplicaErrorsSummary(t *testing.T) {
	c := dnsfactstest.OneBad(dnsfactstest.Replica{Node: "n2", QPS: 40, Servfail: 0.3, Latency: 0.004})
	fs, _ := rule.Evaluate(ruletest.Report(nil, c.Result(t)), dnsfacts.Rules()[1:2])
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "coredns-1 on n2 answers 30% of its queries with SERVFAIL/REFUSED, 30 points more") {
		t.Fatalf("%+v", fs)
	}
}
