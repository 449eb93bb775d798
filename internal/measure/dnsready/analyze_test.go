package dnsready

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestFirstSuccess(t *testing.T) {
	b := Backoff{Base: time.Second, Factor: 2, Cap: 8 * time.Second}
	// Attempts at 0, 1, 3, 7, 15, 23 (capped at 8 s), 31 ...
	for _, c := range []struct{ at, want time.Duration }{
		{0, 0}, {-time.Second, 0}, {500 * time.Millisecond, time.Second}, {3 * time.Second, 3 * time.Second},
		{3100 * time.Millisecond, 7 * time.Second}, {20 * time.Second, 23 * time.Second}, {24 * time.Second, 31 * time.Second},
	} {
		if got := b.FirstSuccess(c.at); got != c.want {
			t.Errorf("FirstSuccess(%s) = %s, want %s", c.at, got, c.want)
		}
	}
}

// TestAnalyze: case A's arithmetic. The client asked at 0; peer-0 was Ready at 3 s, its endpoint published at
// 3.2 s, and it resolved at 20.1 s (a 20 s negative cache): a 17.1 s lag, and the doubling client's next try
// after 20.1 s is at 31 s — 28 s after Ready, 10.9 s after the name resolved.
func TestAnalyze(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	lags, unresolved := Analyze([]Target{
		{Pod: "peer-1", Asked: at(0), Ready: at(2), Resolved: at(2.5)},
		{Pod: "peer-0", Asked: at(0), Ready: at(3), Endpoint: at(3.2), Resolved: at(20.1)},
		{Pod: "peer-2", Asked: at(0), Ready: at(2)},    // never resolved
		{Pod: "peer-3", Asked: at(0), Resolved: at(4)}, // never seen Ready
	}, DefaultBackoff)
	if unresolved != 2 || len(lags) != 2 || lags[0].Pod != "peer-0" {
		t.Fatalf("lags %+v unresolved %d", lags, unresolved)
	}
	l := lags[0]
	near := func(d time.Duration, s float64) bool {
		return (d - time.Duration(s*float64(time.Second))).Abs() < time.Millisecond
	}
	if !near(l.DNS, 17.1) || !near(l.Endpoint, 0.2) || !near(l.Serving, 16.9) || !near(l.Client, 28) || !near(l.Extra, 10.9) || !l.HasEndpoint {
		t.Errorf("peer-0 %+v", l)
	}
	if p := lags[1]; !near(p.DNS, 0.5) || !near(p.Client, 1) || p.HasEndpoint {
		t.Errorf("peer-1 %+v (attempt at 3 s: 1 s after Ready; no endpoint seen)", p)
	}
}

// TestReportSplit: a peer whose endpoint was never seen counts in the DNS lag but not in the endpoint/serving
// split (a zero there would read as "instant").
func TestReportSplit(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	m := New(Options{Wait: time.Minute, Backoff: DefaultBackoff})
	var res result.Result
	m.Report(&res, []Target{
		{Pod: "peer-0", Asked: at(0), Ready: at(3), Endpoint: at(3.2), Resolved: at(20.1)},
		{Pod: "peer-1", Asked: at(0), Ready: at(2), Resolved: at(2.5)},
	}, at(0.1), at(0), measure.Bound{D: time.Minute})
	get := func(n string) float64 {
		if mm := res.Metric(n, nil); mm != nil {
			return mm.Value
		}
		return -1
	}
	if ep := get("endpoint_lag_p50"); ep < 0.19 || ep > 0.21 {
		t.Errorf("endpoint_lag_p50 %v, want 0.2 (peer-1 has no endpoint observation)", ep)
	}
	if dl := get("dns_lag_p50"); dl < 0.49 || dl > 0.51 {
		t.Errorf("dns_lag_p50 %v, want 0.5 (both peers)", dl)
	}
	if _, ok := res.Records[1].Values["endpoint_lag_seconds"]; ok {
		t.Errorf("peer-1 record has an endpoint lag: %+v", res.Records[1])
	}
}
