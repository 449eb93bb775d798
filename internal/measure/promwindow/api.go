package promwindow

import (
	"context"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// API is api.responsiveness from Prometheus: the apiserver job's request latency, codes, APF and LIST volume
// over the window, analysed by apislo.Analyze.
type API struct{ src *Source }

// NewAPI returns the measurement.
func NewAPI(s *Source) *API { return &API{src: s} }

// Name implements measure.Measurement: the live measurement's name, so the same rules read it.
func (*API) Name() string { return apislo.Name }

// Description implements measure.Measurement.
func (a *API) Description() string {
	return fmt.Sprintf("API latency p99 per verb/resource vs SLO, 409/429 rates, APF, LIST bytes, from Prometheus over %s", a.src.Window)
}

const notStreaming = `verb!~"WATCH|WATCHLIST|CONNECT"`

// apfGauges are API Priority and Fairness series every apiserver with APF exposes (newer and older names).
const apfGauges = `{__name__=~"apiserver_flowcontrol_nominal_limit_seats|apiserver_flowcontrol_request_concurrency_limit"}`

// Run implements measure.Measurement.
func (a *API) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := a.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("apiserver")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("apiserver"))
	}
	fams := map[string]*dto.MetricFamily{}
	var absent []result.Absence
	latency := "apiserver_request_sli_duration_seconds"
	// verb × resource × subresource × scope × le is the largest answer: a busy apiserver's passes 2,000 series,
	// and is then read verb by verb (and a verb resource by resource).
	split := []string{"verb", "resource"}
	if err := s.histogramSplit(ctx, fams, latency, job, []string{"verb", "resource", "subresource", "scope"}, split, notStreaming); err != nil {
		return result.Result{}, err
	}
	if fams[latency] == nil {
		latency = "apiserver_request_duration_seconds" // apiservers before the SLI histogram
		if err := s.histogramSplit(ctx, fams, latency, job, []string{"verb", "resource", "subresource", "scope"}, split, notStreaming); err != nil {
			return result.Result{}, err
		}
	}
	steps := []func() error{
		func() error {
			return s.counter(ctx, fams, "apiserver_request_total", job, []string{"code", "group", "resource", "verb"})
		},
		func() error {
			return s.counter(ctx, fams, "apiserver_flowcontrol_rejected_requests_total", job, []string{"priority_level", "flow_schema", "reason"})
		},
		func() error {
			return s.histogram(ctx, fams, "apiserver_flowcontrol_request_wait_duration_seconds", job, []string{"priority_level"}, false)
		},
		func() error {
			return s.histogram(ctx, fams, "apiserver_response_sizes", job, []string{"resource", "verb"}, true, `verb="LIST"`)
		},
		func() error {
			return s.histogram(ctx, fams, "etcd_request_duration_seconds", job, []string{"operation", "type"}, false)
		},
		// The admission webhooks' calls (KS-API-WEBHOOK): series exist only for webhooks the apiserver called.
		func() error {
			return s.histogram(ctx, fams, "apiserver_admission_webhook_admission_duration_seconds", job, []string{"name", "type"}, false)
		},
		func() error { // asked only where a webhook was called
			if fams["apiserver_admission_webhook_admission_duration_seconds"] == nil {
				return nil
			}
			return s.counter(ctx, fams, "apiserver_admission_webhook_fail_open_count", job, []string{"name", "type"})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return result.Result{}, err
		}
	}
	if fams[latency] == nil {
		absent = append(absent, result.Absence{Metric: apislo.MetricLatencyP99Single, Series: latency + "_bucket", Reason: "no request latency histogram in the window"},
			result.Absence{Metric: apislo.MetricLatencyP99List, Series: latency + "_bucket", Reason: "no request latency histogram in the window"})
	}
	// Rejection series exist only once a rejection happened: APF is "not scraped" only when its always-present
	// gauges are missing too.
	if fams["apiserver_flowcontrol_rejected_requests_total"] == nil && s.hasNone(ctx, apfGauges, job) {
		absent = append(absent, result.Absence{Metric: apislo.MetricAPFRejectedPerMinute, Series: "apiserver_flowcontrol_nominal_limit_seats",
			Reason: "API Priority and Fairness metrics are not scraped from the apiserver job"})
	}
	res := apislo.Analyze(s.snapshots(fams))
	res.Start, res.End, res.Absent = s.Window.From, s.Window.To, absent
	if t := s.Target("apiserver"); t.Silent {
		res.Reason = strings.TrimPrefix(res.Reason+"; kube-apiserver (job "+jobValue(job)+") "+t.Silence()+" in the window: "+
			"its latency, codes and APF over the window are not known (controlplane.usage counts the scrapes it missed)", "; ")
	}
	a.src.label(&res, "job "+jobValue(job))
	if err := a.profiles(ctx, &res, latency, job); err != nil {
		return res, err
	}
	return res, nil
}

// profiles adds the window's time profiles: p99 of single-object calls, and the 409 and APF rejection rates.
func (a *API) profiles(ctx context.Context, res *result.Result, latency, job string) error {
	s := a.src
	for _, p := range []profile{
		{Result: apislo.Name, Metric: apislo.MetricLatencyP99Single, Unit: "seconds", Rule: "KS-API-LATENCY", What: "API p99 (single-object and mutating calls)",
			Query: fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[%s])))", selector(latency+"_bucket", job, apislo.SingleObjectMatchers), s.rate())},
		{Result: apislo.Name, Metric: apislo.MetricConflictsPerMinute, Unit: "per_minute", Rule: "KS-API-409", What: "409 Conflicts",
			Query: fmt.Sprintf("60 * sum by (group, resource, verb) (rate(%s[%s]))", selector("apiserver_request_total", job, `code="409"`), s.rate()), Top: 3},
		{Result: apislo.Name, Metric: apislo.MetricAPFRejectedPerMinute, Unit: "per_minute", Rule: "KS-API-THROTTLED", What: "APF rejections",
			Query: fmt.Sprintf("60 * sum by (priority_level, flow_schema, reason) (rate(%s[%s]))", selector("apiserver_flowcontrol_rejected_requests_total", job), s.rate()), Top: 3},
	} {
		if err := s.addProfile(ctx, res, p); err != nil {
			return err
		}
	}
	return nil
}

func jobValue(sel string) string {
	if len(sel) > 5 {
		return sel[4:]
	}
	return sel
}

// hasNone reports whether the job exposes no series of family at all in the window (as opposed to series that
// did not increase).
func (s *Source) hasNone(ctx context.Context, family, job string) bool {
	v, err := s.Client.Instant(ctx, fmt.Sprintf("count(last_over_time(%s[%s]))", withMatcher(family, job), s.window()), s.Window.To)
	return err == nil && len(v) == 0
}

// label marks every metric of res with the window and the job it rests on, so each finding says them; series
// names the series a metric rests on (by metric name), where its name does not say it.
func (s *Source) label(res *result.Result, job string, series ...map[string]string) {
	for i := range res.Metrics {
		m := &res.Metrics[i]
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		from := ""
		for _, se := range series {
			if v := se[m.Name]; v != "" {
				from = v + " of "
			}
		}
		m.Labels["prometheus"] = fmt.Sprintf("%s%s %s", from, job, s.Window)
	}
}
