package etcdscrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode/cpnodetest"
)

func etcdScrapes(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range []string{"etcd-metrics-1.txt", "etcd-metrics-2.txt"} {
		b, err := os.ReadFile("../../source/prom/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func sharedEnv() *measure.Env {
	return &measure.Env{Clock: clock.RealClock{}, Scrapes: measure.NewSharedScrapes(clock.RealClock{})}
}

// Over HTTP: the two measurements' readers of one endpoint share a step's scrape (one GET), and an endpoint that
// does not answer is a Skip, one that answers wrong an error.
func TestAt(t *testing.T) {
	body := etcdScrapes(t)[0]
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		gets.Add(1)
		w.Write(body)
	}))
	defer srv.Close()
	env, ctx := sharedEnv(), context.Background()
	for _, f := range []Fetch{At(env, srv.Client(), srv.URL), At(env, srv.Client(), srv.URL)} {
		s, err := f(ctx)
		if err != nil || len(s.Series("etcd_disk_wal_fsync_duration_seconds")) == 0 {
			t.Fatalf("snapshot %v, err %v", s, err)
		}
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("%d GETs of /metrics for two readers in one step, want 1", n)
	}
	if fetched, _ := env.Scrapes.Counts(); fetched[measure.ScrapeEtcdAt(srv.URL)] != 1 {
		t.Errorf("shared scrapes: %v", fetched)
	}

	_, err := At(env, srv.Client(), srv.URL+"/wrong")(ctx)
	var skip *measure.SkipError
	if err == nil || errors.As(err, &skip) || err.Error() != "GET "+srv.URL+"/wrong/metrics: 404 Not Found" {
		t.Errorf("a 404: %v", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	ep := dead.URL
	dead.Close()
	_, err = At(env, &http.Client{Timeout: time.Second}, ep)(ctx)
	if !errors.As(err, &skip) || !strings.HasPrefix(skip.Reason, "etcd metrics endpoint "+ep+" unreachable: Get \""+ep+"/metrics\"") {
		t.Errorf("a closed port: %v", err)
	}
}

// Through the node agent: Find names the first node whose agent serves etcd, On reads it there (shared by key).
func TestFindAndOn(t *testing.T) {
	stub := &cpnodetest.Stub{On: []string{"cp-a", "cp-b"}, Metrics: map[string][][]byte{"cp-b/etcd": etcdScrapes(t)}}
	ctx := context.Background()
	node, sc, err := Find(ctx, stub)
	if err != nil || node != "cp-b" || len(sc.Body) == 0 {
		t.Fatalf("Find: node %q, %d bytes, err %v", node, len(sc.Body), err)
	}
	env := sharedEnv()
	s, err := On(env, stub, node)(ctx)
	if err != nil || len(s.Series("etcd_mvcc_db_total_size_in_bytes")) == 0 {
		t.Fatalf("On: %v, err %v", s, err)
	}
	if fetched, _ := env.Scrapes.Counts(); fetched[measure.ScrapeEtcdOn("cp-b")] != 1 {
		t.Errorf("shared scrapes: %v", fetched)
	}
	if _, err := On(env, stub, "cp-a")(ctx); err == nil {
		t.Error("On a node whose agent serves no etcd: no error")
	}

	_, _, err = Find(ctx, &cpnodetest.Stub{On: []string{"cp-a"}})
	if u, ok := cpnode.IsUnreachable(err); !ok || u.Reason != cpnode.NotServed {
		t.Errorf("no node serves etcd: %v", err)
	}
	_, _, err = Find(ctx, &cpnodetest.Stub{})
	if u, ok := cpnode.IsUnreachable(err); !ok || u.Reason != cpnode.NoComponents {
		t.Errorf("no agent: %v", err)
	}
}
