// Package apislo is the API responsiveness measurement and the API tier of the control plane: apiserver
// metrics scraped through the API at the window's start, every step and its end, and analysed over the window —
// latency percentiles per verb/resource/scope against the SIG Scalability SLOs, response codes (409 conflicts,
// 429 throttling), API Priority and Fairness rejections, queueing and seats, LIST response volume and the
// objects LISTs read from storage by resource, stored objects, etcd's database size and latency as the
// apiserver sees them, and which apiserver replica answered. It needs only the grant on /metrics, so it works
// on managed control planes.
package apislo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "api.responsiveness"

// Metric names of the result: rules read them through these.
const (
	// MetricLatencyP99Single is the p99 of mutating and single-object calls (labels verb, resource, scope[, subresource]).
	MetricLatencyP99Single = "latency_p99_single"
	// MetricLatencyP99List is the p99 of collection calls, at namespace and cluster scope: LISTs, and DELETEs
	// of a collection (the namespace controller's when a namespace goes) (same labels).
	MetricLatencyP99List = "latency_p99_list"
	// MetricConflictsPerMinute and MetricThrottledPerMinute are the 409 and 429 rates (labels group, resource, verb).
	MetricConflictsPerMinute = "conflicts_per_minute"
	MetricThrottledPerMinute = "throttled_per_minute"
	// MetricAPFRejectedPerMinute are API Priority and Fairness rejections (labels priority_level, flow_schema:
	// the FlowSchema that put the requests there, and so which clients; reason).
	MetricAPFRejectedPerMinute = "apf_rejected_per_minute"
	// MetricListBytesPerSecond is the LIST response volume, in all and per resource (label resource).
	MetricListBytesPerSecond = "list_bytes_per_second"
	// MetricRequestsPerSecond is every request the apiserver served, per second.
	MetricRequestsPerSecond = "requests_per_second"
	// MetricListBytesShare is a resource's share of the LIST volume (label resource).
	MetricListBytesShare = "list_bytes_share"
	// MetricWebhookP99 is the p99 of an admission webhook's calls (labels name, type: validating or admit, the
	// apiserver's word for mutating; apiserver_admission_webhook_admission_duration_seconds): the time the
	// requests it matches wait for it, which the SLI latency (MetricLatencyP99Single) leaves out.
	MetricWebhookP99 = "webhook_p99"
	// MetricWebhookCalls is the calls made to an admission webhook in the window, and MetricWebhookFailOpen those
	// of them that failed (an error or its timeoutSeconds) and were let through under failurePolicy Ignore
	// (apiserver_admission_webhook_fail_open_count) (labels name, type).
	MetricWebhookCalls    = "webhook_calls"
	MetricWebhookFailOpen = "webhook_fail_open"
)

// SLO thresholds (Kubernetes SIG Scalability, "API call latency" SLO): p99 <= 1 s for mutating and
// single-object calls, <= 30 s for calls on collections, at namespace and cluster scope (collection).
const (
	SLOSingle = 1.0
	SLOList   = 30.0
	// MinRequests is the fewest calls of one verb/resource/scope in the window for which a p99 is reported.
	MinRequests = 10
)

// PromQL label matchers of the same classification, for the apiserver's request latency histograms: the calls
// judged against SLOSingle (mutating and single-object calls, streaming and proxied ones excluded) and those
// judged against SLOList (calls on collections).
// Both are built from excludedVerbList and excludedSubList, as Analyze's filters are.
var (
	SingleObjectMatchers = fmt.Sprintf(`verb!~"%s|LIST",scope!~"namespace|cluster",subresource!~"%s"`,
		strings.Join(excludedVerbList, "|"), strings.Join(excludedSubList, "|"))
	CollectionMatchers = fmt.Sprintf(`verb!~"%s",scope=~"namespace|cluster",subresource!~"%s"`,
		strings.Join(excludedVerbList, "|"), strings.Join(excludedSubList, "|"))
)

// collection reports whether a call's labels are those of a call on a collection (scope namespace or cluster):
// LISTs, and DELETEs of a collection (the namespace controller's when a namespace goes). The SLO's mutating calls
// are "for single objects", and clusterloader2's APIResponsivenessPrometheus judges every call whose scope is not
// "resource" against 30 s: a DELETE of a namespace's pods is judged with the LISTs, not against 1 s (the healthy
// lab's run once saw one at p99 1.22 s, the namespace of the run before it going).
func collection(l prom.Labels) bool { return l["scope"] == "namespace" || l["scope"] == "cluster" }

// Measurement observes /metrics over a window: a scrape at its start, one every measure.ObserveStep, one at
// its end.
type Measurement struct{ Length time.Duration }

// New returns the measurement with a window.
func New(window time.Duration) *Measurement { return &Measurement{Length: window} }

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("API latency p99 per verb/resource vs SLO, 409/429 rates, APF rejections and queues, LIST bytes and objects, etcd as the apiserver sees it, over %s of apiserver metrics", m.Length)
}

