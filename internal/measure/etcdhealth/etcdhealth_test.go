package etcdhealth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// fakeEtcd serves two real etcd 3.5 scrapes (taken from the lab) in turn, and an alarm list.
func fakeEtcd(t *testing.T, alarms string) *httptest.Server {
	t.Helper()
	var scrapes [2][]byte
	for i, f := range []string{"etcd-metrics-1.txt", "etcd-metrics-2.txt"} {
		b, err := os.ReadFile("../../prom/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		scrapes[i] = b
	}
	var n atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			w.Write(scrapes[min(int(n.Add(1))-1, 1)])
		case "/v3/maintenance/alarm":
			w.Write([]byte(alarms))
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestRunAgainstRealScrapes(t *testing.T) {
	srv := fakeEtcd(t, `{"header":{"cluster_id":"1"},"alarms":[{"memberID":"7","alarm":"NOSPACE"}]}`)
	defer srv.Close()
	res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, New(time.Millisecond, srv.URL))
	if res.Status != result.StatusFail || !strings.Contains(res.Reason, "NOSPACE") {
		t.Fatalf("status %s reason %q", res.Status, res.Reason)
	}
	for _, name := range []string{"wal_fsync_samples", "db_size_bytes", "quota_bytes", "db_quota_ratio", "leader_changes", "alarm_nospace"} {
		if res.Metric(name, nil) == nil {
			t.Errorf("metric %s missing: %+v", name, res.Metrics)
		}
	}
	if m := res.Metric("alarm_nospace", nil); m.Value != 1 {
		t.Fatalf("alarm_nospace = %v", m.Value)
	}
	if m := res.Metric("quota_bytes", nil); m.Value != 2<<30 {
		t.Fatalf("quota = %v", m.Value)
	}
}

func TestNoEndpointSkips(t *testing.T) {
	res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, New(time.Millisecond, ""))
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "--etcd-endpoint") {
		t.Fatalf("status %s reason %q", res.Status, res.Reason)
	}
	res = measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, New(time.Millisecond, "http://127.0.0.1:1"))
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "unreachable") {
		t.Fatalf("unreachable: status %s reason %q", res.Status, res.Reason)
	}
}

func TestParseAlarms(t *testing.T) {
	cases := map[string]struct {
		in   string
		want string
		err  bool
	}{
		"none":     {in: `{"header":{}}`, want: ""},
		"nospace":  {in: `{"alarms":[{"memberID":"1","alarm":"NOSPACE"},{"memberID":"2","alarm":"CORRUPT"}]}`, want: "NOSPACE,CORRUPT"},
		"NONE":     {in: `{"alarms":[{"alarm":"NONE"}]}`, want: ""},
		"garbage":  {in: `<html>`, err: true},
		"truncate": {in: `{"alarms":[`, err: true},
	}
	for name, c := range cases {
		got, err := ParseAlarms([]byte(c.in))
		if (err != nil) != c.err || strings.Join(got, ",") != c.want {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
}

func FuzzParseAlarms(f *testing.F) {
	f.Add(`{"alarms":[{"alarm":"NOSPACE"}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) { _, _ = ParseAlarms([]byte(in)) })
}
