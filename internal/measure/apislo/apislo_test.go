package apislo

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open("../../prom/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnalyzeConflictStorm uses two scrapes of the real lab apiserver taken ~10 s apart during the
// conflict-storm scenario.
func TestAnalyzeConflictStorm(t *testing.T) {
	t0 := time.Now()
	a, err := prom.Parse(strings.NewReader(string(fixture(t, "apiserver-metrics-conflict-storm-1.txt.gz"))), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := prom.Parse(strings.NewReader(string(fixture(t, "apiserver-metrics-conflict-storm-2.txt.gz"))), t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := Analyze(a, b)
	c := res.Metric("conflicts_per_minute", map[string]string{"resource": "ipamblocks", "verb": "PUT"})
	if c == nil || c.Value < 600 {
		t.Fatalf("409 rate on ipamblocks = %+v; the storm ran at ~50/s", c)
	}
	put := res.Metric("latency_p99_single", map[string]string{"verb": "PUT", "resource": "ipamblocks"})
	if put == nil || put.Value <= 0 {
		t.Fatalf("no PUT ipamblocks p99: %+v", res.Metrics)
	}
	for _, m := range res.Metrics {
		if m.Labels["verb"] == "WATCH" || m.Labels["subresource"] == "exec" {
			t.Fatalf("excluded call reported: %+v", m)
		}
	}
	// Every p99 is an estimate within one bucket of the apiserver's histogram, and says which.
	edges := map[float64]bool{0: true}
	for _, b := range b.Series(latencyFamily(b))[0].Hist.Bounds {
		edges[b] = true
	}
	estimates := 0
	for _, m := range res.Metrics {
		if m.Name != MetricLatencyP99Single && m.Name != MetricLatencyP99List {
			continue
		}
		estimates++
		if m.Bounds == nil || m.Value < m.Bounds.Lower || m.Value > m.Bounds.Upper || !edges[m.Bounds.Lower] || !edges[m.Bounds.Upper] {
			t.Fatalf("%s %v: bounds %+v are not a bucket of %v around it", m.Name, m.Value, m.Bounds, edges)
		}
	}
	if estimates == 0 || put.Bounds == nil || put.Bounds.Upper <= put.Bounds.Lower {
		t.Fatalf("PUT ipamblocks p99 %+v: no bucket bounds", put)
	}
	if w := res.Metric("window", nil); w == nil || w.Value != 10 {
		t.Fatalf("window %+v", w)
	}
}

// TestRunSkipsWithoutPermission serves a 403 for /metrics: the measurement must be skipped with the reason.
func TestRunSkipsWithoutPermission(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden: User \"viewer\" cannot get path \"/metrics\""}`))
	}))
	defer srv.Close()
	c := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	res := measure.RunOne(context.Background(), &measure.Env{Client: c, Clock: clock.RealClock{}}, New(time.Millisecond))
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "permission") {
		t.Fatalf("status %s reason %q", res.Status, res.Reason)
	}
}

// TestRunGarbledMetrics: an unexpected format is an error with a clear reason, not a crash or a pass.
func TestRunGarbledMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>proxy error</html>"))
	}))
	defer srv.Close()
	c := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	res := measure.RunOne(context.Background(), &measure.Env{Client: c, Clock: clock.RealClock{}}, New(time.Millisecond))
	if res.Status != result.StatusError || !strings.Contains(res.Reason, "parsing metrics") {
		t.Fatalf("status %s reason %q", res.Status, res.Reason)
	}
}
