package runner

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubeslow/kubeslow/internal/kube"
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
	r := overhead(start, &reqs)
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
