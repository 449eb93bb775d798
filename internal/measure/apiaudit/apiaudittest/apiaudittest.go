// Package apiaudittest is the audit analysis of scripted audit logs: the fixtures of api.audit's rules.
package apiaudittest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Run is an audit log of a minute: a client LISTing events lists times, and one updating IPAM blocks with
// conflicts 409s.
func Run(lists, conflicts int) result.Result {
	a := auditlog.NewAnalyzer()
	add := func(i, n int, ev auditlog.Event) {
		ev.Stage, ev.Received = "ResponseComplete", ruletest.T0.Add(time.Duration(i)*time.Minute/time.Duration(max(n, 1)))
		a.Add(&ev)
	}
	for i := range 600 {
		add(i, 600, auditlog.Event{Verb: "get", User: "system:node:n1", UserAgent: "kubelet/v1.31", Resource: "pods", Namespace: "default", Name: "x", Code: 200})
	}
	for i := range 20 {
		add(i, 20, auditlog.Event{Verb: "list", User: "system:kube-controller-manager", UserAgent: "kube-controller-manager/v1.31", Resource: "pods", Code: 200})
	}
	for i := range lists {
		add(i, lists, auditlog.Event{Verb: "list", User: "system:serviceaccount:mon:agent", UserAgent: "node-monitor/1.0", Resource: "events", Code: 200})
	}
	for i := range conflicts {
		add(i, conflicts, auditlog.Event{Verb: "update", User: "system:serviceaccount:kube-system:calico-node", UserAgent: "calico-ipam/v3.27",
			Resource: "ipamblocks", APIGroup: "crd.projectcalico.org", Name: "10-0-1-0-26", Code: 409})
	}
	return a.Result(5)
}

func audit(lists, conflicts int) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, Run(lists, conflicts)) }
}

// RuleFixtures are apiaudit.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-AUDIT-LIST": {Fire: audit(1500, 0), Clear: audit(40, 0)}, // a dominant client, and one too slow to matter
		"KS-AUDIT-409":  {Fire: audit(0, 800), Clear: audit(0, 30)},  // a storm, and a few conflicts
	}
}
