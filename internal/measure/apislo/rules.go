package apislo

import (
	"fmt"

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
	apiWebhookP99     = rule.Metric{Result: Name, Name: MetricWebhookP99}
	apiWebhookCalls   = rule.Metric{Result: Name, Name: MetricWebhookCalls}
	apiWebhookOpen    = rule.Metric{Result: Name, Name: MetricWebhookFailOpen}
)

// WebhookP99 is KS-API-WEBHOOK's threshold: half of the SLO of a mutating call (SLOSingle), which the SLI
// latency reports without the webhooks' time; a bound of the apiserver's webhook latency histogram (0.5 s), so
// that the rule fires when more than 1% of a webhook's calls took longer than it.
const WebhookP99 = 0.5

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
			When:   rule.Condition{Metric: apiAPFRejected, Op: ">", Value: 0, Unit: "per_minute"},
			Source: "Kubernetes API Priority and Fairness: a rejection means a priority level's seats and queues were full",
			Summary: "{{.value}} requests rejected in priority level {{.priority_level}}{{if .flow_schema}} (FlowSchema {{.flow_schema}}){{end}}, " +
				"{{.reason}}: clients see 429 and retry",
			Remediation: "The FlowSchema says whose requests these are (`kubectl get flowschema NAME -o yaml`: its subjects); `kubeslow audit` names the " +
				"busiest of them. Reduce what they send (watch instead of polling, paginate LISTs), or give the priority level more room: more " +
				"nominalConcurrencyShares, borrowing from other levels, or a queue (limitResponse Queue) where it rejects at once " +
				"(reason concurrency-limit) or longer queues where they overflow (queue-full, time-out).",
		},
		{
			ID: "KS-API-WEBHOOK", Title: "An admission webhook holds up the requests it matches", Severity: result.SeverityWarning, Cases: []string{"E"},
			When: rule.Condition{Metric: apiWebhookP99, Op: ">", Value: WebhookP99, Unit: "seconds"},
			Source: "Kubernetes dynamic admission control: a webhook's time adds to the latency of every request it matches, so it should answer as quickly as possible " +
				"(milliseconds); kubeslow's threshold is half of SIG Scalability's 1 s p99 for a mutating call, which the apiserver's SLI latency " +
				"(apiserver_request_sli_duration_seconds, KS-API-LATENCY's) reports without the webhooks' time: their wait is read from " +
				"apiserver_admission_webhook_admission_duration_seconds, where 0.5 s is a bucket bound (more than 1% of the calls took longer)",
			Summary: "admission webhook {{.name}} ({{.kind}}) took p99 {{.value}} > {{.threshold}} over {{.calls}} calls{{.failopen}}: " +
				"every request it matches waits for it, a wait the apiserver's SLI latency (KS-API-LATENCY) leaves out",
			Remediation: "Find the webhook (`kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations -o yaml`, its name is the webhook's): " +
				"a slow answer is its backend's (its replicas, CPU limit, what it calls out to); calls that fail open after the timeout are a backend the " +
				"apiserver cannot reach or that does not answer (its Service's endpoints, a firewall or NetworkPolicy between the control plane and it: " +
				"on GKE private clusters the master's firewall rule for the webhook's port). Narrow what it matches (rules, namespaceSelector, " +
				"objectSelector, matchConditions), lower its timeoutSeconds, or remove a configuration whose backend is gone.",
			Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
				hits := rl.Crossing(r)
				for i, h := range hits {
					l := map[string]string{"name": h.Vars["name"], "type": h.Vars["type"]}
					calls, opened := apiWebhookCalls.In(r, l), apiWebhookOpen.In(r, l)
					hits[i].Vars["kind"] = webhookKind(h.Vars["type"])
					hits[i].Vars["calls"], hits[i].Vars["failopen"] = "?", ""
					if calls != nil {
						hits[i].Vars["calls"] = result.FormatValue(calls.Value)
					}
					if opened != nil && opened.Value > 0 {
						hits[i].Vars["failopen"] = fmt.Sprintf(", %s of them failed (an error or its timeout) and were let through (failurePolicy Ignore)",
							result.FormatValue(opened.Value))
					}
				}
				return hits
			},
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

// webhookKind is the webhook's kind as its configuration says it: the apiserver's metrics call a mutating
// webhook's step "admit".
func webhookKind(typ string) string {
	if typ == "admit" {
		return "mutating"
	}
	return typ
}
