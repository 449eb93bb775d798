package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

type fakeTime struct{ t time.Time }

func (f *fakeTime) now() time.Time                { return f.t }
func (f *fakeTime) add(d time.Duration) time.Time { f.t = f.t.Add(d); return f.t }

func TestBackoffAIMD(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0)}
	b := newBackoff(40, 80, ft.now)
	// A window of rejections halves the rate once per DecreaseHold, not once per 429.
	for i := 0; i < 10; i++ {
		b.Observe(http.StatusTooManyRequests, 10*time.Millisecond, SlowResponse)
	}
	if got := b.QPS(); got != 20 {
		t.Fatalf("after one window of 429s: %v/s, want 20", got)
	}
	ft.add(DecreaseHold)
	b.Observe(http.StatusTooManyRequests, 10*time.Millisecond, SlowResponse)
	if got := b.QPS(); got != 10 {
		t.Fatalf("after a second window: %v/s, want 10", got)
	}
	// A slow response cuts by a fifth; a slow watch does not.
	ft.add(DecreaseHold)
	b.Observe(http.StatusOK, 30*time.Second, 0)
	if got := b.QPS(); got != 11 { // a second clean since the cut: +1/s
		t.Fatalf("a long watch changed the rate to %v, want 11", got)
	}
	b.Observe(http.StatusOK, 2*time.Second, SlowResponse)
	if got := b.QPS(); got < 8.79 || got > 8.81 {
		t.Fatalf("after a slow response: %v/s, want 8.8", got)
	}
	// Additive increase: +1/s per second of clean responses, from DecreaseHold after the last cut.
	for i := 0; i < 5; i++ {
		ft.add(time.Second)
		b.Observe(http.StatusOK, 5*time.Millisecond, SlowResponse)
	}
	if got := b.QPS(); got < 13.79 || got > 13.81 {
		t.Fatalf("after 5 s clean: %v/s, want 13.8", got)
	}
	for i := 0; i < 100; i++ {
		ft.add(time.Second)
		b.Observe(http.StatusCreated, 5*time.Millisecond, SlowResponse)
	}
	if got := b.QPS(); got != 40 {
		t.Fatalf("never above the configured rate: %v", got)
	}
	// The floor.
	for i := 0; i < 20; i++ {
		ft.add(DecreaseHold)
		b.Observe(http.StatusTooManyRequests, 0, SlowResponse)
	}
	if got := b.QPS(); got != MinRate {
		t.Fatalf("floor: %v", got)
	}
	b.Observe(0, 0, SlowResponse) // connection refused: counted, no cut
	s := b.Stats()
	if s.Configured != 40 || s.Min != MinRate || s.Throttled != 31 || s.Slow != 1 || s.TransportErrors != 1 {
		t.Fatalf("stats %+v", s)
	}
	if !strings.Contains(s.Summary(), "throttled by the apiserver (429, APF) 31 times") || !strings.Contains(s.Summary(), "fell from 40/s to 1/s") {
		t.Fatalf("summary %q", s.Summary())
	}
	// A LIST is slow by the LIST SLO (30 s), not the single-call one.
	l := newBackoff(40, 80, ft.now)
	l.Observe(http.StatusOK, 20*time.Second, SlowList)
	if l.QPS() != 40 || l.Stats().Slow != 0 {
		t.Fatalf("a 20 s LIST cut the rate: %v", l.QPS())
	}
	l.Observe(http.StatusOK, 31*time.Second, SlowList)
	if l.QPS() != 32 {
		t.Fatalf("a 31 s LIST: %v", l.QPS())
	}
	if (BackoffStats{Configured: 5, Min: 5, Final: 5}).Summary() != "" {
		t.Fatal("an unthrottled run has no summary")
	}
}

// TestBackoffClientGo drives client-go against a server that rejects like APF (429, Retry-After: 1) for its
// first requests: client-go retries after Retry-After, every retry waits on the limiter, and the rate falls
// then recovers.
func TestBackoffClientGo(t *testing.T) {
	var n, rejected atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 {
			rejected.Add(1)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	c, err := FromConfig(&rest.Config{Host: srv.URL}, "test", 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Fatalf("client-go did not retry through the 429s: %v", err)
	}
	s := c.Backoff.Stats()
	if s.Throttled != 3 || rejected.Load() != 3 {
		t.Fatalf("throttled %d (server rejected %d)", s.Throttled, rejected.Load())
	}
	// Three 429s a second apart (Retry-After: 1): three cuts, 50 -> 6.25.
	if s.Min > 50*DecreaseOn429*DecreaseOn429+0.01 || s.Decreases < 2 {
		t.Fatalf("rate did not fall: %+v", s)
	}
	var got200 bool
	for _, cc := range s.Codes {
		got200 = got200 || (cc.Code == 200 && cc.N == 1)
	}
	if !got200 {
		t.Fatalf("codes %+v", s.Codes)
	}
	if got := c.Requests.Counts(); len(got) != 1 || got[0].N != 4 {
		t.Fatalf("request counter saw %+v, want 4 gets (1 + 3 retries)", got)
	}
}
