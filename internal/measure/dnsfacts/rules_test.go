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

// TestReplicaErrors: the recorded replica behind the per-source limit is named with its real share (704 of
// 2,000); a scripted one too; every replica failing alike (an upstream outage) stays clear.
func TestReplicaErrors(t *testing.T) {
	errs := dnsfacts.Rules()[1:2]
	rec := dnsfactstest.Recorded(t, 3, map[string]string{"a": "n1", "b": "n2", "c": "n3"})
	fs, _ := rule.Evaluate(ruletest.Report(nil, rec), errs)
	if len(fs) != 1 || fs[0].ItemCount != 1 || !strings.Contains(fs[0].Summary, "coredns-a on n1 answers 35% of its queries with SERVFAIL/REFUSED, 35 points more") {
		t.Fatalf("%+v", fs)
	}
	c := dnsfactstest.OneBad(dnsfactstest.Replica{Node: "n2", QPS: 40, Servfail: 0.3, Latency: 0.004})
	fs, _ = rule.Evaluate(ruletest.Report(nil, c.Result(t)), errs)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "coredns-1 on n2 answers 30% of its queries with SERVFAIL/REFUSED, 30 points more") {
		t.Fatalf("%+v", fs)
	}
	if fs, _ := rule.Evaluate(ruletest.Report(nil, dnsfactstest.AllFail().Result(t)), errs); len(fs) != 0 {
		t.Fatalf("every replica failing alike: %+v", fs)
	}
}

// TestReplicaSlowScripted: one replica at ~0.5 s p99 against ~5 ms fires; one at ~50 ms, 10x but under
// 100 ms, does not.
func TestReplicaSlowScripted(t *testing.T) {
	slow := dnsfacts.Rules()[2:3]
	fs, _ := rule.Evaluate(ruletest.Report(nil, dnsfactstest.OneBad(dnsfactstest.Replica{Node: "n2", QPS: 40, Latency: 0.4}).Result(t)), slow)
	if len(fs) != 1 || fs[0].Items[0].Key != "node=n2 pod=coredns-1" {
		t.Fatalf("%+v", fs)
	}
	if fs, _ := rule.Evaluate(ruletest.Report(nil, dnsfactstest.OneBad(dnsfactstest.Replica{Node: "n2", QPS: 40, Latency: 0.04}).Result(t)), slow); len(fs) != 0 {
		t.Fatalf("%+v", fs)
	}
}
