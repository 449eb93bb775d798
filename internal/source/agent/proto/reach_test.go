package agentproto

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitServed: a proxy answering 503 (and then a 404 page with a body) is waited through until the empty
// 404 of the backend; one that never routes is an error naming its last answer.
func TestWaitServed(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1, 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			http.NotFound(w, r) // a proxy's own 404 page: a body
		default:
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	if err := WaitServed(context.Background(), srv.URL+"/x", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 4 {
		t.Fatalf("%d requests, want 4 (two 503s, a 404 page, the empty 404)", got)
	}
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer never.Close()
	err := WaitServed(context.Background(), never.URL, 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("err %v, want one naming the last answer (502)", err)
	}
}
