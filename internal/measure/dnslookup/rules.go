package dnslookup

import (
	"strings"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var (
	lookNearShare = rule.Metric{Result: Name, Name: MetricNearTimeoutShare}
	lookNear      = rule.Metric{Result: Name, Name: MetricNearTimeout}
	lookCount     = rule.Metric{Result: Name, Name: MetricLookups}
	lookMultiple  = rule.Metric{Result: Name, Name: MetricNearMultipleShare}
	lookP50       = rule.Metric{Result: Name, Name: "lookup_seconds_p50"}
)

// ShareMetric and CountMetric are the rule's metrics, for the combined rule that ties the shape to conntrack.
var ShareMetric, CountMetric = lookNearShare, lookNear

// FiveSecondsRuleID is the rule that flags lookups near multiples of the resolver's time-out.
const FiveSecondsRuleID = "KS-DNS-5S"

// Source of the threshold.
const fiveSecondsSource = "kubernetes#56903 and Weave's \"Racy conntrack and DNS lookup timeouts\" (2018): lookups from pods " +
	"taking 5 s or more, clustered at multiples of the resolver's 5 s time-out, while the DNS server's latency looks normal; " +
	"a healthy lookup takes milliseconds, so kubeslow flags 1% of lookups (the rate users of the issue reported) and at least 3"

// Rules are the rules over the lookups.
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: FiveSecondsRuleID, Title: "DNS lookups take a multiple of the resolver's time-out (5 s): queries are dropped", Severity: result.SeverityError, Cases: []string{"B"},
		When:   rule.Condition{Metric: lookNearShare, Op: ">=", Value: 0.01, Unit: "ratio"},
		Also:   []rule.Condition{{Metric: lookNear, Op: ">=", Value: 3, Unit: "count"}},
		Reads:  []rule.Metric{lookCount, lookMultiple, lookP50},
		Source: fiveSecondsSource,
		Summary: "{{.value}} of {{.lookups}} lookups from a pod on {{.client_node}} took a multiple of the resolver's {{.timeout}} time-out " +
			"({{.at1}} near 1x, {{.at2}} near 2x; median {{.p50}}): one of the lookup's queries was dropped and waited out. The conntrack race " +
			"on UDP DNAT (kubernetes#56903: A and AAAA sent at once from one socket, one loses the conntrack insert) when the nodes' " +
			"conntrack insert_failed rises (KS-DNS-CONNTRACK-RACE), else a lossy path to the DNS servers. {{.libc}}",
		Remediation: "NodeLocal DNSCache (node-local DNS over TCP upstream, no DNAT: fixes every libc); or TCP for DNS (`use-vc` in the pods' " +
			"dnsConfig.options, honoured by glibc and Go); for glibc clients `single-request-reopen` (or `single-request`) — musl (Alpine) " +
			"ignores both, so Alpine images need NodeLocal DNSCache or TCP; kernels 5.0+ carry the conntrack fixes for the DNAT race. " +
			"If insert_failed does not rise, find the loss on the path to the DNS Service (tc, firewall, a DNS replica that drops).",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			hits := rl.Crossing(r)
			for i, h := range hits {
				node := map[string]string{"client_node": h.Vars["client_node"]}
				n, p50 := lookCount.In(r, node), lookP50.In(r, node)
				if n == nil || p50 == nil {
					return nil
				}
				h.Vars["lookups"] = result.FormatValue(n.Value)
				h.Vars["p50"] = result.FormatQuantity(p50.Value, "seconds")
				h.Vars["value"] = rule.Percent(h.Value)
				for _, k := range []string{"1", "2"} {
					h.Vars["at"+k] = "0%"
					if m := lookMultiple.In(r, map[string]string{"client_node": h.Vars["client_node"], "multiple": k}); m != nil {
						h.Vars["at"+k] = rule.Percent(m.Value)
					}
				}
				h.Vars["libc"] = LibcAdvice(h.Vars["resolver"], strings.Fields(h.Vars["options"]))
				h.Key = "client_node=" + h.Vars["client_node"]
				hits[i] = h
			}
			return hits
		},
	}}
}

// LibcAdvice says which fix applies to the client as far as it can be seen: the probe's resolver and the
// resolv.conf options the pods get.
func LibcAdvice(resolver string, options []string) string {
	has := func(o string) bool {
		for _, x := range options {
			if k, _, _ := strings.Cut(x, ":"); k == o {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	b.WriteString("The pods' resolv.conf ")
	switch {
	case has("use-vc") || has("tcp"):
		b.WriteString("asks for TCP (use-vc), yet lookups time out: the loss is not the UDP race; look at the path to the DNS servers.")
		return b.String()
	case has("single-request-reopen") || has("single-request"):
		b.WriteString("sets single-request(-reopen): it helps glibc clients only; the probe (Go's resolver) and musl (Alpine) clients still race — NodeLocal DNSCache or use-vc for them.")
	default:
		b.WriteString("sets neither single-request-reopen nor use-vc: glibc clients can add single-request-reopen, musl (Alpine) clients cannot (it ignores it): NodeLocal DNSCache or use-vc serves both.")
	}
	if resolver == "go" {
		b.WriteString(" kubeslow's probe is Go's resolver (A and AAAA from separate sockets, honours use-vc): its 5 s lookups are drops, not only the same-socket race.")
	}
	return b.String()
}
