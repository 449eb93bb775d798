package apislo

import (
	"compress/gzip"
	"context"
	"fmt"
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
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open("../../source/prom/testdata/" + name)
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

// TestAPITier: etcd's database size is read under each of its names by version, stored objects and the
// objects LISTs read from storage by resource, and two replicas answering the window's two ends are said.
func TestAPITier(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	parse := func(at time.Time, text string) *prom.Snapshot {
		t.Helper()
		s, err := prom.Parse(strings.NewReader(text), at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, fam := range []string{"etcd_db_total_size_in_bytes", "apiserver_storage_db_total_size_in_bytes", "apiserver_storage_size_bytes"} {
		text := fmt.Sprintf("# TYPE %s gauge\n%s{endpoint=\"a\"} 1e6\n%s{endpoint=\"b\"} 3e6\n", fam, fam, fam)
		res := Analyze(parse(t0, text), parse(t0.Add(time.Minute), text))
		if m := res.Metric(MetricEtcdDBBytes, map[string]string{"series": fam}); m == nil || m.Value != 3e6 {
			t.Errorf("%s: %+v, want the largest member's 3e6", fam, m)
		}
	}
	before := parse(t0, `# TYPE apiserver_storage_list_evaluated_objects_total counter
apiserver_storage_list_evaluated_objects_total{resource="pods"} 1000
apiserver_storage_list_evaluated_objects_total{resource="events"} 0
# TYPE apiserver_storage_list_returned_objects_total counter
apiserver_storage_list_returned_objects_total{resource="pods"} 10
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="pods"} 500
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e9
`)
	after := parse(t0.Add(time.Minute), `# TYPE apiserver_storage_list_evaluated_objects_total counter
apiserver_storage_list_evaluated_objects_total{resource="pods"} 61000
apiserver_storage_list_evaluated_objects_total{resource="events"} 600
# TYPE apiserver_storage_list_returned_objects_total counter
apiserver_storage_list_returned_objects_total{resource="pods"} 70
apiserver_storage_list_returned_objects_total{resource="events"} 600
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="pods"} 520
apiserver_storage_objects{resource="events"} 3000
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7000001e9
`)
	res := Analyze(before, after)
	pods := map[string]string{"resource": "pods"}
	for name, want := range map[string]float64{MetricListEvaluatedPerSecond: 1000, MetricListReturnedPerSecond: 1, MetricListEvaluatedPerReturned: 1000, MetricObjects: 520} {
		if m := res.Metric(name, pods); m == nil || m.Value != want {
			t.Errorf("%s{pods} = %+v, want %g", name, m, want)
		}
	}
	if m := res.Metric(MetricListEvaluatedPerReturned, map[string]string{"resource": "events"}); m == nil || m.Value != 1 {
		t.Errorf("events evaluated per returned %+v, want 1", m)
	}
	if res.Metrics[len(res.Metrics)-1].Name != MetricReplicaStart || !strings.Contains(res.Reason, "two apiserver processes") {
		t.Errorf("two replicas not said: %q", res.Reason)
	}
	same := Analyze(before, before)
	if strings.Contains(same.Reason, "two apiserver processes") {
		t.Errorf("one replica said to be two: %q", same.Reason)
	}
}

// TestAPFPeaks: the most requests queued and seats executing at a step, per priority level, from the steps.
func TestAPFPeaks(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	snap := func(i int, inq float64) *prom.Snapshot {
		s, err := prom.Parse(strings.NewReader(fmt.Sprintf(`# TYPE apiserver_flowcontrol_current_inqueue_requests gauge
apiserver_flowcontrol_current_inqueue_requests{priority_level="workload-low",flow_schema="a"} %g
apiserver_flowcontrol_current_inqueue_requests{priority_level="global-default",flow_schema="b"} 0
# TYPE apiserver_flowcontrol_current_executing_seats gauge
apiserver_flowcontrol_current_executing_seats{priority_level="workload-low"} 12
`, inq)), t0.Add(time.Duration(i)*2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	i := 0
	queued := []float64{0, 3, 17, 5, 0}
	sc := &measure.Scrapes{Scrape: func(context.Context) (*prom.Snapshot, error) { s := snap(i, queued[i]); i++; return s, nil },
		Step: Step, Analyze: func(_ context.Context, a, b *prom.Snapshot) (result.Result, error) { return Analyze(a, b), nil }}
	obs, err := sc.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range len(queued) - 2 {
		obs.Sample(context.Background())
	}
	res, err := (&observation{Scrapes: obs}).Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metric(MetricAPFInqueuePeak, map[string]string{"priority_level": "workload-low"}); m == nil || m.Value != 17 {
		t.Errorf("queue peak %+v, want 17", m)
	}
	if m := res.Metric(MetricAPFInqueuePeak, map[string]string{"priority_level": "global-default"}); m != nil {
		t.Errorf("a level that queued nothing has a peak: %+v", m)
	}
	if m := res.Metric(MetricAPFExecutingSeatsPeak, map[string]string{"priority_level": "workload-low"}); m == nil || m.Value != 12 {
		t.Errorf("seats peak %+v, want 12", m)
	}
}

// TestCollectionDeleteNotSingleObject: a DELETE of a namespace's pods (scope namespace: the namespace controller's,
// when a namespace goes) is a call on a collection, judged with the LISTs (30 s), not against the single-object
// 1 s (the SLO's mutating calls are "for single objects"; clusterloader2 gives every non-resource scope 30 s). A
// DELETE of one pod (scope resource) is still a single-object call.
func TestCollectionDeleteNotSingleObject(t *testing.T) {
	scrape := func(n int) string {
		var b strings.Builder
		b.WriteString("# TYPE apiserver_request_sli_duration_seconds histogram\n")
		for _, c := range []struct{ scope string }{{"namespace"}, {"resource"}} {
			// n calls, all between 1 and 1.25 s: p99 ~1.2 s.
			for _, le := range []string{"0.5", "1", "1.25", "+Inf"} {
				v := n
				if le == "0.5" || le == "1" {
					v = 0
				}
				fmt.Fprintf(&b, "apiserver_request_sli_duration_seconds_bucket{component=\"apiserver\",group=\"\",resource=\"pods\",scope=%q,subresource=\"\",verb=\"DELETE\",version=\"v1\",le=%q} %d\n", c.scope, le, v)
			}
			fmt.Fprintf(&b, "apiserver_request_sli_duration_seconds_sum{component=\"apiserver\",group=\"\",resource=\"pods\",scope=%q,subresource=\"\",verb=\"DELETE\",version=\"v1\"} %d\n", c.scope, n)
			fmt.Fprintf(&b, "apiserver_request_sli_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"pods\",scope=%q,subresource=\"\",verb=\"DELETE\",version=\"v1\"} %d\n", c.scope, n)
		}
		return b.String()
	}
	t0 := time.Now()
	a, err := prom.Parse(strings.NewReader(scrape(0)), t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := prom.Parse(strings.NewReader(scrape(20)), t0.Add(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := Analyze(a, b)
	coll := res.Metric(MetricLatencyP99List, map[string]string{"verb": "DELETE", "resource": "pods", "scope": "namespace"})
	if coll == nil || coll.Value <= SLOSingle || coll.Value > 1.25 {
		t.Fatalf("DELETE pods (namespace): %+v, want its p99 (1-1.25 s) as a collection call's; metrics %+v", coll, res.Metrics)
	}
	if m := res.Metric(MetricLatencyP99Single, map[string]string{"verb": "DELETE", "resource": "pods", "scope": "namespace"}); m != nil {
		t.Errorf("DELETE pods (namespace) judged as a single-object call: %+v", m)
	}
	if m := res.Metric(MetricLatencyP99Single, map[string]string{"verb": "DELETE", "resource": "pods", "scope": "resource"}); m == nil || m.Value <= SLOSingle {
		t.Errorf("DELETE pods (resource): %+v, want a single-object p99 over %g s", m, SLOSingle)
	}
}

// TestMatchers: the PromQL matchers are Analyze's classification (the calls it excludes, the collection scopes),
// as docs/alerts.md shows them.
func TestMatchers(t *testing.T) {
	if want := `verb!~"WATCH|WATCHLIST|CONNECT|LIST",scope!~"namespace|cluster",subresource!~"proxy|log|exec|attach|portforward"`; SingleObjectMatchers != want {
		t.Errorf("SingleObjectMatchers = %s, want %s", SingleObjectMatchers, want)
	}
	if want := `verb!~"WATCH|WATCHLIST|CONNECT",scope=~"namespace|cluster",subresource!~"proxy|log|exec|attach|portforward"`; CollectionMatchers != want {
		t.Errorf("CollectionMatchers = %s, want %s", CollectionMatchers, want)
	}
}
