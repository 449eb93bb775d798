package dnsready

import (
	"fmt"
	"strings"

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
	// The job benchmark's phases (`bench job`), read for the findings' job-level numbers.
	dnsJobRunning   = rule.Metric{Result: Name, Name: MetricJobRunning}
	dnsJobReady     = rule.Metric{Result: Name, Name: MetricJobReady}
	dnsJobResolve   = rule.Metric{Result: Name, Name: MetricJobResolvable}
	dnsJobConnected = rule.Metric{Result: Name, Name: MetricJobConnected}
	dnsJobDNSWait   = rule.Metric{Result: Name, Name: MetricJobDNSWait}
	dnsJobBackoff   = rule.Metric{Result: Name, Name: MetricJobBackoffWait}
	dnsJobStartup   = rule.Metric{Result: Name, Name: MetricJobStartup}
	dnsJobPods      = rule.Metric{Result: Name, Name: "pods"}
	jobReads        = []rule.Metric{dnsJobStartup, dnsJobRunning, dnsJobReady, dnsJobResolve, dnsJobConnected, dnsJobDNSWait, dnsJobBackoff}
)

// jobLevel says what the job benchmark measured for the item with labels (its variant): the whole job's
// phases from the Job's creation and the shares of the DNS lag and the back-off; "" without a job.
func jobLevel(r *result.Report, labels map[string]string) string {
	if labels == nil {
		return ""
	}
	startup := dnsJobStartup.In(r, labels)
	if startup == nil || startup.Value <= 0 {
		return ""
	}
	pods := ""
	if p := dnsJobPods.In(r, labels); p != nil {
		pods = result.FormatValue(p.Value) + " pods, "
	}
	s := "; whole job (" + pods + labels["variant"] + ") started " + result.FormatQuantity(startup.Value, "seconds") + " after creation"
	var phases []string
	for _, ph := range []struct {
		m    rule.Metric
		name string
	}{{dnsJobRunning, "all Running"}, {dnsJobReady, "all Ready"}, {dnsJobResolve, "all names resolvable"}, {dnsJobConnected, "all connected"}} {
		if v := ph.m.In(r, labels); v != nil {
			phases = append(phases, ph.name+" "+result.FormatQuantity(v.Value, "seconds"))
		}
	}
	if len(phases) > 0 {
		s += " (" + strings.Join(phases, ", ") + ")"
	}
	if d := dnsJobDNSWait.In(r, labels); d != nil {
		s += ": the DNS lag took " + result.FormatQuantity(d.Value, "seconds") + " of it (" + share(d.Value, startup.Value) + ")"
		if b := dnsJobBackoff.In(r, labels); b != nil {
			s += ", the back-off " + result.FormatQuantity(b.Value, "seconds") + " (" + share(b.Value, startup.Value) + ")"
		}
	}
	return s
}

func share(part, whole float64) string { return fmt.Sprintf("%.0f%%", 100*part/whole) }

// dnsLagMax is two of CoreDNS's default 5 s negative-cache periods (the cache plugin's MINTTL and the
// kubernetes plugin's TTL are both 5 s): a client that asked before the pod existed can get a cached "no such
// host" for up to one period after it is Ready; beyond two, something else holds the name back.
var dnsLagMax = rule.Condition{Metric: dnsLag, Op: ">", Value: 10, Unit: "seconds"}

// Rules are the rules over the DNS readiness benchmark (case A).
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-DNS-LAG", Title: "Per-pod DNS names resolve long after the pods are Ready", Severity: result.SeverityWarning, Cases: []string{"A"},
		When:  dnsLagMax,
		Reads: append([]rule.Metric{dnsEndpointLag, dnsServingLag}, jobReads...),
		Source: "two of CoreDNS's default 5 s negative-cache periods (cache MINTTL, kubernetes plugin TTL): a name asked for before its pod existed " +
			"may stay NXDOMAIN one period after Ready, not more",
		Summary: "p99 {{.value}} from Ready to resolvable{{if .labels}} ({{.labels}}){{end}} ({{.split}}): peers that look each other up by name see NXDOMAIN that long{{.job}}",
		Remediation: "If the EndpointSlice part dominates: the endpoint controller or the apiserver is slow (look at api.responsiveness). If the DNS part " +
			"dominates: CoreDNS's negative cache (cache plugin 'denial' TTL and MINTTL, the kubernetes plugin 'ttl') keeps an early NXDOMAIN; lower them, " +
			"or set publishNotReadyAddresses on the headless Service so names exist before readiness.",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			hits := rl.Crossing(r)
			for i := range hits {
				labels := hits[i].Evidence[0].Labels
				split := "EndpointSlice share not measured"
				if ep, sv := dnsEndpointLag.In(r, labels), dnsServingLag.In(r, labels); ep != nil && sv != nil {
					split = "Ready -> EndpointSlice p99 " + result.FormatQuantity(ep.Value, "seconds") + ", EndpointSlice -> resolvable p99 " + result.FormatQuantity(sv.Value, "seconds")
				}
				hits[i].Vars["split"], hits[i].Vars["job"] = split, jobLevel(r, labels)
			}
			return hits
		},
	}, {
		ID: "KS-DNS-BACKOFF", Title: "Client back-off multiplies DNS lag into start-up delay", Severity: result.SeverityError, Cases: []string{"A"},
		// Combined: only where the lag itself is a finding (KS-DNS-LAG) and the back-off adds to it.
		When:  rule.Condition{Metric: dnsBackoffExtra, Op: ">", Value: 5, Unit: "seconds"},
		Also:  []rule.Condition{dnsLagMax},
		Reads: append([]rule.Metric{dnsBackoffDelay}, jobReads...),
		Source: "case A: with DNS lagging (KS-DNS-LAG) a lead retrying its peers with exponential back-off took 140 s to start instead of 12 s; " +
			"a fixed 5 s connect time-out bounded the extra wait to 5 s and start-up to 20 s",
		Summary: "DNS records lag pod readiness by p99 {{.lag}}; a client that asked early and retries with back-off ({{.backoff}}) turns that into p99 {{.delay}} after Ready, {{.value}} after the names resolved{{if .labels}} ({{.labels}}){{end}}{{.job}}",
		Remediation: "Cap the client's back-off (a few seconds) or retry name lookups on a short fixed interval; make names resolvable earlier " +
			"(publishNotReadyAddresses on the headless Service, a lower CoreDNS denial TTL); start dependants after their peers are resolvable (an init container that waits on the names).",
		Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
			backoff := ""
			for _, rec := range r.Result(Name).Records {
				if rec.ID == "client" {
					backoff = rec.Labels["backoff"]
				}
			}
			var out []rule.Hit
			for _, h := range rl.Crossing(r) {
				labels := h.Evidence[0].Labels
				delay := dnsBackoffDelay.In(r, labels)
				if delay == nil {
					continue
				}
				// Evidence: the extra wait, the delay, the lag.
				h.Evidence = []result.Evidence{h.Evidence[0], dnsBackoffDelay.Evidence(*delay), h.Evidence[1]}
				h.Vars["delay"], h.Vars["lag"], h.Vars["backoff"] = result.FormatQuantity(delay.Value, "seconds"), h.Vars[dnsLag.Name], backoff
				h.Vars["job"] = jobLevel(r, labels)
				out = append(out, h)
			}
			return out
		},
	}}
}
