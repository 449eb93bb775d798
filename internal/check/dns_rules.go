package check

import (
	"github.com/kubeslow/kubeslow/internal/measure/dnsready"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// dnsLagMax is two of CoreDNS's default 5 s negative-cache periods (the cache plugin's MINTTL and the
// kubernetes plugin's TTL are both 5 s): a client that asked before the pod existed can get a cached "no such
// host" for up to one period after it is Ready; beyond two, something else holds the name back.
const dnsLagMax = 10

// backoffExtraMax is how long past the moment a name became resolvable a retrying client may still wait: case
// A's fix, a fixed 5 s connect time-out, bounded it to that.
const backoffExtraMax = 5

// DNSRules are the rules over the DNS readiness benchmark (case A).
func DNSRules() []Rule {
	return []Rule{{
		ID: "KS-DNS-LAG", Title: "Per-pod DNS names resolve long after the pods are Ready", Severity: result.SeverityWarning, Cases: []string{"A"},
		Needs: []string{dnsready.Name},
		Threshold: result.Threshold{Op: ">", Value: dnsLagMax, Unit: "seconds",
			Source: "two of CoreDNS's default 5 s negative-cache periods (cache MINTTL, kubernetes plugin TTL): a name asked for before its pod existed may stay NXDOMAIN one period after Ready, not more"},
		Summary: "p99 {{.value}} from Ready to resolvable ({{.split}}): peers that look each other up by name see NXDOMAIN that long",
		Remediation: "If the EndpointSlice part dominates: the endpoint controller or the apiserver is slow (look at api.responsiveness). If the DNS part " +
			"dominates: CoreDNS's negative cache (cache plugin 'denial' TTL and MINTTL, the kubernetes plugin 'ttl') keeps an early NXDOMAIN; lower them, " +
			"or set publishNotReadyAddresses on the headless Service so names exist before readiness.",
		Match: dnsLagMatch,
	}, {
		ID: "KS-DNS-BACKOFF", Title: "Client back-off multiplies DNS lag into start-up delay", Severity: result.SeverityError, Cases: []string{"A"},
		Needs: []string{dnsready.Name},
		Threshold: result.Threshold{Op: ">", Value: backoffExtraMax, Unit: "seconds",
			Source: "case A: with DNS lagging (KS-DNS-LAG) a lead retrying its peers with exponential back-off took 140 s to start instead of 12 s; a fixed 5 s connect time-out bounded the extra wait to 5 s and start-up to 20 s"},
		Summary: "DNS records lag pod readiness by p99 {{.lag}}; a client that asked early and retries with back-off ({{.backoff}}) turns that into p99 {{.delay}} after Ready, {{.value}} after the names resolved",
		Remediation: "Cap the client's back-off (a few seconds) or retry name lookups on a short fixed interval; make names resolvable earlier " +
			"(publishNotReadyAddresses on the headless Service, a lower CoreDNS denial TTL); start dependants after their peers are resolvable (an init container that waits on the names).",
		Match: dnsBackoffMatch,
	}}
}

func dnsLagMatch(r *result.Report) []Hit {
	res := r.Result(dnsready.Name)
	lag := res.Metric("dns_lag_p99", nil)
	if lag == nil || lag.Value <= dnsLagMax {
		return nil
	}
	split := "EndpointSlice share not measured"
	if ep, sv := res.Metric("endpoint_lag_p99", nil), res.Metric("serving_lag_p99", nil); ep != nil && sv != nil {
		split = "Ready -> EndpointSlice p99 " + report.FormatValue(ep.Value) + " s, EndpointSlice -> resolvable p99 " + report.FormatValue(sv.Value) + " s"
	}
	return []Hit{{Evidence: []result.Evidence{evidenceOf(*lag, dnsready.Name)}, Vars: map[string]string{"value": report.FormatValue(lag.Value) + " s", "split": split}}}
}

func dnsBackoffMatch(r *result.Report) []Hit {
	res := r.Result(dnsready.Name)
	lag, delay, extra := res.Metric("dns_lag_p99", nil), res.Metric("client_backoff_delay_p99", nil), res.Metric("client_backoff_extra_p99", nil)
	// Combined: only where the lag itself is a finding (KS-DNS-LAG) and the back-off adds to it.
	if lag == nil || delay == nil || extra == nil || lag.Value <= dnsLagMax || extra.Value <= backoffExtraMax {
		return nil
	}
	backoff := ""
	for _, rec := range res.Records {
		if rec.ID == "client" {
			backoff = rec.Labels["backoff"]
		}
	}
	return []Hit{{
		Evidence: []result.Evidence{evidenceOf(*extra, dnsready.Name), evidenceOf(*delay, dnsready.Name), evidenceOf(*lag, dnsready.Name)},
		Vars: map[string]string{"value": report.FormatValue(extra.Value) + " s", "delay": report.FormatValue(delay.Value) + " s",
			"lag": report.FormatValue(lag.Value) + " s", "backoff": backoff},
	}}
}
