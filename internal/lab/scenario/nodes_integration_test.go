package scenario_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestIntegrationNodeSweep runs the node agent DaemonSet on the healthy lab's real nodes: every real node
// reports (kernel log from /dev/kmsg, both directories' disks and sync probes), simulated nodes get no agent,
// and none of the node sweep's rules fires.
func TestIntegrationNodeSweep(t *testing.T) {
	sc, err := scenario.Get("healthy")
	if err != nil {
		t.Fatal(err)
	}
	healthy := sc.Configure
	sc.Configure = func(c *lab.Config) { healthy(c); c.RealNodes = max(c.RealNodes, 1) } // the agent runs on real nodes only
	rep := runScenarioWith(t, sc, []measure.Measurement{kubelet.New(), nodeagent.New(nodeagent.DefaultOptions(lab.AgentImage))})
	if k := rep.Result(kubelet.Name); k == nil || k.Status != result.StatusPass || k.Metric(kubelet.MetricNodesRead, nil).Value < 1 {
		t.Errorf("nodes.kubelet: %+v", k)
	} else {
		t.Logf("kubelet: %v", k.Records)
	}
	r := rep.Result(nodeagent.Name)
	if r == nil || r.Status != result.StatusPass {
		t.Fatalf("nodes.agent: %+v", r)
	}
	val := func(n string) float64 {
		if m := r.Metric(n, nil); m != nil {
			return m.Value
		}
		return -1
	}
	if sched, got := val(nodeagent.MetricAgentsScheduled), val(nodeagent.MetricNodesReported); sched < 1 || got != sched || val(nodeagent.MetricNodesFailed) != 0 {
		t.Fatalf("agents scheduled %v, reported %v, failed %v: %+v", sched, got, val(nodeagent.MetricNodesFailed), r.Records)
	}
	for _, rec := range r.Records {
		t.Logf("%s: %v", rec.ID, rec.Labels)
		if !strings.HasPrefix(rec.Labels["kernel_log"], "/dev/kmsg") {
			t.Errorf("%s: kernel log %q, want /dev/kmsg", rec.ID, rec.Labels["kernel_log"])
		}
		if rec.Labels["disk kubelet"] == "" || rec.Labels["disk runtime"] == "" {
			t.Errorf("%s: disks %q / %q, unread %q", rec.ID, rec.Labels["disk kubelet"], rec.Labels["disk runtime"], rec.Labels["unread"])
		}
		// Not "neighbour": the kernel shows gc_thresh1/2/3 only in the initial network namespace, and the lab's
		// nodes live in namespaces of their own (on a real node the host network is the initial one).
		for _, what := range []string{"kernel log", "disk", "sync probe", "pressure", "D-state", "conntrack"} {
			if strings.Contains(rec.Labels["unread"], what) {
				t.Errorf("%s: %s unread: %s", rec.ID, what, rec.Labels["unread"])
			}
		}
	}
	syncs := 0
	for _, m := range r.Metrics {
		if m.Name == nodeagent.MetricSyncP50 {
			syncs++
			t.Logf("sync p50 %s: %.6f s", m.Labels, m.Value)
		}
	}
	if want := 2 * int(val(nodeagent.MetricNodesReported)); syncs != want {
		t.Errorf("%d sync probes, want %d (kubelet and runtime on each node)", syncs, want)
	}
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.ID, "KS-NODE-") {
			t.Errorf("healthy lab: finding %s: %s", f.ID, f.Summary)
		}
	}
}
