package throttle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/measure/throttle/throttletest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func evaluate(res result.Result) ([]result.Finding, []result.RuleEvaluation) {
	return rule.Evaluate(ruletest.Report(nil, res), throttle.Rules())
}

// TestRecorded: the lab's CoreDNS pods under 20m are throttled past the line, each named with its node and its
// CPU against its limit; under 1 core the same load is not.
func TestRecorded(t *testing.T) {
	limited := throttletest.Result(t, "limited")
	t.Logf("limited: %s", limited.Reason)
	for _, m := range limited.Metrics {
		t.Logf("  %s %s %g", m.Name, result.FormatLabels(m.Labels), m.Value)
	}
	f, _ := evaluate(limited)
	if len(f) != 1 || f[0].ID != "KS-SYSTEM-THROTTLED" {
		t.Fatalf("findings %+v", f)
	}
	for _, it := range f[0].Items {
		if !strings.Contains(it.Key, "pod=coredns-") || !strings.Contains(it.Key, "node=lab-node-") {
			t.Errorf("item %q: want the CoreDNS pod and its node", it.Key)
		}
	}
	if !strings.Contains(f[0].Summary, "under a CPU limit of 0.02 cores") || !strings.Contains(f[0].Summary, "on lab-node-") {
		t.Errorf("summary %q: want the node and the 20m limit", f[0].Summary)
	}
	t.Logf("finding: %s", f[0].Summary)
	generous := throttletest.Result(t, "generous")
	t.Logf("generous: %s", generous.Reason)
	if f, ev := evaluate(generous); len(f) != 0 || ev[0].Status != result.RuleClear {
		t.Fatalf("generous limit: findings %+v, %+v", f, ev)
	}
}

// TestLine: the threshold is strict (25% itself is not throttled too often), containers without a limit are
// not counted, and a pod's own cgroup stands for its containers only when cAdvisor names none of them.
func TestLine(t *testing.T) {
	w := 100 * time.Second
	cs := []throttle.Container{
		{Node: "n1", Pod: "coredns-a", Container: "coredns", Periods: 1000, Throttled: 250, CPUSeconds: 2, Limit: 0.02},
		{Node: "n1", Pod: "coredns-a", Container: "", Periods: 1000, Throttled: 900, CPUSeconds: 2, Limit: 0.02},
		{Node: "n1", Pod: "kube-proxy-x", Container: "kube-proxy", Periods: 0, CPUSeconds: 30},
		{Node: "n2", Pod: "cilium-y", Container: "", Periods: 1000, Throttled: 600, CPUSeconds: 20, Limit: 0.2},
	}
	res := throttle.Build(throttle.PreferContainers(cs), w, ruletest.T0, ruletest.T0.Add(w))
	if m := res.Metric(throttle.MetricLimited, nil); m == nil || m.Value != 2 {
		t.Fatalf("limited containers: %+v", m)
	}
	f, _ := evaluate(res)
	if len(f) != 1 || len(f[0].Items) != 1 || !strings.Contains(f[0].Items[0].Key, "pod=cilium-y") || !strings.Contains(f[0].Items[0].Key, "container="+throttle.PodCgroup) {
		t.Fatalf("want only cilium-y's pod cgroup: %+v", f)
	}
	if !strings.Contains(f[0].Summary, "60%") || !strings.Contains(f[0].Summary, "limit of 0.2 cores") {
		t.Errorf("summary %q", f[0].Summary)
	}
	none := throttle.Build(nil, w, ruletest.T0, ruletest.T0.Add(w))
	if f, ev := evaluate(none); len(f) != 0 || ev[0].Status != result.RuleClear {
		t.Fatalf("nothing under a limit: %+v %+v", f, ev)
	}
}
