// Package apislotest is api.responsiveness's analysis of scripted and recorded apiserver scrapes: the
// fixtures of its rules, and the API side of the combined rules' fixtures.
package apislotest

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/prom/promtest"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Server is what the apiserver's metrics say over a minute.
type Server struct {
	GetLatency, ListLatency float64
	Conflicts               map[string]int // per minute, by resource
	APFRejected             int
	ListBytes               map[string]float64 // per second, by resource
}

// Result is apislo.Analyze over the minute's two scrapes.
func (a Server) Result(t *testing.T) result.Result {
	before, after := promtest.Scrapes(t, time.Minute, func(e *promtest.Expo, k float64) {
		n := int(200 * k)
		e.Hist("apiserver_request_sli_duration_seconds", `verb="GET",resource="pods",subresource="",scope="resource"`, n, a.GetLatency)
		e.Hist("apiserver_request_sli_duration_seconds", `verb="LIST",resource="pods",subresource="",scope="cluster"`, n, a.ListLatency)
		e.Counter("apiserver_request_total", `code="200",group="",resource="pods",verb="GET"`, float64(n))
		for res, c := range a.Conflicts {
			e.Counter("apiserver_request_total", fmt.Sprintf(`code="409",group="crd.projectcalico.org",resource=%q,verb="PUT"`, res), float64(c)*k)
		}
		e.Counter("apiserver_flowcontrol_rejected_requests_total", `priority_level="workload-low",reason="queue-full"`, float64(a.APFRejected)*k)
		for res, bps := range a.ListBytes {
			// 100 LISTs in the minute, each of the size that makes bps.
			e.Hist("apiserver_response_sizes", fmt.Sprintf(`verb="LIST",resource=%q`, res), int(100*k), bps*60/100)
		}
	})
	return apislo.Analyze(before, after)
}

// Healthy is a healthy apiserver.
var Healthy = Server{GetLatency: 0.02, ListLatency: 0.3, ListBytes: map[string]float64{"pods": 200e3, "events": 150e3}}

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
		"KS-API-LIST-BYTES":   {Fire: api(With(func(a *Server) { a.ListBytes = map[string]float64{"events": 80e6, "pods": 2e6} })), Clear: api(With(func(a *Server) { a.ListBytes = map[string]float64{"events": 0.6e6, "pods": 0.1e6} }))}, // dominant, but small
	}
}
