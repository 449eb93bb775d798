package runner

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var sink []byte

// TestOverhead: memory touched after the mark shows in the peak; requests through the counter are counted.
func TestOverhead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var reqs kube.RequestCounter
	hc := &http.Client{Transport: reqs.Wrap(http.DefaultTransport)}
	start := markNow()
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = byte(i)
	}
	for range 3 {
		resp, err := hc.Get(srv.URL + "/api/v1/nodes")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	r := overhead(start, &reqs, nil)
	get := func(name string) float64 {
		for _, m := range r.Metrics {
			if m.Name == name {
				return m.Value
			}
		}
		t.Fatalf("no %s in %+v", name, r.Metrics)
		return 0
	}
	if peak := get("peak_rss"); peak < 64<<20 {
		t.Errorf("peak_rss %.0f below the 64 MiB touched", peak)
	}
	if cpu := get("cpu"); cpu <= 0 {
		t.Errorf("cpu %v", cpu)
	}
	if n := get("api_requests_total"); n != 3 {
		t.Errorf("api_requests_total %v, want 3", n)
	}
	if r.Status != result.StatusPass {
		t.Errorf("status %s %s", r.Status, r.Reason)
	}
	sink = nil
}

// TestOverheadThrottled: a run the apiserver throttled says so in kubeslow's own result (Warn, with the
// count and the rate's fall), with the responses by code; no finding is made of it.
func TestOverheadThrottled(t *testing.T) {
	bo := kube.NewBackoff(40, 80)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: bo.Wrap(http.DefaultTransport)}
	for range 2 {
		resp, err := hc.Get(srv.URL + "/api/v1/pods")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	r := overhead(markNow(), &kube.RequestCounter{}, bo)
	if r.Status != result.StatusWarn || !strings.Contains(r.Reason, "throttled by the apiserver (429, APF) 2 times") ||
		!strings.Contains(r.Reason, "fell from 40/s to 20/s") {
		t.Fatalf("status %s %q", r.Status, r.Reason)
	}
	var n429 float64
	for _, m := range r.Metrics {
		if m.Name == "api_responses" && m.Labels["code"] == "429" {
			n429 = m.Value
		}
	}
	if n429 != 2 || len(r.Series) != 1 || r.Series[0].Name != "client_rate_limit" {
		t.Fatalf("429s %v, series %+v", n429, r.Series)
	}
}
