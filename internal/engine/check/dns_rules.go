package check

import (
	"github.com/kubeslow/kubeslow/internal/measure/dnslookup"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var (
	sweepInsertFailedW = rule.Metric{Result: nodeagent.Name, Name: nodeagent.MetricConntrackInsertFailedWindow}
	sweepDropW         = rule.Metric{Result: nodeagent.Name, Name: nodeagent.MetricConntrackDropWindow}
)

// dnsConntrackRaceRule is the cause behind KS-DNS-5S when the nodes' conntrack shows it: insert_failed rising
// in the window (the per-CPU rows summed, by the header's names) while lookups wait out the resolver's time-out.
func dnsConntrackRaceRule() rule.Rule {
	return rule.Rule{
		ID: "KS-DNS-CONNTRACK-RACE", Title: "The conntrack race on UDP DNAT drops DNS queries", Severity: result.SeverityError, Cases: []string{"B"},
		When:  rule.Condition{Metric: sweepInsertFailedW, Op: ">", Value: 0, Unit: "count"},
		Also:  []rule.Condition{{Metric: dnslookup.ShareMetric, Op: ">=", Value: 0.01, Unit: "ratio"}},
		Reads: []rule.Metric{sweepDropW, dnslookup.CountMetric},
		Source: "kubernetes#56903 and Weave's \"Racy conntrack and DNS lookup timeouts\" (2018): a lost conntrack insert counts in " +
			"/proc/net/stat/nf_conntrack insert_failed (and drop); any rise in the window while lookups wait out the 5 s time-out " +
			"(KS-DNS-5S's threshold) ties the two",
		Summary: "conntrack insert_failed rose by {{.value}} on {{.node}} in the window (drop by {{.drop}}) while {{.share}} of the lookups " +
			"took a multiple of the resolver's time-out: concurrent UDP queries through the DNS Service's DNAT lose the conntrack insert " +
			"and are dropped, and the client waits 5 s to retry",
		Remediation: "NodeLocal DNSCache (no DNAT on the pods' DNS path, TCP to CoreDNS), or TCP for DNS (use-vc); for glibc clients " +
			"single-request-reopen (musl ignores it); kernels 5.0+ resolve most of the clashes (the clash_resolve counter).",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			share := rl.AlsoOn(dnslookup.ShareMetric)
			var worst *result.Metric
			for _, m := range dnslookup.ShareMetric.Samples(r) {
				if share.Holds(m.Value) && (worst == nil || m.Value > worst.Value) {
					x := m
					worst = &x
				}
			}
			if worst == nil {
				return nil
			}
			var hits []rule.Hit
			for _, m := range sweepInsertFailedW.Samples(r) {
				if !rl.When.Holds(m.Value) {
					continue
				}
				drop := 0.0
				if d := sweepDropW.In(r, m.Labels); d != nil {
					drop = d.Value
				}
				hits = append(hits, rule.Hit{Key: "node=" + m.Labels["node"], Value: m.Value,
					Evidence: []result.Evidence{sweepInsertFailedW.Evidence(m), dnslookup.ShareMetric.Evidence(*worst)},
					Vars: map[string]string{"value": result.FormatValue(m.Value), "node": m.Labels["node"], "drop": result.FormatValue(drop),
						"share": rule.Percent(worst.Value)}})
			}
			return hits
		},
	}
}
