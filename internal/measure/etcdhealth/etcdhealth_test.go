package etcdhealth

import (
	"context"
	"log/slog"
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
	"github.com/kubeslow/kubeslow/pkg/result"
)

// fakeEtcd serves two real etcd 3.5 scrapes (taken from the lab) in turn, and an alarm list.
func fakeEtcd(t *testing.T, alarms string) *httptest.Server {
	t.Helper()
	var scrapes [2][]byte
	for i, f := range []string{"etcd-metrics-1.txt", "etcd-metrics-2.txt"} {
		b, err := os.ReadFile("../../source/prom/testdata/" + f)
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

func nodeEnv(tier measure.NodeTier) *measure.Env {
	return &measure.Env{Clock: clock.RealClock{}, Log: slog.New(slog.DiscardHandler), NodeTier: tier}
}

// Without --etcd-endpoint etcd is read through the node agent: the node whose agent serves etcd (not the first
// node, which runs none), its metrics labelled with the tier and node, the alarms absent (not zero).
func TestNodeTier(t *testing.T) {
	var scrapes [][]byte
	for _, f := range []string{"etcd-metrics-1.txt", "etcd-metrics-2.txt"} {
		b, err := os.ReadFile("../../source/prom/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		scrapes = append(scrapes, b)
	}
	stub := &cpnodetest.Stub{On: []string{"cp-a", "cp-b"}, Metrics: map[string][][]byte{"cp-b/etcd": scrapes}}
	res := measure.RunOne(context.Background(), nodeEnv(stub), New(time.Millisecond, ""))
	if res.Status != result.StatusPass || !strings.Contains(res.Reason, "etcd read by the node agent on cp-b") {
		t.Fatalf("status %s reason %q", res.Status, res.Reason)
	}
	m := res.Metric("wal_fsync_samples", map[string]string{"source": cpnode.SourceNodeAgent, "node": "cp-b"})
	if m == nil || m.Value <= 0 {
		t.Errorf("wal_fsync_samples from the node agent on cp-b: %+v", res.Metrics)
	}
	if res.Metric(MetricAlarmNoSpace, nil) != nil {
		t.Error("alarm_nospace reported though the node tier cannot read the alarms")
	}
	found := false
	for _, a := range res.Absent {
		found = found || a.Metric == MetricAlarmNoSpace
	}
	if !found {
		t.Errorf("alarm_nospace not listed absent: %+v", res.Absent)
	}
	if stub.Starts != 1 {
		t.Errorf("node tier asked %d times", stub.Starts)
	}
}

// The node tier out of reach: Skip, and etcd's signal out of reach with the node tier's reason; no node
// serving etcd: the same with the scrape's reason.
func TestNodeTierOutOfReach(t *testing.T) {
	for _, c := range []struct {
		stub *cpnodetest.Stub
		want string
	}{
		{&cpnodetest.Stub{Err: &cpnode.Unreachable{Reason: cpnode.NoControlPlaneNodes, Detail: "none of the 3 nodes is labelled"}}, "no control-plane node: none of the 3 nodes"},
		{&cpnodetest.Stub{On: []string{"cp"}}, "cp/etcd: no such process"},
	} {
		res := measure.RunOne(context.Background(), nodeEnv(c.stub), New(time.Millisecond, ""))
		if res.Status != result.StatusSkip || len(res.OutOfReach) != 1 || !strings.Contains(res.OutOfReach[0].Why, c.want) ||
			res.OutOfReach[0].Signal != measure.OutOfReachEtcd.Signal {
			t.Errorf("%s %q %+v, want Skip with etcd out of reach saying %q", res.Status, res.Reason, res.OutOfReach, c.want)
		}
	}
	// No node tier at all (a read-only run).
	env := nodeEnv(nil)
	env.NodeTierOff = "--read-only: no agent"
	res := measure.RunOne(context.Background(), env, New(time.Millisecond, ""))
	if res.Status != result.StatusSkip || len(res.OutOfReach) != 1 || !strings.Contains(res.OutOfReach[0].Why, "--read-only") {
		t.Errorf("%s %+v", res.Status, res.OutOfReach)
	}
}
