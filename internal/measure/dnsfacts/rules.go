package dnsfacts

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the cluster-DNS placement rules read.
var (
	dnsOnNode      = rule.Metric{Result: Name, Name: MetricReplicasOnNode}
	dnsRealNodes   = rule.Metric{Result: Name, Name: MetricRealNodes}
	dnsReplicas    = rule.Metric{Result: Name, Name: MetricReplicas}
	dnsNodeShare   = rule.Metric{Result: Name, Name: MetricNodeQueryShare}
	dnsNodeQPS     = rule.Metric{Result: Name, Name: MetricNodeQueriesPerSecond}
	dnsProtected   = rule.Metric{Result: Name, Name: MetricSpreadProtected}
	dnsErrExcess   = rule.Metric{Result: Name, Name: MetricErrorShareExcess}
	dnsErrShare    = rule.Metric{Result: Name, Name: MetricErrorShare}
	dnsP99VsMedian = rule.Metric{Result: Name, Name: MetricRequestP99VsMedian}
	dnsRequestP99  = rule.Metric{Result: Name, Name: MetricRequestP99}
)

const dnsSpreadFix = "Spread the DNS replicas: a podAntiAffinity on kubernetes.io/hostname against the DNS pods' own labels (required, or preferred " +
	"with weight 100 as kubeadm's CoreDNS Deployment has), or a topologySpreadConstraint on kubernetes.io/hostname (and " +
	"topology.kubernetes.io/zone) with maxSkew 1; then roll the Deployment so the scheduler places them again. Run NodeLocal DNSCache " +
	"(a node-local-dns DaemonSet) so each node's pods ask a cache on their own node and only its misses reach the replicas."

// DNSFactsRules are the rules over the cluster DNS's placement and its replicas' own metrics (case B).
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-DNS-HOTSPOT", Title: "Several cluster DNS replicas run on one node", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: rule.Condition{Metric: dnsOnNode, Op: ">=", Value: 2, Unit: "count"},
		// Only where they could have been spread: more than one node to run on.
		Also:  []rule.Condition{{Metric: dnsRealNodes, Op: ">=", Value: 2, Unit: "count"}},
		Reads: []rule.Metric{dnsReplicas, dnsNodeShare, dnsNodeQPS, dnsProtected},
		Source: "case B: after the scheduler switched to bin-packing, 10+ DNS replicas landed on one node and together exceeded the cloud's " +
			"~200 DNS queries/s per VM for external names (fixed with pod anti-affinity); kubeadm's CoreDNS Deployment prefers one replica per node " +
			"(anti-affinity on kubernetes.io/hostname). Two replicas on one node while other nodes could take them share that node's limits and fate",
		Summary: "{{.value}} of the {{.replicas}} DNS replicas run on {{.node}} ({{.real_nodes}} nodes could take them; {{.share}}); spread protection: {{.protection}}: " +
			"they share that node's per-source DNS and connection limits and fail together with it",
		Remediation: dnsSpreadFix,
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			nodes := dnsRealNodes.In(r, nil)
			also := rl.AlsoOn(dnsRealNodes)
			if nodes == nil || !also.Holds(nodes.Value) {
				return nil
			}
			replicas := dnsReplicas.In(r, nil)
			protection := "none"
			for _, rec := range r.Result(Name).Records {
				if rec.ID == "cluster-dns" && rec.Labels["protection"] != "" {
					protection = rec.Labels["protection"]
				}
			}
			var hits []rule.Hit
			for _, m := range dnsOnNode.Samples(r) {
				if !rl.When.Holds(m.Value) {
					continue
				}
				n := m.Labels["node"]
				h := rule.Hit{Key: "node=" + n, Value: m.Value, Evidence: []result.Evidence{dnsOnNode.Evidence(m), dnsRealNodes.Evidence(*nodes)},
					Vars: map[string]string{"value": result.FormatValue(m.Value), "node": n, "real_nodes": result.FormatValue(nodes.Value),
						"replicas": "?", "protection": protection, "share": "query share not measured"}}
				if replicas != nil {
					h.Vars["replicas"] = result.FormatValue(replicas.Value)
				}
				if s := dnsNodeShare.In(r, map[string]string{"node": n}); s != nil {
					h.Evidence = append(h.Evidence, dnsNodeShare.Evidence(*s))
					h.Vars["share"] = rule.Percent(s.Value) + " of the queries"
					if q := dnsNodeQPS.In(r, map[string]string{"node": n}); q != nil {
						h.Evidence = append(h.Evidence, dnsNodeQPS.Evidence(*q))
						h.Vars["share"] += ", " + result.FormatValue(q.Value) + " queries/s"
					}
				}
				if p := dnsProtected.In(r, nil); p != nil {
					h.Evidence = append(h.Evidence, dnsProtected.Evidence(*p))
				}
				hits = append(hits, h)
			}
			return hits
		},
	}, {
		ID: "KS-DNS-REPLICA-ERRORS", Title: "One DNS replica fails many more lookups than the others", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: rule.Condition{Metric: dnsErrExcess, Op: ">", Value: 0.05, Unit: "ratio"},
		Also: []rule.Condition{{Metric: dnsErrShare, Op: ">", Value: 0.05, Unit: "ratio"}},
		Source: "case B: lookups failed only on some DNS replicas (those sharing one node's per-VM query limit). kubeslow's line: a replica answering " +
			"SERVFAIL/REFUSED to more than 5% of its queries, 5 points above the other replicas' median (at least 50 answers each in the window)",
		Summary: "{{.pod}} on {{.node}} answers {{.error_share}} of its queries with SERVFAIL/REFUSED, {{.value}} more than the other replicas' median: " +
			"clients whose queries land on it fail",
		Remediation: "Look at what that replica forwards to and from where (its node's source address and the upstream's per-source limit, " +
			"its forward errors in dns.facts' records); " + dnsSpreadFix,
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			hits := rl.Crossing(r)
			for i, h := range hits {
				hits[i].Vars["value"] = fmt.Sprintf("%.0f points", h.Value*100)
				hits[i].Vars[dnsErrShare.Name] = rule.Percent(h.Evidence[1].Value)
			}
			return hits
		},
	}, {
		ID: "KS-DNS-REPLICA-SLOW", Title: "One DNS replica answers much slower than the others", Severity: result.SeverityWarning, Cases: []string{"B"},
		When: rule.Condition{Metric: dnsP99VsMedian, Op: ">=", Value: 3, Unit: "ratio"},
		Also: []rule.Condition{{Metric: dnsRequestP99, Op: ">=", Value: 0.1, Unit: "seconds"}},
		Source: "kubeslow heuristic, as for nodes (KS-NODE-START-OUTLIER): a replica whose request p99 (coredns_dns_request_duration_seconds over " +
			"the window) is 3x the other replicas' median and at least 100 ms (clients' resolvers retry after 1-5 s) is an outlier",
		Summary:     "{{.pod}} on {{.node}} answers with p99 {{.request_p99}}, {{.value}} times the other replicas' median: clients whose queries land on it wait",
		Remediation: "Look at that replica's node (CPU throttling, a noisy neighbour, conntrack or neighbour tables) and its upstream; " + dnsSpreadFix,
	}}
}
