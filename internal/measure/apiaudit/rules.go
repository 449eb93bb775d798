package apiaudit

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/auditlog"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the audit rules read: the audit log's analysis (internal/source/auditlog).
var (
	auditListShare = rule.Metric{Result: auditlog.Name, Name: auditlog.MetricListShare}
	auditListRate  = rule.Metric{Result: auditlog.Name, Name: auditlog.MetricListsPerMinute}
	auditConflicts = rule.Metric{Result: auditlog.Name, Name: auditlog.MetricConflictsPerMinute}
)

// Rules are the rules over the audit analysis (api.audit); `kubeslow audit` evaluates only these.
func Rules() []rule.Rule {
	return []rule.Rule{
		{
			ID: "KS-AUDIT-LIST", Title: "One client dominates LIST requests", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:    rule.Condition{Metric: auditListShare, Op: ">", Value: 0.5, Unit: "ratio"},
			Also:    []rule.Condition{{Metric: auditListRate, Op: ">", Value: 60, Unit: "per_minute"}},
			Source:  "kubeslow heuristic from case B (a monitoring agent on every node LISTing Events): one client over half of all LISTs, at a rate where it matters",
			Summary: "{{.user_agent}} ({{.user}}) issued {{.share}} of LIST requests, {{.rate}}/min on {{.resource}}: it re-reads a collection instead of watching it",
			Remediation: "Make that client use an informer (one LIST, then WATCH) or poll far less often; for Events, move them to their own etcd " +
				"(--etcd-servers-overrides=/events#...).",
			Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
				hits := rl.Crossing(r)
				for i, h := range hits {
					hits[i].Vars["share"] = rule.Percent(h.Value)
					hits[i].Vars["rate"] = result.FormatValue(h.Evidence[1].Value)
				}
				return hits
			},
		},
		{
			ID: "KS-AUDIT-409", Title: "A client's updates keep conflicting", Severity: result.SeverityWarning, Cases: []string{"E"},
			When:    rule.Condition{Metric: auditConflicts, Op: ">", Value: 60, Unit: "per_minute"},
			Source:  "kubeslow heuristic from case E (Calico IPAM): more than one 409 per second from one client means it races other writers on shared objects",
			Summary: "{{.value}} 409 Conflicts from {{.user_agent}} ({{.user}}) on {{.resource}}, hottest object {{.hot_object}}: concurrent updates to the same objects, and the retries add load",
			Remediation: "Serialise that client's writers per object (e.g. Calico's per-node IPAM lock), spread them over more objects, " +
				"or make it back off on conflict.",
			// The apiserver's own 409 counters see the same storm: one cause, one finding.
			SameCause: []string{"KS-API-409"},
		},
	}
}
