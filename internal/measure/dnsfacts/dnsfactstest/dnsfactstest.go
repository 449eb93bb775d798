// Package dnsfactstest is dns.facts' analysis of scripted cluster DNS deployments (placement and CoreDNS
// scrapes in the exposition format CoreDNS 1.15 writes): the fixtures of its rules.
package dnsfactstest

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/dnsfacts"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
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

// AllFail is three replicas, one per node, each answering 30% SERVFAIL (an upstream outage).
func AllFail() Cluster {
	c := Cluster{RealNodes: 3, Replicas: On(40, "n1", "n2", "n3")}
	for i := range c.Replicas {
		c.Replicas[i].Servfail = 0.3
	}
	return c
}

// OneBad is three replicas, one per node, the one on n2 replaced by bad.
func OneBad(bad Replica) Cluster {
	c := Cluster{RealNodes: 3, Replicas: On(40, "n1", "n2", "n3")}
	c.Replicas[1] = bad
	return c
}

// Recorded is dnsfacts.Analyze over real CoreDNS 1.15 scrapes recorded by hack/record-coredns.sh (replica
// -> node; replicas "a", "b", "c"), 20 s apart: every replica was sent 2,000 distinct external names at
// 200 q/s; "a" forwarded them to an upstream that answers 100 q/s per source and drops the rest (it answered
// 704 of them SERVFAIL), "b" and "c" to one without a limit.
func Recorded(t *testing.T, realNodes int, placement map[string]string) result.Result {
	t.Helper()
	read := func(name string, at time.Time) *prom.Snapshot {
		b, err := os.ReadFile(ruletest.Path("internal/measure/dnsfacts/testdata/" + name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := prom.Parse(bytes.NewReader(b), at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	window := 20 * time.Second
	f := dnsfacts.Facts{Service: "kube-system/kube-dns", ClusterIP: "198.19.0.10", Server: "CoreDNS", Workload: "Deployment kube-system/coredns",
		RealNodes: realNodes, Window: window}
	for _, r := range []string{"a", "b", "c"} {
		n, ok := placement[r]
		if !ok {
			continue
		}
		f.Replicas = append(f.Replicas, dnsfacts.Replica{Pod: "coredns-" + r, Node: n, Ready: true,
			Before: read("recorded-"+r+"-before.txt", ruletest.T0), After: read("recorded-"+r+"-after.txt", ruletest.T0.Add(window))})
	}
	return dnsfacts.Analyze(f)
}

// RuleFixtures are dnsfacts.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	recorded := func(placement map[string]string) func(t *testing.T) *result.Report {
		return ruletest.One(func(t *testing.T) result.Result { return Recorded(t, 3, placement) })
	}
	c := func(x Cluster) func(t *testing.T) *result.Report { return ruletest.One(x.Result) }
	return map[string]ruletest.Fixture{
		// Packed on a cluster that has room fires; spread stays clear.
		"KS-DNS-HOTSPOT": {Fire: c(Packed), Clear: c(Spread)},
		// Real CoreDNS: the replica behind the per-source limit (35% SERVFAIL) among two that are not; the two
		// that are not. (rules_test.go: a scripted one, and every replica failing alike stays clear.)
		"KS-DNS-REPLICA-ERRORS": {Fire: recorded(map[string]string{"a": "n1", "b": "n2", "c": "n3"}), Clear: recorded(map[string]string{"b": "n2", "c": "n3"})},
		// Real CoreDNS: the same replica's request p99 is ~4 s (its dropped queries wait out the forward), the
		// others' ~4 ms; the two others alone. (Scripted: one at ~0.5 s fires, one at ~50 ms, 10x but fast, not.)
		"KS-DNS-REPLICA-SLOW": {Fire: recorded(map[string]string{"a": "n1", "b": "n2", "c": "n3"}), Clear: recorded(map[string]string{"b": "n2", "c": "n3"})},
	}
}