func scrape(ctx context.Context, env *measure.Env) (*prom.Snapshot, error) {
	return env.APIServerMetrics(ctx)
}

// Run observes the window on its own.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

// Start implements measure.Observer.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	s := &measure.Scrapes{Scrape: func(ctx context.Context) (*prom.Snapshot, error) { return scrape(ctx, env) },
		Step: Step, Analyze: func(_ context.Context, first, last *prom.Snapshot) (result.Result, error) {
			return Analyze(first, last), nil
		},
		Log: env.Log.Debug}
	obs, err := s.Start(ctx)
	if err != nil {
		return nil, err
	}
	return &observation{Scrapes: obs}, nil
}

// webhooks adds each admission webhook's calls, p99 and fail-opens over the window to res (pure): the webhooks
// that were called at least once, their p99 where MinRequests calls make one.
func webhooks(res *result.Result, before, after *prom.Snapshot) {
	by := []string{"name", "type"}
	calls := prom.GroupCounters(prom.Delta(before, after, "apiserver_admission_webhook_admission_duration_seconds"), by, nil)
	// Grouped by the same labels: a webhook's fail-opens are under its calls' key.
	failOpen := prom.GroupCounters(prom.Delta(before, after, "apiserver_admission_webhook_fail_open_count"), by, nil)
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		g := calls[k]
		if g.Hist == nil || g.Hist.Count == 0 {
			continue
		}
		l := map[string]string{"name": g.Labels["name"], "type": g.Labels["type"]}
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricWebhookCalls, Unit: "count", Value: g.Hist.Count, Labels: l})
		opened := 0.0
		if f := failOpen[k]; f != nil {
			opened = f.Value
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricWebhookFailOpen, Unit: "count", Value: opened, Labels: l})
		if g.Hist.Count < MinRequests {
			continue
		}
		if p99, ok := g.Hist.QuantileEstimate(0.99); ok {
			res.Metrics = append(res.Metrics, p99.Metric(MetricWebhookP99, "seconds", l))
		}
	}
}

// Step is one step of the series (pure): requests/s, 409 conflicts/min and the p99 of single-object calls
// between two consecutive scrapes.
func Step(prev, cur *prom.Snapshot) []result.Metric {
	secs := cur.At.Sub(prev.At).Seconds()
	if secs <= 0 {
		return nil
	}
	var all, conflicts float64
	for _, s := range prom.Delta(prev, cur, "apiserver_request_total") {
		all += s.Value
		if s.Labels["code"] == "409" {
			conflicts += s.Value
		}
	}
	out := []result.Metric{
		{Name: MetricRequestsPerSecond, Unit: "requests_per_second", Value: all / secs},
		{Name: "conflicts_per_minute", Unit: "per_minute", Value: conflicts / secs * 60},
	}
	g := prom.GroupCounters(prom.Delta(prev, cur, latencyFamily(cur)), nil, func(l prom.Labels) bool {
		return !excludedVerbs[l["verb"]] && !excludedSub[l["subresource"]] && !collection(l)
	})
	for _, gr := range g {
		if gr.Hist != nil && gr.Hist.Count > 0 {
			if p99, ok := gr.Hist.QuantileEstimate(0.99); ok {
				out = append(out, p99.Metric("latency_p99_single", "seconds", nil))
			}
		}
	}
	return append(out, apfStep(cur)...)
}

// latencyFamily is the SLI histogram (without webhook and APF waiting), or on older apiservers the plain one.
func latencyFamily(s *prom.Snapshot) string {
	if s.Families["apiserver_request_sli_duration_seconds"] != nil {
		return "apiserver_request_sli_duration_seconds"
	}
	return "apiserver_request_duration_seconds"
}

// The calls no latency SLO judges: streaming verbs and proxied or streaming subresources.
var (
	excludedVerbList = []string{"WATCH", "WATCHLIST", "CONNECT"}
	excludedSubList  = []string{"proxy", "log", "exec", "attach", "portforward"}
	excludedVerbs    = setOf(excludedVerbList)
	excludedSub      = setOf(excludedSubList)
)

