package nodeagent_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent/nodeagenttest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestDNSClientsNamed: the pod whose IP is the client on that node is named; the node's address (a host-network
// pod's) is host network; another node's pod IP names nothing on n2 (unknown, by its address); every metric says
// its source.
func TestDNSClientsNamed(t *testing.T) {
	res := nodeagenttest.WithDNS(nodeagenttest.DNSTimingOut).Result(t)
	got := map[string]map[string]string{}
	for _, m := range res.Metrics {
		if m.Name == nodeagent.MetricDNSQueriesPerSecond {
			got[m.Labels["client"]] = m.Labels
		}
	}
	for client, want := range map[string]string{"10.244.2.7": "pod shop/web", "192.168.1.2": "host-network /", "10.244.2.8": "unknown /"} {
		l := got[client]
		if l == nil || l["kind"]+" "+l["namespace"]+"/"+l["pod"] != want || l["node"] != "n2" || l["server"] != "10.96.0.10:53" || l["source"] != "ebpf" {
			t.Errorf("%s: %v, want %s", client, l, want)
		}
	}
	var rec *result.Record
	for i := range res.Records {
		if res.Records[i].ID == "node n2" {
			rec = &res.Records[i]
		}
	}
	if rec == nil || !strings.Contains(rec.Labels["dns"], "3 clients over 10.0s") || !strings.Contains(rec.Labels["dns_other_clients"], "192.168.1.2 (host-network) cgroups 7") {
		t.Errorf("record %+v", rec)
	}
	// p99 only where a query was answered
	for _, m := range res.Metrics {
		if m.Name == nodeagent.MetricDNSLatencyP99 && m.Labels["client"] == "10.244.2.8" {
			t.Errorf("a p99 of no answer: %+v", m)
		}
	}
}

// TestDNSTimeoutRule: the finding names shop/web (6 of 46, 13%), its node and server; not the host-network
// client (1 of 40) nor the unknown one (1 of 1).
func TestDNSTimeoutRule(t *testing.T) {
	fs, _ := rule.Evaluate(ruletest.Report(nil, nodeagenttest.WithDNS(nodeagenttest.DNSTimingOut).Result(t)), nodeagent.Rules())
	var f *result.Finding
	for i := range fs {
		if fs[i].ID == "KS-POD-DNS-TIMEOUT" {
			f = &fs[i]
		}
	}
	if f == nil || f.ItemCount != 1 || f.Items[0].Key != "pod=shop/web server=10.96.0.10:53" ||
		!strings.Contains(f.Summary, "pod shop/web on n2: 6 of its DNS queries to 10.96.0.10:53 timed out (13% of 46") {
		t.Fatalf("finding %+v", f)
	}
}

// TestDNSTimeoutRuleWithoutDNS: agents that could not run the tracer report no DNS metric: the rule is not
// evaluated (could not measure), not clear.
func TestDNSTimeoutRuleWithoutDNS(t *testing.T) {
	rules := nodeagent.Rules()
	for i, r := range rules {
		if r.ID == "KS-POD-DNS-TIMEOUT" {
			_, evals := rule.Evaluate(ruletest.Report(nil, nodeagenttest.Healthy.Result(t)), rules[i:i+1])
			if evals[0].Status != result.RuleNotEvaluated {
				t.Errorf("no DNS read: %+v", evals[0])
			}
			return
		}
	}
	t.Fatal("no KS-POD-DNS-TIMEOUT")
}

// TestDNSTimeoutRuleShortWatch: a watch shorter than the resolvers' 5 s time-out (the agent's default 2 s)
// cannot count a time-out: dns_timeouts is absent, with why, and the rule is not evaluated — not clear.
func TestDNSTimeoutRuleShortWatch(t *testing.T) {
	short := *nodeagenttest.DNSTimingOut
	short.WindowSeconds = 2.3
	res := nodeagenttest.WithDNS(&short).Result(t)
	for _, m := range res.Metrics {
		if m.Name == nodeagent.MetricDNSTimeouts || m.Name == nodeagent.MetricDNSTimeoutShare {
			t.Fatalf("a 2.3 s watch reported %s %v", m.Name, m.Value)
		}
	}
	rules := nodeagent.Rules()
	for i, r := range rules {
		if r.ID == "KS-POD-DNS-TIMEOUT" {
			_, evals := rule.Evaluate(ruletest.Report(nil, res), rules[i:i+1])
			if evals[0].Status != result.RuleNotEvaluated || !strings.Contains(evals[0].Reason, "less than a resolver's time-out") {
				t.Errorf("2.3 s watch: %+v", evals[0])
			}
			return
		}
	}
	t.Fatal("no KS-POD-DNS-TIMEOUT")
}
