// Package apislotest is api.responsiveness's analysis of scripted and recorded apiserver scrapes: the
// fixtures of its rules, and the API side of the combined rules' fixtures.
package apislotest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Server is what the apiserver's metrics say over a minute.
type Server struct {
	GetLatency, ListLatency float64
	Conflicts               map[string]int // per minute, by resource
	APFRejected             int
	ListBytes               map[string]float64 // per second, by resource
	// APFWait is how long workload-low requests waited in APF queues (0: none queued); APFQueued is how many
	// were queued at the middle scrape.
	APFWait, APFQueued float64
	// Webhooks are the admission webhooks the apiserver called over the minute.
	Webhooks []Webhook
}

// Webhook is one admission webhook's calls over the minute: Calls of Seconds each (the pods' creates), of which
// FailOpen failed and were let through.
type Webhook struct {
	Name, Type      string
	Calls, FailOpen int
	Seconds         float64
}

// ReplicaStart is process_start_time_seconds of the scripted apiserver (one replica answers every scrape).
const ReplicaStart = 1.7640e9

// Result is the measurement's observation over the minute: a scrape at its start, its middle and its end,
// analysed as a run does (apislo.Analyze over the ends, the steps' APF peaks).
func (a Server) Result(t *testing.T) result.Result {
	scale := []float64{0, 0.5, 1}
	i := 0
	fill := func(e *promtest.Expo, k float64) {
		e.Gauge("process_start_time_seconds", "", ReplicaStart)
		queued := 0.0
		if k == 0.5 {
			queued = a.APFQueued
		}
		e.Gauge("apiserver_flowcontrol_current_inqueue_requests", `priority_level="workload-low",flow_schema="service-accounts"`, queued)
		if a.APFWait > 0 {
			e.Hist("apiserver_flowcontrol_request_wait_duration_seconds", `priority_level="workload-low",flow_schema="service-accounts",execute="true"`, int(100*k), a.APFWait)
		}
		a.fill(e, k)
	}
	s := &measure.Scrapes{Scrape: func(context.Context) (*prom.Snapshot, error) {
		e := promtest.NewExpo()
		fill(e, scale[i])
		snap := e.Snapshot(t, ruletest.T0.Add(time.Duration(scale[i]*float64(time.Minute))))
		i++
		return snap, nil
	}, Step: apislo.Step, Analyze: func(_ context.Context, first, last *prom.Snapshot) (result.Result, error) {
		return apislo.Analyze(first, last), nil
	}}
	obs, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	obs.Sample(context.Background())
	res, err := obs.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	apislo.FromSteps(&res)
	return res
}

func (a Server) fill(e *promtest.Expo, k float64) {
	func(e *promtest.Expo, k float64) {
		n := int(200 * k)
		e.Hist("apiserver_request_sli_duration_seconds", `verb="GET",resource="pods",subresource="",scope="resource"`, n, a.GetLatency)
		e.Hist("apiserver_request_sli_duration_seconds", `verb="LIST",resource="pods",subresource="",scope="cluster"`, n, a.ListLatency)
		e.Counter("apiserver_request_total", `code="200",group="",resource="pods",verb="GET"`, float64(n))
		for res, c := range a.Conflicts {
			e.Counter("apiserver_request_total", fmt.Sprintf(`code="409",group="crd.projectcalico.org",resource=%q,verb="PUT"`, res), float64(c)*k)
		}
		e.Counter("apiserver_flowcontrol_rejected_requests_total", `priority_level="workload-low",flow_schema="service-accounts",reason="queue-full"`, float64(a.APFRejected)*k)
		for _, w := range a.Webhooks {
			l := fmt.Sprintf(`name=%q,type=%q,operation="CREATE",rejected="false"`, w.Name, w.Type)
			e.Hist("apiserver_admission_webhook_admission_duration_seconds", l, int(float64(w.Calls)*k), w.Seconds)
			e.Counter("apiserver_admission_webhook_fail_open_count", fmt.Sprintf(`name=%q,type=%q`, w.Name, w.Type), float64(w.FailOpen)*k)
		}
		for res, bps := range a.ListBytes {
			// 100 LISTs in the minute, each of the size that makes bps.
			e.Hist("apiserver_response_sizes", fmt.Sprintf(`verb="LIST",resource=%q`, res), int(100*k), bps*60/100)
		}
	}(e, k)
}

// Healthy is a healthy apiserver, with a webhook that answers in milliseconds.
var Healthy = Server{GetLatency: 0.02, ListLatency: 0.3, ListBytes: map[string]float64{"pods": 200e3, "events": 150e3},
	Webhooks: []Webhook{{Name: "policy.example.com", Type: "validating", Calls: 300, Seconds: 0.008}}}

// With is Healthy changed by f.
func With(f func(*Server)) Server {
	a := Healthy
	f(&a)
	return a
}

// Recorded is the apiserver's metrics as scraped on the lab during a conflict storm on IPAM blocks.
func Recorded(t *testing.T) result.Result {
	s := promtest.Recorded(t, "apiserver-metrics-conflict-storm-1.txt.gz", "apiserver-metrics-conflict-storm-2.txt.gz")
	return apislo.Analyze(s[0], s[1])
}

func api(a Server) func(t *testing.T) *result.Report { return ruletest.One(a.Result) }

// RuleFixtures are apislo.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-API-LATENCY":      {Fire: api(With(func(a *Server) { a.GetLatency = 3 })), Clear: api(With(func(a *Server) { a.ListLatency = 20 }))},   // a slow LIST is not a slow GET
		"KS-API-LIST-LATENCY": {Fire: api(With(func(a *Server) { a.ListLatency = 45 })), Clear: api(With(func(a *Server) { a.ListLatency = 20 }))}, // slow, but within LIST's 30 s
		"KS-API-409":          {Fire: api(With(func(a *Server) { a.Conflicts = map[string]int{"ipamblocks": 3000} })), Clear: api(With(func(a *Server) { a.Conflicts = map[string]int{"ipamblocks": 30} }))},
		"KS-API-THROTTLED":    {Fire: api(With(func(a *Server) { a.APFRejected = 40 })), Clear: api(Healthy)},
		// A mutating webhook whose every call waited out a 2 s timeout fires; one at 0.3 s (slow, but within half
		// the SLO) and one that timed out on fewer calls than a p99 needs do not.
		"KS-API-WEBHOOK": {Fire: api(With(func(a *Server) {
			a.Webhooks = append(a.Webhooks, Webhook{Name: "inject.example.com", Type: "admit", Calls: 120, FailOpen: 120, Seconds: 2.01})
		})), Clear: api(With(func(a *Server) {
			a.Webhooks = []Webhook{{Name: "policy.example.com", Type: "validating", Calls: 300, Seconds: 0.3}, {Name: "inject.example.com", Type: "admit", Calls: 6, FailOpen: 6, Seconds: 10}}
		}))},
		"KS-API-LIST-BYTES": {Fire: api(With(func(a *Server) { a.ListBytes = map[string]float64{"events": 80e6, "pods": 2e6} })), Clear: api(With(func(a *Server) { a.ListBytes = map[string]float64{"events": 0.6e6, "pods": 0.1e6} }))}, // dominant, but small
	}
}
