package measure

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubeslow/kubeslow/internal/source/prom"
)

// One scrape per source per step: reused while younger than MaxAge, fetched again after; a failed fetch is
// not kept; each caller's family index is its own.
func TestSharedScrapes(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	s := NewSharedScrapes(clk)
	fetches := 0
	fail := false
	fetch := func(context.Context) (*prom.Snapshot, error) {
		fetches++
		if fail {
			return nil, errors.New("down")
		}
		return &prom.Snapshot{At: clk.Now(), Families: map[string]*dto.MetricFamily{"a": {}, "b": {}}}, nil
	}
	ctx := context.Background()
	a, _ := s.Get(ctx, "apiserver", fetch)
	b, _ := s.Get(ctx, "apiserver", fetch)
	if fetches != 1 || !a.At.Equal(b.At) {
		t.Fatalf("%d fetches in one step, want 1", fetches)
	}
	delete(a.Families, "a")
	if len(b.Families) != 2 {
		t.Fatalf("a caller's Keep reached another's snapshot: %v", b.Families)
	}
	if _, err := s.Get(ctx, "etcd@n1", fetch); err != nil || fetches != 2 {
		t.Fatalf("another source shared the apiserver's scrape (%d fetches, %v)", fetches, err)
	}
	clk.Step(ObserveStep)
	fail = true
	if _, err := s.Get(ctx, "apiserver", fetch); err == nil {
		t.Fatal("a stale scrape was handed out after the fetch failed")
	}
	fail = false
	c, err := s.Get(ctx, "apiserver", fetch)
	if err != nil || fetches != 4 || !c.At.Equal(clk.Now()) {
		t.Fatalf("after a failed fetch: %d fetches, %v, at %s", fetches, err, c.At)
	}
	got, reused := s.Counts()
	if got["apiserver"] != 2 || reused["apiserver"] != 1 || got["etcd@n1"] != 1 {
		t.Fatalf("counts %v %v", got, reused)
	}
	var none *SharedScrapes
	if _, err := none.Get(ctx, "x", fetch); err != nil || fetches != 5 {
		t.Fatalf("a run with no shared scrapes fetches its own: %d, %v", fetches, err)
	}
}

// Two measurements reading the apiserver's /metrics in the same step cost the apiserver one request.
func TestAPIServerMetricsShared(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		_, _ = w.Write([]byte("# TYPE apiserver_request_total counter\napiserver_request_total{verb=\"GET\",code=\"200\"} 7\n"))
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	env := &Env{Client: c, Clock: clk, Scrapes: NewSharedScrapes(clk)}
	for i := range 2 {
		snap, err := env.APIServerMetrics(context.Background())
		if err != nil || len(snap.Series("apiserver_request_total")) != 1 {
			t.Fatalf("reader %d: %v %+v", i, err, snap)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests for two readers in one step, want 1", n)
	}
	clk.Step(ObserveStep)
	if _, err := env.APIServerMetrics(context.Background()); err != nil || hits.Load() != 2 {
		t.Fatalf("next step: %d requests, %v", hits.Load(), err)
	}
}
