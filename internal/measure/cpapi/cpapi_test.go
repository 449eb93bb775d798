package cpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

const readyz = `[+]ping ok
[+]log ok
[-]etcd failed: reason withheld
[+]poststarthook/start-apiextensions-informers ok
readyz check failed
`

func TestParseReadyz(t *testing.T) {
	got := ParseReadyz([]byte(readyz))
	if len(got) != 4 || got[2] != (Check{Name: "etcd", OK: false}) || !got[0].OK || got[3].Name != "poststarthook/start-apiextensions-informers" {
		t.Fatalf("%+v", got)
	}
}

const dump = `PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency, StartTime
workload-low, service-accounts, 3, 0, system:serviceaccount:default:storm, 2026-11-25T20:00:00Z, 1, 0, 0s, 0001-01-01T00:00:00Z
workload-low, service-accounts, 3, 1, system:serviceaccount:default:storm, 2026-11-25T20:00:01Z, 1, 0, 0s, 0001-01-01T00:00:00Z
global-default, global-default, 1, 0, alice, 2026-11-25T20:00:01Z, 1, 0, 0s, 0001-01-01T00:00:00Z
short
`

func TestParseAPFDump(t *testing.T) {
	got := ParseAPFDump([]byte(dump))
	want := []Queued{{"workload-low", "service-accounts", "system:serviceaccount:default:storm", 2}, {"global-default", "global-default", "alice", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
}

func FuzzParsers(f *testing.F) {
	f.Add([]byte(readyz))
	f.Add([]byte(dump))
	f.Add([]byte("[+]\n[-\n,,,,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range ParseReadyz(b) {
			if c.Name == "" {
				t.Fatal("a check without a name")
			}
		}
		for _, q := range ParseAPFDump(b) {
			if q.Count <= 0 || q.PriorityLevel == "" {
				t.Fatalf("%+v", q)
			}
		}
	})
}

// apiserver serves /readyz, the two Leases (the scheduler's renewed renewed ago), and what the optional
// sources answer (404 unless served).
func apiserver(t *testing.T, now time.Time, renewed time.Duration, extra map[string]string) *rest.Config {
	lease := func(name string, at time.Time) string {
		return fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q,"namespace":"kube-system"},"spec":{"holderIdentity":"x","leaseDurationSeconds":15,"renewTime":%q}}`,
			name, at.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/readyz":
			_, _ = w.Write([]byte("[+]ping ok\n[+]etcd ok\nreadyz check passed\n"))
		case r.URL.Path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(lease("kube-scheduler", now.Add(-renewed))))
		case r.URL.Path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(lease("kube-controller-manager", now.Add(-time.Second))))
		case extra[r.URL.Path] != "":
			_, _ = w.Write([]byte(extra[r.URL.Path]))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// TestRun: the checks, each Lease's staleness against its duration, APF's queued flows and EKS's metrics
// where served; a Lease past its duration is said, and a cluster that is not EKS says nothing of it.
func TestRun(t *testing.T) {
	now := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		renewed time.Duration
		extra   map[string]string
		want    []string
	}{
		{"healthy, not EKS", 2 * time.Second, nil, nil},
		{"scheduler gone, EKS", 40 * time.Second, map[string]string{
			EKSSchedulerPath:  "# TYPE scheduler_pending_pods gauge\nscheduler_pending_pods{queue=\"active\"} 7\nscheduler_pending_pods{queue=\"backoff\"} 1\n",
			EKSControllerPath: "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"endpointslice\"} 40\n",
			APFDumpPath:       dump,
		}, []string{"kube-scheduler's Lease was last renewed 40 s ago, past its 15 s duration", "EKS control-plane metrics read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := apiserver(t, now, c.renewed, c.extra)
			env := &measure.Env{Client: kubernetes.NewForConfigOrDie(rc), Config: rc, Clock: testclock.NewFakeClock(now)}
			res := measure.RunOne(context.Background(), env, New())
			if res.Status != result.StatusPass {
				t.Fatalf("%s %s", res.Status, res.Reason)
			}
			if m := res.Metric(MetricLeaseStaleness, map[string]string{"component": "kube-scheduler"}); m == nil || m.Value < c.renewed.Seconds()-1 || m.Value > c.renewed.Seconds()+1 {
				t.Errorf("scheduler staleness %+v, want %s", m, c.renewed)
			}
			if m := res.Metric(MetricReadyzFailed, map[string]string{"check": "etcd"}); m == nil || m.Value != 0 {
				t.Errorf("etcd check %+v", m)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q lacks %q", res.Reason, w)
				}
			}
			if c.extra == nil && (res.Reason != "" || res.Metric(MetricEKSPendingPods, nil) != nil) {
				t.Errorf("not EKS, yet: %q", res.Reason)
			}
			if c.extra != nil {
				if m := res.Metric(MetricEKSPendingPods, map[string]string{"queue": "active"}); m == nil || m.Value != 7 {
					t.Errorf("pending pods %+v", m)
				}
				if m := res.Metric(MetricAPFQueued, map[string]string{"flow": "system:serviceaccount:default:storm"}); m == nil || m.Value != 2 {
					t.Errorf("APF queued %+v", m)
				}
			}
		})
	}
}