func setOf(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Analyze computes the result from two scrapes (pure).
func Analyze(before, after *prom.Snapshot) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	secs := after.At.Sub(before.At).Seconds()
	if secs <= 0 {
		secs = 1
	}
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	add("window", "seconds", secs, nil)

	// Latency against the SLO. The SLI histogram excludes webhook and priority-and-fairness waiting time;
	// older apiservers only have the plain duration histogram.
	latName := latencyFamily(after)
	groups := prom.GroupCounters(prom.Delta(before, after, latName), []string{"verb", "resource", "subresource", "scope"},
		func(l prom.Labels) bool { return !excludedVerbs[l["verb"]] && !excludedSub[l["subresource"]] })
	breaches := 0
	for _, g := range prom.Sorted(groups) {
		if g.Hist == nil || g.Hist.Count < MinRequests {
			continue // too few calls in the window for a percentile to mean anything
		}
		p99, ok := g.Hist.QuantileEstimate(0.99)
		if !ok {
			continue
		}
		l := map[string]string{"verb": g.Labels["verb"], "resource": g.Labels["resource"], "scope": g.Labels["scope"]}
		if s := g.Labels["subresource"]; s != "" {
			l["subresource"] = s
		}
		name, slo := MetricLatencyP99Single, SLOSingle
		if collection(g.Labels) {
			name, slo = MetricLatencyP99List, SLOList
		}
		res.Metrics = append(res.Metrics, p99.Metric(name, "seconds", l))
		if p99.Value > slo {
			breaches++
		}
	}

	// Rates and codes.
	total := prom.Delta(before, after, "apiserver_request_total")
	var all float64
	for _, s := range total {
		all += s.Value
	}
	add(MetricRequestsPerSecond, "requests_per_second", all/secs, nil)
	for code, metric := range map[string]string{"409": MetricConflictsPerMinute, "429": MetricThrottledPerMinute} {
		byRes := prom.GroupCounters(total, []string{"group", "resource", "verb"}, func(l prom.Labels) bool { return l["code"] == code })
		for _, g := range prom.Sorted(byRes) {
			if g.Value > 0 {
				add(metric, "per_minute", g.Value/secs*60, map[string]string{"group": g.Labels["group"], "resource": g.Labels["resource"], "verb": g.Labels["verb"]})
			}
		}
	}
	apf := prom.GroupCounters(prom.Delta(before, after, "apiserver_flowcontrol_rejected_requests_total"), []string{"priority_level", "flow_schema", "reason"}, nil)
	for _, g := range prom.Sorted(apf) {
		if g.Value > 0 {
			add(MetricAPFRejectedPerMinute, "per_minute", g.Value/secs*60, map[string]string{"priority_level": g.Labels["priority_level"],
				"flow_schema": g.Labels["flow_schema"], "reason": g.Labels["reason"]})
		}
	}

	// Time requests waited in API Priority and Fairness queues, per priority level.
	waits := prom.GroupCounters(prom.Delta(before, after, "apiserver_flowcontrol_request_wait_duration_seconds"), []string{"priority_level"}, nil)
	for _, g := range prom.Sorted(waits) {
		if g.Hist == nil || g.Hist.Count < MinRequests {
			continue
		}
		if p99, ok := g.Hist.QuantileEstimate(0.99); ok {
			res.Metrics = append(res.Metrics, p99.Metric(MetricAPFWaitP99, "seconds", map[string]string{"priority_level": g.Labels["priority_level"]}))
		}
	}

	// LIST response volume by resource.
	sizes := prom.GroupCounters(prom.Delta(before, after, "apiserver_response_sizes"), []string{"resource"}, func(l prom.Labels) bool { return l["verb"] == "LIST" })
	type vol struct {
		resource string
		bytes    float64
	}
	var vols []vol
	var listBytes float64
	for _, g := range sizes {
		if g.Hist != nil && g.Hist.Sum > 0 {
			vols = append(vols, vol{g.Labels["resource"], g.Hist.Sum})
			listBytes += g.Hist.Sum
		}
	}
	sort.Slice(vols, func(i, j int) bool { return vols[i].bytes > vols[j].bytes })
	add(MetricListBytesPerSecond, "bytes_per_second", listBytes/secs, nil)
	for i, v := range vols {
		if i == 5 {
			break
		}
		add(MetricListBytesPerSecond, "bytes_per_second", v.bytes/secs, map[string]string{"resource": v.resource})
		add(MetricListBytesShare, "ratio", v.bytes/listBytes, map[string]string{"resource": v.resource})
	}

	// The apiserver's view of etcd.
	etcd := prom.GroupCounters(prom.Delta(before, after, "etcd_request_duration_seconds"), []string{"operation", "type"}, nil)
	for _, g := range prom.Sorted(etcd) {
		if g.Hist == nil || g.Hist.Count < 10 {
			continue
		}
		if p99, ok := g.Hist.QuantileEstimate(0.99); ok {
			res.Metrics = append(res.Metrics, p99.Metric(MetricEtcdRequestP99, "seconds", map[string]string{"operation": g.Labels["operation"], "type": g.Labels["type"]}))
		}
	}
	webhooks(&res, before, after)
	notes := apiTier(&res, before, after, secs)
	if breaches > 0 {
		res.Status = result.StatusFail
		notes = append([]string{fmt.Sprintf("%d verb/resource groups over their latency SLO", breaches)}, notes...)
	}
	res.Reason = strings.Join(notes, "; ")
	return res
}
