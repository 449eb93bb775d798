package promql

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)

func TestNewWindow(t *testing.T) {
	w, err := NewWindow(time.Time{}, time.Time{}, time.Hour, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if w.Step != 30*time.Second || w.Rate != time.Minute || !w.To.Equal(now) || w.Duration() != time.Hour {
		t.Fatalf("1h window: %+v", w)
	}
	if w, _ := NewWindow(now.Add(-10*time.Minute), now, 0, 0, now); w.Step != MinStep {
		t.Fatalf("10m window step %s, want the minimum %s", w.Step, MinStep)
	}
	if w, _ := NewWindow(now.Add(-24*time.Hour), now, 0, 0, now); w.Step != 12*time.Minute || w.Rate != 24*time.Minute {
		t.Fatalf("24h window: step %s rate %s", w.Step, w.Rate)
	}
	for _, c := range []struct {
		from, to   time.Time
		last, step time.Duration
		want       string
	}{
		{time.Time{}, time.Time{}, 0, 0, "needs a window"},
		{now, now.Add(-time.Hour), 0, 0, "not before"},
		{now.Add(-time.Hour), now.Add(time.Hour), 0, 0, "future"},
		{now.Add(-30 * time.Second), now, 0, 0, "window of 30s"},
		{now.Add(-25 * time.Hour), now, 0, 0, "window of"},
		{now.Add(-time.Hour), now, 0, time.Second, "at most 120"},
		{now.Add(-time.Hour), now, time.Hour, 0, "excludes"},
	} {
		if _, err := NewWindow(c.from, c.to, c.last, c.step, now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v..%v last %s step %s: %v, want %q", c.from, c.to, c.last, c.step, err, c.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-23T14:58:00Z":      time.Date(2026, 11, 23, 14, 58, 0, 0, time.UTC),
		"2026-11-23T15:58:00+01:00": time.Date(2026, 11, 23, 14, 58, 0, 0, time.UTC),
		"2026-11-23T14:58":          time.Date(2026, 11, 23, 14, 58, 0, 0, time.UTC),
		"2026-11-23 14:58:30":       time.Date(2026, 11, 23, 14, 58, 30, 0, time.UTC),
		"1795445880":                time.Unix(1795445880, 0).UTC(),
		"now":                       now,
		"now-90m":                   now.Add(-90 * time.Minute),
		"":                          {},
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "now-", "now--5m", "now-5", "-1", "2026-13-01T00:00"} {
		if _, err := ParseTime(in, now); err == nil {
			t.Errorf("ParseTime(%q): no error", in)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-23T14:58:00Z", "now-30m", "1795445880", "now", "2026-11-23 14:58", "1e300", "now-9999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err == nil && strings.TrimSpace(s) != "" && got.IsZero() {
			t.Fatalf("ParseTime(%q): zero time without error", s)
		}
	})
}

func TestNewValidates(t *testing.T) {
	for _, o := range []Options{
		{URL: "prometheus:9090"},
		{URL: "ftp://x"},
		{URL: "http://x", BearerTokenFile: "/t", BasicAuthUser: "u"},
		{URL: "http://x", CertFile: "/c"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}

// apiServer answers the query endpoints with handler.
func apiServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(handler)
	t.Cleanup(s.Close)
	return s.URL
}

func kindOf(t *testing.T, err error) string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a promql.Error", err)
	}
	return e.Kind
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	// Rejected: Prometheus's own error body for a bad query.
	url := apiServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected <EOF>"}`))
	})
	c, _ := New(Options{URL: url})
	_, err := c.Instant(ctx, "sum(", now)
	if kindOf(t, err) != "rejected" || !strings.Contains(err.Error(), "parse error") || !strings.Contains(err.Error(), "sum(") {
		t.Fatalf("bad query: %v", err)
	}
	// Authentication refused by a proxy in front of Prometheus.
	url = apiServer(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "unauthorized", http.StatusUnauthorized) })
	c, _ = New(Options{URL: url})
	if _, err := c.Instant(ctx, "up", now); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("401: %v", err)
	}
	// Too slow: the per-query time-out.
	block := make(chan struct{})
	url = apiServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	c, _ = New(Options{URL: url, Timeout: 200 * time.Millisecond})
	if _, err := c.Instant(ctx, "up", now); kindOf(t, err) != "timeout" {
		t.Fatalf("slow server: %v", err)
	}
	// Unreachable: nothing listens.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	c, _ = New(Options{URL: "http://" + addr})
	if _, err := c.Instant(ctx, "up", now); kindOf(t, err) != "unreachable" || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("nothing listening: %v", err)
	}
}

func vectorServer(t *testing.T, series int, seen *http.Header) string {
	return apiServer(t, func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			*seen = r.Header.Clone()
		}
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
		for i := range series {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"metric":{"job":"j` + strings.Repeat("x", i) + `"},"value":[1795445880,"1"]}`)
		}
		b.WriteString(`]}}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b.String()))
	})
}

func TestBudgetAndAuth(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var hdr http.Header
	c, err := New(Options{URL: vectorServer(t, 3, &hdr), BearerTokenFile: tok, MaxQueries: 2, MaxSeries: 3})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v, err := c.Instant(ctx, "up", now); err != nil || len(v) != 3 {
			t.Fatalf("query: %v %v", v, err)
		}
	}
	if got := hdr.Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization %q", got)
	}
	if _, err := c.Instant(ctx, "up", now); kindOf(t, err) != "budget" {
		t.Fatalf("third query: %v", err)
	}
	if q, n := c.Cost(); q != 2 || n != 6 {
		t.Fatalf("cost %d queries %d samples", q, n)
	}
	c, _ = New(Options{URL: vectorServer(t, 4, nil), MaxSeries: 3, BasicAuthUser: "u"})
	if _, err := c.Instant(ctx, "up", now); kindOf(t, err) != "budget" || !strings.Contains(err.Error(), "4 series") || !errors.Is(err, ErrTooManySeries) {
		t.Fatalf("too many series: %v", err)
	}
}
