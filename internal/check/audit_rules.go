package check

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/auditlog"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Thresholds of the audit rules.
const (
	listShareMin      = 0.5
	listRateMin       = 60.0
	conflictRateAudit = 60.0
)

// AuditRules are the rules over the audit analysis (api.audit); `kubeslow audit` evaluates only these.
func AuditRules() []Rule {
	return []Rule{
		{
			ID: "KS-AUDIT-LIST", Title: "One client dominates LIST requests", Severity: result.SeverityWarning, Cases: []string{"B"},
			Needs: []string{auditlog.Name},
			Threshold: result.Threshold{Op: ">", Value: listShareMin, Unit: "ratio",
				Source: "kubeslow heuristic from case B (a monitoring agent on every node LISTing Events): one client over half of all LISTs, at more than 60 LISTs/min"},
			Summary: "{{.agent}} ({{.user}}) issued {{.share}} of LIST requests, {{.rate}}/min on {{.resource}}: it re-reads a collection instead of watching it",
			Remediation: "Make that client use an informer (one LIST, then WATCH) or poll far less often; for Events, move them to their own etcd " +
				"(--etcd-servers-overrides=/events#...).",
			Match: auditListMatch,
		},
		{
			ID: "KS-AUDIT-409", Title: "A client's updates keep conflicting", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{auditlog.Name},
			Threshold: result.Threshold{Op: ">", Value: conflictRateAudit, Unit: "per_minute",
				Source: "kubeslow heuristic from case E (Calico IPAM): more than one 409 per second from one client means it races other writers on shared objects"},
			Summary: "{{.value}} 409 Conflicts from {{.user_agent}} ({{.user}}) on {{.resource}}, hottest object {{.hot_object}}: concurrent updates to the same objects, and the retries add load",
			Remediation: "Serialise that client's writers per object (e.g. Calico's per-node IPAM lock), spread them over more objects, " +
				"or make it back off on conflict.",
			Match: MetricAbove(auditlog.Name, "conflicts_per_minute", ">", conflictRateAudit, "per_minute"),
		},
	}
}

func auditListMatch(r *result.Report) []Hit {
	res := r.Result(auditlog.Name)
	if res == nil {
		return nil
	}
	var hits []Hit
	for _, m := range res.Metrics {
		if m.Name != "list_share" || m.Value <= listShareMin {
			continue
		}
		rate := res.Metric("lists_per_minute", m.Labels)
		if rate == nil || rate.Value <= listRateMin {
			continue
		}
		hits = append(hits, Hit{
			Evidence: []result.Evidence{evidenceOf(m, auditlog.Name),
				evidenceOf(*rate, auditlog.Name)},
			Vars: map[string]string{"agent": m.Labels["user_agent"], "user": m.Labels["user"], "resource": m.Labels["resource"],
				"share": fmt.Sprintf("%.0f%%", m.Value*100), "rate": report.FormatValue(rate.Value)},
		})
	}
	return hits
}
