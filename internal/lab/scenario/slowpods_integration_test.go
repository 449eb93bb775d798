package scenario_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationSlowPodsAndDNS is in podres_integration_test.go, after TestIntegrationPodResources: it runs
// on that test's lab (labtest.Shared), and tests run in their files' order, then their declarations'.

// twoFaults evaluates the two unrelated faults of the lab at once (the slow pods' Events, the dropped DNS
// queries): the report leads with the Events' cause, KS-POD-STUCK under it, and KS-DNS-5S, whose causes
// (the conntrack race, a full table) were not measured here, follows, saying that no cause was found.
func twoFaults(t *testing.T, pods, dns result.Result) {
	rep := &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, Results: []result.Result{pods, dns}}
	rep.Findings, rep.Rules = rule.Evaluate(rep, check.Rules())
	var order []string
	for _, n := range report.CausalOrder(rep.Findings) {
		s := n.Finding.ID
		for _, sym := range n.Symptoms {
			s += ">" + sym.Finding.ID
		}
		order = append(order, s)
	}
	t.Logf("two faults: %v", order)
	if len(order) != 2 || order[0] != podstartup.EventsRuleID+">KS-POD-STUCK" || order[1] != dnslookup.FiveSecondsRuleID {
		t.Errorf("two faults: causal order %v", order)
	}
	if f := finding(rep, dnslookup.FiveSecondsRuleID); f == nil || !strings.HasPrefix(f.NoCause, "no cause found among the measured signals") {
		t.Errorf("two faults: KS-DNS-5S does not say no cause was found: %+v", f)
	}
}
