package promwindow

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/measure/throttle/throttletest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/promql/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// recordedCadvisor is a recording of the lab's cAdvisors (hack/record-throttle.sh) moved to start at t0, as
// the lab's Prometheus scrapes them (job lab-cadvisor, instance the node's address:10250, as are the same
// kubelets' /metrics, job lab-kubelet, whose kubelet_node_name names the node); from and to bound its scrapes.
func recordedCadvisor(t *testing.T, name string, t0 time.Time) (scrapes []promtest.Scrape, from, to time.Time) {
	rec := throttletest.Recorded(t, name)
	addr := map[string]string{}
	for _, s := range rec {
		if addr[s.Node] == "" {
			addr[s.Node] = fmt.Sprintf("198.19.255.%d:10250", 11+len(addr))
		}
		at := t0.Add(s.At.Sub(rec[0].At))
		scrapes = append(scrapes, promtest.Scrape{At: at, Text: s.Text, Labels: map[string]string{"job": "lab-cadvisor", "instance": addr[s.Node]}},
			promtest.Scrape{At: at, Text: []byte(fmt.Sprintf("# TYPE kubelet_node_name gauge\nkubelet_node_name{node=%q} 1\n", s.Node)),
				Labels: map[string]string{"job": "lab-kubelet", "instance": addr[s.Node]}})
		to = at
	}
	return scrapes, t0, to
}

// TestThrottlingFromHistory backfills a real Prometheus with the recorded cAdvisor scrapes: KS-SYSTEM-THROTTLED
// fires over the window of the CoreDNS pods under 20m, on the same pods (named by their kubelets) and nearly
// the same shares as the live analysis of the window's two ends, and stays clear over the recording under 1 core; a Prometheus without
// cAdvisor leaves it not evaluated.
func TestThrottlingFromHistory(t *testing.T) {
	t0 := time.Now().Add(-3 * time.Hour).Truncate(time.Minute)
	for _, c := range []struct {
		name string
		want result.RuleStatus
	}{{"limited", result.RuleFired}, {"generous", result.RuleClear}} {
		t.Run(c.name, func(t *testing.T) {
			scrapes, from, to := recordedCadvisor(t, c.name, t0)
			url := promtest.Start(t, scrapes)
			// The range selector is open at its start: the window begins just before the first scrape.
			from = from.Add(-time.Second)
			if to.Sub(from) < time.Minute {
				from = to.Add(-time.Minute) // the shortest window kubeslow reads
			}
			res := run(t, NewThrottling(source(t, url, from, to, nil)))
			f, ev := rule.Evaluate(ruletest.Report(nil, res), throttle.Rules())
			if ev[0].Status != c.want {
				t.Fatalf("KS-SYSTEM-THROTTLED %s, want %s (%s); %s", ev[0].Status, c.want, ev[0].Reason, res.Reason)
			}
			live := throttletest.Result(t, c.name)
			for _, m := range live.Metrics {
				if m.Name != throttle.MetricThrottledRatio && m.Name != throttle.MetricCPULimit && m.Name != throttle.MetricLimited {
					continue
				}
				labels := map[string]string{}
				for k, v := range m.Labels {
					labels[k] = v
				}
				got := res.Metric(m.Name, labels)
				if got == nil {
					t.Errorf("%s %v: live %g, not from Prometheus", m.Name, labels, m.Value)
					continue
				}
				// increase() extrapolates each counter alike, so a share of two is nearly the live one.
				if math.Abs(got.Value-m.Value) > 0.02+0.05*m.Value {
					t.Errorf("%s %v: live %g, Prometheus %g", m.Name, labels, m.Value, got.Value)
				}
			}
			if len(f) > 0 {
				t.Logf("%s: %s (%d items)", c.name, f[0].Summary, len(f[0].Items))
			} else {
				t.Logf("%s: %s", c.name, res.Reason)
			}
		})
	}
	t.Run("no cAdvisor", func(t *testing.T) {
		url := promtest.Start(t, []promtest.Scrape{
			{At: t0, Text: []byte("# TYPE apiserver_request_total counter\napiserver_request_total{verb=\"GET\",code=\"200\"} 1\n"), Labels: map[string]string{"job": "apiserver", "instance": "a:6443"}},
			{At: t0.Add(time.Minute), Text: []byte("# TYPE apiserver_request_total counter\napiserver_request_total{verb=\"GET\",code=\"200\"} 9\n"), Labels: map[string]string{"job": "apiserver", "instance": "a:6443"}},
		})
		res := measure.RunOne(context.Background(), &measure.Env{Clock: clock.RealClock{}}, NewThrottling(source(t, url, t0, t0.Add(time.Minute), nil)))
		_, ev := rule.Evaluate(ruletest.Report(nil, res), throttle.Rules())
		if ev[0].Status != result.RuleNotEvaluated {
			t.Fatalf("without cAdvisor: %s (%s %s)", ev[0].Status, res.Status, res.Reason)
		}
		t.Logf("without cAdvisor: %s", ev[0].Reason)
	})
}
