package dnsready

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the DNS rules read.
var (
	dnsLag          = rule.Metric{Result: Name, Name: MetricDNSLagP99}
	dnsEndpointLag  = rule.Metric{Result: Name, Name: MetricEndpointLagP99}
	dnsServingLag   = rule.Metric{Result: Name, Name: MetricServingLagP99}
	dnsBackoffDelay = rule.Metric{Result: Name, Name: MetricBackoffDelayP99}
	dnsBackoffExtra = rule.Metric{Result: Name, Name: MetricBackoffExtraP99}
)

// dnsLagMax is two of CoreDNS's default 5 s negative-cache periods (the cache plugin's MINTTL and the
// kubernetes plugin's TTL are both 5 s): a client that asked before the pod existed can get a cached "no such
// host" for up to one period after it is Ready; beyond two, something else holds the name back.
var dnsLagMax = rule.Condition{Metric: dnsLag, Op: ">", Value: 10, Unit: "seconds"}

// Rules are the rules over the DNS readiness benchmark (case A).
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-DNS-LAG", Title: "Per-pod DNS names resolve long after the pods are Ready", Severity: result.SeverityWarning, Cases: []string{"A"},
		When:  dnsLagMax,
		Reads: []rule.Metric{dnsEndpointLag, dnsServingLag},
		Source: "two of CoreDNS's default 5 s negative-cache periods (cache MINTTL, kubernetes plugin TTL): a name asked for before its pod existed " +
			"may stay NXDOMAIN one period after Ready, not more",
		Summary: "p99 {{.value}} from Ready to resolvable ({{.split}}): peers that look each other up by name see NXDOMAIN that long",
		Remediation: "If the EndpointSlice part dominates: the endpoint controller or the apiserver is slow (look at api.responsiveness). If the DNS part " +
			"dominates: CoreDNS's negative cache (cache plugin 'denial' TTL and MINTTL, the kubernetes plugin 'ttl') keeps an early NXDOMAIN; lower them, " +
			"or set publishNotReadyAddresses on the headless Service so names exist before readiness.",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			hits := rl.Crossing(r)
			for i := range hits {
				split := "EndpointSlice share not measured"
				if ep, sv := dnsEndpointLag.In(r, nil), dnsServingLag.In(r, nil); ep != nil && sv != nil {
					split = "Ready -> EndpointSlice p99 " + result.FormatQuantity(ep.Value, "seconds") + ", EndpointSlice -> resolvable p99 " + result.FormatQuantity(sv.Value, "seconds")
				}
				hits[i].Vars["split"] = split
			}
			return hits
		},
	}, {
		ID: "KS-DNS-BACKOFF", Title: "Client back-off multiplies DNS lag into start-up delay", Severity: result.SeverityError, Cases: []string{"A"},
		// Combined: only where the lag itself is a finding (KS-DNS-LAG) and the back-off adds to it.
		When:  rule.Condition{Metric: dnsBackoffExtra, Op: ">", Value: 5, Unit: "seconds"},
		Also:  []rule.Condition{dnsLagMax},
		Reads: []rule.Metric{dnsBackoffDelay},
		Source: "case A: with DNS lagging (KS-DNS-LAG) a lead retrying its peers with exponential back-off took 140 s to start instead of 12 s; " +
			"a fixed 5 s connect time-out bounded the extra wait to 5 s and start-up to 20 s",
		Summary: "DNS records lag pod readiness by p99 {{.lag}}; a client that asked early and retries with back-off ({{.backoff}}) turns that into p99 {{.delay}} after Ready, {{.value}} after the names resolved",
		Remediation: "Cap the client's back-off (a few seconds) or retry name lookups on a short fixed interval; make names resolvable earlier " +
			"(publishNotReadyAddresses on the headless Service, a lower CoreDNS denial TTL); start dependants after their peers are resolvable (an init container that waits on the names).",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			delay := dnsBackoffDelay.In(r, nil)
			if delay == nil {
				return nil
			}
			backoff := ""
			for _, rec := range r.Result(Name).Records {
				if rec.ID == "client" {
					backoff = rec.Labels["backoff"]
				}
			}
			hits := rl.Crossing(r)
			for i, h := range hits {
				// Evidence: the extra wait, the delay, the lag.
				hits[i].Evidence = []result.Evidence{h.Evidence[0], dnsBackoffDelay.Evidence(*delay), h.Evidence[1]}
				hits[i].Vars["delay"], hits[i].Vars["lag"], hits[i].Vars["backoff"] = result.FormatQuantity(delay.Value, "seconds"), h.Vars[dnsLag.Name], backoff
			}
			return hits
		},
	}}
}

// Rules are the rules over the measurement's result (rule.Source).
func (*Measurement) Rules() []rule.Rule { return Rules() }
