// Package dnslookuptest is dns.lookups' analysis of scripted lookups: the fixtures of its rule and of the
// combined rule that ties it to conntrack.
package dnslookuptest

import (
	"fmt"
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Shape scripts one client's lookups: n lookups, every one answered in base seconds (plus a little per
// lookup, up to Spread), except those at which retried returns how many time-outs it waited out.
type Shape struct {
	N            int
	Base, Spread float64
	Retried      func(i int) int
	Options      []string
}

// Result is dnslookup.Analyze over the shape, from one client on node n1 (Go's resolver, resolv.conf's
// default 5 s time-out).
func (s Shape) Result() result.Result {
	conf := agent.ResolvConf{Nameservers: []string{"198.19.0.10"}, Timeout: 5, Attempts: 2, Options: append([]string{"ndots:5"}, s.Options...)}
	var samples []agent.LookupSample
	for i := range s.N {
		sec := s.Base + float64(i%7)*s.Spread/6
		k := 0
		if s.Retried != nil {
			k = s.Retried(i)
		}
		x := agent.LookupSample{Name: dnslookup.Names[i%2], Seconds: sec + float64(k)*conf.Timeout}
		if k >= conf.Attempts {
			x.Error = fmt.Sprintf("lookup %s on 198.19.0.10:53: i/o timeout", x.Name)
		}
		samples = append(samples, x)
	}
	return dnslookup.Analyze([]dnslookup.Client{{Node: "n1", Lookups: agent.DNSLookups{Resolver: "go", Conf: conf, Samples: samples}}})
}

var (
	// Healthy: 600 lookups of ~2 ms.
	Healthy = Shape{N: 600, Base: 0.002}
	// NthDrop: one UDP/53 packet in two dropped on the client's path (nftables numgen mod 2): with A and
	// AAAA each a query, about half the lookups wait out one time-out and some two.
	NthDrop = Shape{N: 120, Base: 0.002, Retried: func(i int) int {
		switch {
		case i%8 == 0:
			return 2
		case i%2 == 0:
			return 1
		}
		return 0
	}}
	// Loss: 5% of the packets to the DNS Service lost (tc netem on its path): ~10% of lookups wait 5 s.
	Loss = Shape{N: 300, Base: 0.003, Retried: func(i int) int {
		if i%10 == 3 {
			return 1
		}
		return 0
	}}
	// SlowServer: a slow DNS server answering in 0.3 to 2.4 s: slow, but never near a multiple of 5 s.
	SlowServer = Shape{N: 200, Base: 0.3, Spread: 2.1}
	// OneRetry: 1 lookup of 600 waited 5 s (a single loss): below the threshold.
	OneRetry = Shape{N: 600, Base: 0.002, Retried: func(i int) int {
		if i == 10 {
			return 1
		}
		return 0
	}}
)

func one(s Shape) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, s.Result()) }
}

// RuleFixtures are dnslookup.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		dnslookup.FiveSecondsRuleID: {Fire: one(NthDrop), Clear: one(SlowServer)},
	}
}
