package scenario_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/engine/check"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode/cpnodetest"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/rule"
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
	// The lab's nodes share this machine's kernel, so their PSI is the machine's: the agent measures pressure
	// over its own watch (the growth of PSI's stall counters), not avg60, which holds the lab's start-up.
	rep := runScenarioWith(t, sc, []measure.Measurement{kubelet.New(), nodeagent.New(nodeagent.DefaultOptions(lab.AgentImage))},
		func(rc *rest.Config, _ lab.Dirs) { proxyThroughput(t, rc, 200) }, func(rc *rest.Config, _ lab.Dirs) { cpnodetest.Check(t, rc, lab.AgentImage, lab.RealNodeName(1)) })
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
		for _, what := range []string{"kernel log", "disk", "sync probe", "pressure", "D-state", "conntrack", "sandbox image"} {
			if strings.Contains(rec.Labels["unread"], what) {
				t.Errorf("%s: %s unread: %s", rec.ID, what, rec.Labels["unread"])
			}
		}
	}
	syncs, sandboxes := 0, 0
	for _, m := range r.Metrics {
		switch m.Name {
		case nodeagent.MetricIOPressureFullWindow, nodeagent.MetricIOPressureFull:
			t.Logf("%s %s: %.2f%%", m.Name, m.Labels, m.Value)
		case nodeagent.MetricSandboxMissing:
			sandboxes++
			// The lab's containerd starts sandboxes from its own imported pause image: on the node, so no pull.
			if m.Labels["image"] != lab.PauseImage || m.Value != 0 {
				t.Errorf("sandbox image %v missing=%v, want %s present", m.Labels, m.Value, lab.PauseImage)
			}
		}
		if m.Name == nodeagent.MetricSyncP50 {
			syncs++
			t.Logf("sync p50 %s: %.6f s", m.Labels, m.Value)
		}
	}
	if sandboxes != int(val(nodeagent.MetricNodesReported)) {
		t.Errorf("%d nodes' pause image checked, want %v", sandboxes, val(nodeagent.MetricNodesReported))
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

// proxyThroughput times nodes.kubelet's reads (/configz and /metrics through the apiserver's node proxy,
// kubelet.Concurrency in flight) of n nodes, all the lab's real node 1 (the lab has one or two kubelets, so
// each stands for many; its /metrics is a real kubelet's), with the client's own rate limit lifted: the
// apiserver -> kubelet path's throughput, from which docs/nodes.md estimates a 5,000-node sweep.
func proxyThroughput(t *testing.T, rc *rest.Config, n int) {
	ctx := context.Background()
	cfg := rest.CopyConfig(rc)
	cfg.QPS, cfg.Burst = 10000, 10000
	c := kubernetes.NewForConfigOrDie(cfg)
	node, err := c.CoreV1().Nodes().Get(ctx, lab.RealNodeName(1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]corev1.Node, n)
	for i := range nodes {
		nodes[i] = *node
	}
	start := time.Now()
	out, forbidden := kubelet.ReadKubelets(ctx, c, nodes)
	took := time.Since(start)
	if forbidden != nil {
		t.Fatal(forbidden)
	}
	for _, o := range out {
		if o.Err != "" || o.Config == nil || o.Metrics == nil {
			t.Fatalf("kubelet read: %+v", o)
		}
	}
	perNode := took / time.Duration(n)
	t.Logf("node proxy: %d kubelet reads (2 GETs each, /metrics %d KiB) at %d in flight in %s: %.1f nodes/s; 5,000 nodes at this rate: %s",
		n, len(metrics)>>10, kubelet.Concurrency, took.Round(time.Millisecond), float64(n)/took.Seconds(), (5000 * perNode).Round(time.Second))
}

// TestIntegrationImagePull runs the image-pull scenario on a real node: a registry serving 3 MiB/s with 1.5 s
// per request. One small pull alone (a slow registry, nothing queued) must raise nothing; then a 33 MiB pull
// and a small one behind it must raise KS-NODE-PULL-QUEUE naming the setting, the blocking image and the
// wait — with serializeImagePulls: true, and again with parallel pulls limited to one (maxParallelImagePulls: 1).
func TestIntegrationImagePull(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		pulls         lab.ImagePullSettings
		alone         bool
	}{
		{"serialized", "serializeImagePulls: true", lab.ImagePullSettings{Serialize: true}, true},
		{"max-parallel-1", "maxParallelImagePulls: 1", lab.ImagePullSettings{Serialize: false, MaxParallel: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Get("image-pull")
			if err != nil {
				t.Fatal(err)
			}
			configure, queue := sc.Configure, sc.Start
			sc.Configure = func(c *lab.Config) { configure(c); c.ImagePulls = tc.pulls }
			var alone *result.Report
			if tc.alone {
				sc.Start = func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
					client, err := lab.AdminClient(d)
					if err != nil {
						return err
					}
					rc, err := lab.AdminRESTConfig(d)
					if err != nil {
						return err
					}
					if err := scenario.PullPod(ctx, client, "pull-alone", lab.RealNodeName(1), scenario.SmallImage()); err != nil {
						return err
					}
					if err := scenario.WaitRunning(ctx, client, "pull-alone", 3*time.Minute); err != nil {
						return err
					}
					res, err := kubelet.New().Run(ctx, &measure.Env{Client: client, Config: rc})
					if err != nil {
						return err
					}
					alone = &result.Report{Results: []result.Result{res}}
					alone.Findings, _ = rule.Evaluate(alone, check.Rules())
					return queue(ctx, d, c, progress)
				}
			}
			rep := runScenarioWith(t, sc, []measure.Measurement{kubelet.New()}, func(rc *rest.Config, _ lab.Dirs) {
				// The kubelet's Pulled events as recorded (the rule's fixtures are made of them).
				c := kubernetes.NewForConfigOrDie(rc)
				evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Pulled"})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs.Items {
					e.ManagedFields = nil
					b, _ := json.Marshal(e)
					t.Logf("event: %s", b)
				}
			})
			if alone != nil {
				r := alone.Result(kubelet.Name)
				m := r.Metric(kubelet.MetricPullMax, map[string]string{"node": lab.RealNodeName(1)})
				if m == nil || m.Value < 3 {
					t.Errorf("the slow registry alone: longest pull %+v, want >= 3 s (%v)", m, r.Metrics)
				} else {
					t.Logf("slow registry alone: pull %.1f s", m.Value)
				}
				for _, f := range alone.Findings {
					if f.ID == "KS-NODE-PULL-QUEUE" {
						t.Errorf("a slow registry alone (no pull ahead) called queueing: %s", f.Summary)
					}
				}
			}
			var found *result.Finding
			for i, f := range rep.Findings {
				t.Logf("finding %s: %s", f.ID, f.Summary)
				if f.ID == "KS-NODE-PULL-QUEUE" {
					found = &rep.Findings[i]
				}
			}
			if found == nil {
				t.Fatalf("no KS-NODE-PULL-QUEUE: %+v", rep.Result(kubelet.Name))
			}
			s := found.Summary
			for _, want := range []string{tc.setting, "default/" + scenario.PullSmallPod, scenario.SmallImage(), "behind " + scenario.BigImage()} {
				if !strings.Contains(s, want) {
					t.Errorf("summary %q does not name %q", s, want)
				}
			}
			if found.Items[0].Key != "node="+lab.RealNodeName(1) || found.Items[0].Value < 5 {
				t.Errorf("items %+v", found.Items)
			}
		})
	}
}
