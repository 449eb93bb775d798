package prom

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFetch(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "etcd-metrics-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			w.Write(body)
		case "/garbage":
			w.Write([]byte("<html>not metrics</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	ctx := context.Background()

	s, err := Fetch(ctx, srv.Client(), srv.URL+"/metrics", now)
	if err != nil {
		t.Fatal(err)
	}
	if !s.At.Equal(at) || len(s.Series("etcd_disk_wal_fsync_duration_seconds")) == 0 {
		t.Fatalf("snapshot at %v with %d families", s.At, len(s.Families))
	}

	_, err = Fetch(ctx, srv.Client(), srv.URL+"/nope", now)
	var u *Unreachable
	if err == nil || errors.As(err, &u) || err.Error() != "GET "+srv.URL+"/nope: 404 Not Found" {
		t.Fatalf("404: %v", err)
	}
	if _, err = Fetch(ctx, srv.Client(), srv.URL+"/garbage", now); err == nil || errors.As(err, &u) {
		t.Fatalf("not the text format: %v", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/metrics"
	dead.Close()
	_, err = Fetch(ctx, &http.Client{Timeout: time.Second}, url, now)
	if !errors.As(err, &u) || u.URL != url || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("closed port: %v", err)
	}
}
