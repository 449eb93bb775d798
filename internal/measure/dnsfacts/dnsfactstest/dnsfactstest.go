// Package dnsfactstest is dns.facts' analysis of scripted cluster DNS deployments (placement and CoreDNS
// scrapes in the exposition format CoreDNS 1.15 writes): the fixtures of its rules.
package dnsfactstest

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/prom/promtest"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Replica is one CoreDNS replica over a 20 s window: where it runs, the queries it answered per second, the
// share it answered SERVFAIL and how long each request took.
type Replica struct {
	Node     string
	QPS      float64
	Servfail float64
	Latency  float64
}

// Cluster is a cluster DNS as dns.facts reads it: its replicas and their CoreDNS metric scrapes.
type Cluster struct {
	RealNodes  int
	Protection string
	Replicas   []Replica
	NoMetrics  bool
}

// coredns writes one replica's CoreDNS exposition after n requests.
func (r Replica) coredns(e *promtest.Expo, n int) {
	fail := int(float64(n) * r.Servfail)
	srv := `server="dns://:53",zone=".",view=""`
	e.Counter("coredns_dns_requests_total", srv+`,proto="udp",family="1",type="A"`, float64(n))
	e.Counter("coredns_dns_responses_total", srv+`,rcode="NOERROR",plugin="kubernetes"`, float64(n-fail))
	e.Counter("coredns_dns_responses_total", srv+`,rcode="SERVFAIL",plugin=""`, float64(fail))
	e.Hist("coredns_dns_request_duration_seconds", srv+`,type="A"`, n, r.Latency)
	e.Counter("coredns_cache_hits_total", `server="dns://:53",type="success",zones=".",view=""`, float64(n/2))
	e.Counter("coredns_cache_misses_total", `server="dns://:53",zones=".",view=""`, float64(n-n/2))
	e.Hist("coredns_proxy_request_duration_seconds", `proxy_name="forward",to="198.18.0.53:53",rcode="NOERROR"`, n/4, r.Latency)
	e.Counter("coredns_panics_total", "", 0)
}

// Result is dnsfacts.Analyze over the cluster.
func (c Cluster) Result(t *testing.T) result.Result {
	t.Helper()
	window := 20 * time.Second
	f := dnsfacts.Facts{Service: "kube-system/kube-dns", ClusterIP: "198.19.0.10", Server: "CoreDNS", Workload: "Deployment kube-system/coredns",
		Protection: c.Protection, RealNodes: c.RealNodes, Window: window}
	for i, r := range c.Replicas {
		rep := dnsfacts.Replica{Pod: fmt.Sprintf("coredns-%d", i), Node: r.Node, IP: fmt.Sprintf("198.18.1.%d", 10+i), Ready: true}
		if !c.NoMetrics {
			before, after := promtest.NewExpo(), promtest.NewExpo()
			r.coredns(before, 0)
			r.coredns(after, int(r.QPS*window.Seconds()))
			rep.Before, rep.After = before.Snapshot(t, ruletest.T0), after.Snapshot(t, ruletest.T0.Add(window))
		}
		f.Replicas = append(f.Replicas, rep)
	}
	if c.NoMetrics {
		f.MetricsSkipped = "no permission to read the replicas' metrics through the pod proxy (pods/proxy get)"
	}
	return dnsfacts.Analyze(f)
}

// On places one replica answering qps on each of nodes.
func On(qps float64, nodes ...string) []Replica {
	var out []Replica
	for _, n := range nodes {
		out = append(out, Replica{Node: n, QPS: qps, Latency: 0.004})
	}
	return out
}

var (
	// Packed is case B scaled down: three of four replicas on n1 although three nodes could take them.
	Packed = Cluster{RealNodes: 3, Replicas: On(40, "n1", "n1", "n1", "n2")}
	// Spread is one replica per node with kubeadm's preferred anti-affinity.
	Spread = Cluster{RealNodes: 4, Protection: "preferred anti-affinity on kubernetes.io/hostname (weight 100)", Replicas: On(40, "n1", "n2", "n3", "n4")}
)

// OneBad is three replicas, one per node, the one on n2 replaced by bad.
func OneBad(bad Replica) Cluster {
	c := Cluster{RealNodes: 3, Replicas: On(40, "n1", "n2", "n3")}
	c.Replicas[1] = bad
	return c
}

// RuleFixtures are dnsfacts.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	allFail := Cluster{RealNodes: 3, Replicas: On(40, "n1", "n2", "n3")}
	for i := range allFail.Replicas {
		allFail.Replicas[i].Servfail = 0.3
	}
	c := func(x Cluster) func(t *testing.T) *result.Report { return ruletest.One(x.Result) }
	return map[string]ruletest.Fixture{
		// Packed on a cluster that has room fires; spread stays clear.
		"KS-DNS-HOTSPOT": {Fire: c(Packed), Clear: c(Spread)},
		// One replica failing 30% of its lookups; every replica failing alike is the upstream, not a replica.
		"KS-DNS-REPLICA-ERRORS": {Fire: c(OneBad(Replica{Node: "n2", QPS: 40, Servfail: 0.3, Latency: 0.004})), Clear: c(allFail)},
		// One replica at ~0.5 s p99 against ~5 ms; one at ~50 ms is 10x but fast enough.
		"KS-DNS-REPLICA-SLOW": {Fire: c(OneBad(Replica{Node: "n2", QPS: 40, Latency: 0.4})), Clear: c(OneBad(Replica{Node: "n2", QPS: 40, Latency: 0.04}))},
	}
}
