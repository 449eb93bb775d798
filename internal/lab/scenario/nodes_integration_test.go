package scenario_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
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
	// The lab's nodes share this machine's kernel, so their PSI is the machine's: the lab's own start-up (image
	// imports, the previous tests' teardown) stalls the disk for a while, and io "full" avg60 keeps that for
	// about two minutes. The healthy node is the quiet one: wait (bounded) until the machine's I/O pressure of
	// the last minute is under half the rule's threshold before sweeping.
	sc.Start = func(ctx context.Context, _ lab.Dirs, _ *lab.Config, progress lab.Progress) error {
		return waitQuietIO(ctx, 5, 4*time.Minute, progress)
	}
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

// waitQuietIO polls the machine's /proc/pressure/io until io "full" avg60 is below limit percent, for at most
// timeout.
func waitQuietIO(ctx context.Context, limit float64, timeout time.Duration, progress lab.Progress) error {
	var last disk.PSI
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile("/proc/pressure/io")
		if err != nil {
			return false, err
		}
		_, full, err := disk.ParsePSI(b)
		if err != nil {
			return false, err
		}
		last = full
		return full.Avg60 < limit, nil
	})
	if err != nil {
		return fmt.Errorf("this machine stayed under I/O pressure (io full avg60 %.1f%%, avg10 %.1f%%) for %s: no healthy node to sweep: %w",
			last.Avg60, last.Avg10, timeout, err)
	}
	progress("machine I/O pressure io full avg60 %.1f%% after %s", last.Avg60, time.Since(start).Round(time.Second))
	return nil
}
