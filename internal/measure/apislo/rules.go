package apislo

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

const sloSource = "Kubernetes SIG Scalability API call latency SLO (p99 over the window, WATCH/CONNECT/proxy/log/exec excluded)"

// The metrics the rules read.
var (
	apiLatencySingle  = rule.Metric{Result: Name, Name: MetricLatencyP99Single}
	apiLatencyList    = rule.Metric{Result: Name, Name: MetricLatencyP99List}
	apiConflicts      = rule.Metric{Result: Name, Name: MetricConflictsPerMinute}
	apiAPFRejected    = rule.Metric{Result: Name, Name: MetricAPFRejectedPerMinute}
	apiListBytes      = rule.Metric{Result: Name, Name: MetricListBytesPerSecond}
	apiListBytesShare = rule.Metric{Result: Name, Name: MetricListBytesShare}
)

// Rules are the rules over the API's latency and request rates.
func Rules() []rule.Rule {
	return []rule.Rule{
		{
			ID: "KS-API-LATENCY", Title: "API calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B", "E"},
			When:    rule.Condition{Metric: apiLatencySingle, Op: ">", Value: SLOSingle, Unit: "seconds"},
			Source:  sloSource + ": mutating and single-object calls",
			Summary: "{{.verb}} {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}: the control plane is overloaded or etcd is slow",
			Remediation: "Look at what loads the apiserver (api.responsiveness rates, `kubeslow audit` on its audit log) and at etcd (etcd.health); " +
				"give the control plane more CPU, or etcd a faster disk.",
		},
		{
			ID: "KS-API-LIST-LATENCY", Title: "LIST calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B"},
			When:    rule.Condition{Metric: apiLatencyList, Op: ">", Value: SLOList, Unit: "seconds"},
			Source:  sloSource + ": calls on collections (LIST, and DELETE of a collection, as clusterloader2 judges them) at namespace and cluster scope",
			Summary: "{{.verb}} {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}",
			Remediation: "Large collections listed from etcd: use informers (watch + cache) instead of periodic LISTs, paginate, and list with resourceVersion=0 to serve from the cache; " +
				"a collection deleted at once (a namespace's pods): delete it in smaller parts.",
		},
		{
			ID: "KS-API-409", Title: "Conflict storm: concurrent updates to the same objects", Severity: result.SeverityWarning, Cases: []string{"E"},
			When:    rule.Condition{Metric: apiConflicts, Op: ">", Value: 60, Unit: "per_minute"},
			Source:  "kubeslow heuristic from case E (Calico IPAM): more than one 409 per second on a resource means writers race on shared objects, and their retries add load",
			Summary: "{{.value}} 409 Conflicts on {{.verb}} {{.resource}}{{if .group}} ({{.group}}){{end}}: writers race to update the same objects and every retry is another request",
			Remediation: "Find the writers and the hot objects (`kubeslow audit` on the apiserver audit log names them); serialise writers per object " +
				"(e.g. Calico's per-node IPAM lock), spread them over more objects (larger or more IPAM blocks), or back off on conflict.",
		},
		{
			ID: "KS-API-THROTTLED", Title: "Requests rejected by API Priority and Fairness", Severity: result.SeverityWarning, Cases: []string{"B", "E"},
			When:        rule.Condition{Metric: apiAPFRejected, Op: ">", Value: 0, Unit: "per_minute"},
			Source:      "Kubernetes API Priority and Fairness: a rejection means a priority level's seats and queues were full",
			Summary:     "{{.value}} requests rejected ({{.labels}}): clients see 429 and retry",
			Remediation: "Find the flows that fill the priority level (apiserver_flowcontrol_* metrics, `kubeslow audit`), reduce them, or give the level more concurrency shares.",
		},
		{
			ID: "KS-API-LIST-BYTES", Title: "One resource dominates LIST traffic", Severity: result.SeverityWarning, Cases: []string{"B"},
			When: rule.Condition{Metric: apiListBytesShare, Op: ">", Value: 0.5, Unit: "ratio"},
			Also: []rule.Condition{{Metric: apiListBytes, Op: ">", Value: 1 << 20, Unit: "bytes_per_second"}},
			Source: "kubeslow heuristic from case B (a per-node agent LISTing Events made apiservers read >500 MB/s from etcd): " +
				"one resource over half of LIST bytes, at a volume where it matters",
			Summary:     "LISTs of {{.resource}} return {{.mbps}} ({{.share}} of all LIST bytes): clients re-read a large collection instead of watching it",
			Remediation: "Find the client (`kubeslow audit` names user and user agent): make it watch (informers) or poll less; move Events to their own etcd (--etcd-servers-overrides=/events#...).",
			Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
				hits := rl.Crossing(r)
				for i, h := range hits {
					rate := apiListBytes.In(r, map[string]string{"resource": h.Vars["resource"]})
					hits[i].Vars["mbps"] = result.FormatValue(rate.Value/1e6) + " MB/s"
					hits[i].Vars["share"] = rule.Percent(h.Value)
				}
				return hits
			},
		},
	}
}
