package scenario_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/internal/lab"
	"github.com/kubeslow/kubeslow/internal/lab/host"
	"github.com/kubeslow/kubeslow/internal/lab/labtest"
	"github.com/kubeslow/kubeslow/internal/lab/scenario"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/podres"
	"github.com/kubeslow/kubeslow/internal/source/agent/proto"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The pods of TestIntegrationPodResources, all on lab-node-1 (kubeslow's own binary, `agent burn`).
const (
	podHealthy = "healthy"   // no limit, idle, a readiness probe that passes: reads nothing
	podSpin    = "spin-100m" // one thread spinning under a 100m CPU limit, no probe: throttled, no symptom (info)
	podBurst   = "burst-50m" // 16 threads spinning under 50m, serving its readiness probe: throttled, not Ready (warning)
	podOOMOwn  = "oom-own"   // allocates 256 MiB under a 64 MiB memory limit: OOMKilled, CrashLoopBackOff
	podOOMNode = "oom-node"  // no memory limit, allocates 1 GiB on a node whose memory is capped 400 MiB above its use
	nodeOOMCap = 400 << 20   // the node's memory cap above what it uses when oom-node starts
)

// TestIntegrationPodResources brings up one lab with a real node and runs pods.resources and the node sweep
// twice: on the healthy pod alone (no finding of the three rules; a pod with no limit reads no throttling),
// then with the four faulty pods — the two throttling shapes (a 100m busy loop, info without a symptom; a
// multi-threaded pod under 50m whose readiness probe times out, warning), a container over its own memory
// limit, and node-wide memory pressure (the node's pods cgroup capped so the kernel kills in it, not in the
// container's own). KUBESLOW_RECORD_PODRES=DIR saves what pods.resources read (DIR/healthy, DIR/faults) and
// the node sweep's result, as the unit tests' fixtures.
func TestIntegrationPodResources(t *testing.T) {
	sc, err := scenario.Get("healthy")
	if err != nil {
		t.Fatal(err)
	}
	d := labtest.Dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	rc, down := labtest.Up(t, d, func() error {
		_, err := scenario.Up(ctx, d, lab.Config{Nodes: 1, RealNodes: 1, AgentBinary: labtest.Binary(t)}, sc, t.Logf)
		return err
	})
	defer down()
	c := kubernetes.NewForConfigOrDie(rc)
	node := lab.RealNodeName(1)
	ns := "podres-test"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// 1. Healthy.
	create(burnPod(podHealthy, node, agentproto.Burn{Listen: ":8080"}, nil, true))
	labtest.WaitPodRunning(ctx, t, c, ns, podHealthy)
	rep := runPodRes(ctx, t, c, rc, d, "healthy")
	res := rep.Result(podres.Name)
	if res == nil || res.Status != result.StatusPass {
		t.Fatalf("pods.resources on the healthy lab: %+v", res)
	}
	t.Logf("healthy: %s", res.Reason)
	for _, m := range res.Metrics {
		if m.Labels["pod"] == podHealthy && m.Name == podres.MetricThrottledRatio {
			t.Errorf("the healthy pod has no CPU limit, yet reads throttling: %+v", m)
		}
	}
	if n := res.Metric(podres.MetricUnlimited, nil); n == nil || n.Value < 1 {
		t.Errorf("containers without a CPU limit: %+v, want the healthy pod counted", n)
	}
	for _, f := range rep.Findings {
		if f.ID == "KS-POD-THROTTLED" || f.ID == "KS-POD-OOMKILLED" || (f.ID == "KS-NODE-OOM" && f.Severity != result.SeverityInfo) {
			t.Errorf("healthy lab: %s %s: %s", f.ID, f.Severity, f.Summary)
		}
	}

	// 2. Faults. The node's pods cgroup (the kubelet's cgroup root, above kubepods) is capped in the v1
	// memory hierarchy 400 MiB above its use (oom-own, held at 64 MiB, fits under it): a pod without a limit that allocates past it is killed by the
	// kernel in that cgroup (oom_memcg = the node's), as on a node out of memory.
	capFile := filepath.Join(host.LabCgroup("/sys/fs/cgroup/memory"), "pods-"+node, "memory.limit_in_bytes")
	usage, err := os.ReadFile(filepath.Join(filepath.Dir(capFile), "memory.usage_in_bytes"))
	if err != nil {
		t.Fatalf("the node's memory cgroup: %v", err)
	}
	used, err := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capFile, []byte(strconv.FormatInt(used+nodeOOMCap, 10)), 0o644); err != nil {
		t.Fatalf("capping %s: %v", capFile, err)
	}
	defer func() { _ = os.WriteFile(capFile, []byte("-1"), 0o644) }()
	t.Logf("%s capped at %d MiB (%d MiB in use)", capFile, (used+nodeOOMCap)>>20, used>>20)

	create(burnPod(podSpin, node, agentproto.Burn{Threads: 1}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}, false))
	// 16 spinning goroutines, not 4: Go preempts a spinning goroutine every 10 ms of its CPU, so the probe's
	// handler waits for ~8 turns (16 over GOMAXPROCS 2) — 80 ms of CPU, 1.6 s under a 50m quota, past the
	// probe's 1 s. With 4 it waited ~0.4 s and in CI's run of 2026-11-26 the probe never failed.
	create(burnPod(podBurst, node, agentproto.Burn{Threads: 16, Listen: ":8080"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}, true))
	create(burnPod(podOOMOwn, node, agentproto.Burn{Memory: 256 << 20}, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}, false))
	create(burnPod(podOOMNode, node, agentproto.Burn{Memory: 1 << 30}, nil, false))
	// Both OOM pods killed once before the run, as a user runs kubeslow on a pod seen crash-looping.
	for _, name := range []string{podOOMOwn, podOOMNode} {
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			return p.Status.ContainerStatuses[0].RestartCount >= 1, nil
		})
		if err != nil {
			p, _ := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			t.Fatalf("%s never restarted: %v (%+v)", name, err, p.Status.ContainerStatuses)
		}
	}
	// The burst pod has shown its symptom before the run: its readiness probe failed (the kubelet's Unhealthy
	// Event on it).
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ev, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + podBurst + ",reason=Unhealthy"})
		return err == nil && len(ev.Items) > 0, nil
	})
	if err != nil {
		t.Fatalf("%s's readiness probe never failed under its 50m limit: %v", podBurst, err)
	}
	rep = runPodRes(ctx, t, c, rc, d, "faults")
	res = rep.Result(podres.Name)
	if res == nil || res.Status != result.StatusPass {
		t.Fatalf("pods.resources: %+v", res)
	}
	t.Logf("faults: %s", res.Reason)
	items := map[string]map[string]result.Item{}
	sev := map[string]result.Severity{}
	for _, f := range rep.Findings {
		t.Logf("finding %s (%s): %s", f.ID, f.Severity, f.Summary)
		items[f.ID] = map[string]result.Item{}
		sev[f.ID] = f.Severity
		for _, it := range f.Items {
			t.Logf("  %s: %s", it.Key, it.Summary)
			items[f.ID][it.Key] = it
		}
	}
	item := func(id, pod string) *result.Item {
		for k, it := range items[id] {
			if strings.Contains(k, "pod="+pod) && strings.Contains(k, "namespace="+ns) {
				return &it
			}
		}
		return nil
	}
	// Throttling: both shapes, the busy loop without a symptom (info, saying why), the burst with its probe.
	if it := item("KS-POD-THROTTLED", podSpin); it == nil || !strings.Contains(it.Summary, "no symptom ties it to slowness") || !strings.Contains(it.Summary, "0.1 cores") {
		t.Errorf("KS-POD-THROTTLED on %s: %+v", podSpin, it)
	}
	if it := item("KS-POD-THROTTLED", podBurst); it == nil || !strings.Contains(it.Summary, "it shows slowness") {
		t.Errorf("KS-POD-THROTTLED on %s: %+v", podBurst, it)
	} else if sev["KS-POD-THROTTLED"] != result.SeverityWarning {
		t.Errorf("KS-POD-THROTTLED: severity %s, want warning (the burst pod's probe fails)", sev["KS-POD-THROTTLED"])
	}
	if it := item("KS-POD-THROTTLED", podHealthy); it != nil {
		t.Errorf("the healthy pod has no limit: %+v", it)
	}
	// OOM: the container at its own limit is KS-POD-OOMKILLED with its 64 MiB; the node-wide kill is
	// KS-NODE-OOM naming the pod, and not KS-POD-OOMKILLED.
	if it := item("KS-POD-OOMKILLED", podOOMOwn); it == nil || !strings.Contains(it.Summary, "memory limit 64 MiB") {
		t.Errorf("KS-POD-OOMKILLED on %s: %+v", podOOMOwn, it)
	}
	if it := item("KS-POD-OOMKILLED", podOOMNode); it != nil {
		t.Errorf("%s was killed for the node's memory, not its own limit: %+v", podOOMNode, it)
	}
	var nodeItem *result.Item
	for k, it := range items["KS-NODE-OOM"] {
		if k == "node="+node {
			nodeItem = &it
		}
	}
	if nodeItem == nil || !strings.Contains(nodeItem.Summary, ns+"/"+podOOMNode) {
		t.Errorf("KS-NODE-OOM on %s: %+v", node, nodeItem)
	}
}

// burnPod is a pod on node running `agent burn` with the given limits (requests equal), and a readiness
// probe on :8080 (1 s timeout) when probe is set.
func burnPod(name, node string, b agentproto.Burn, limits corev1.ResourceList, probe bool) *corev1.Pod {
	zero := int64(0)
	ctr := corev1.Container{Name: "burn", Image: lab.AgentImage, ImagePullPolicy: corev1.PullNever, Args: b.Args(),
		Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}
	if probe {
		ctr.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: 1}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{ctr},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
}

// runPodRes runs pods.resources (a 30 s window) and the node sweep with their rules, saving what
// pods.resources read under $KUBESLOW_RECORD_PODRES/name when it is set.
func runPodRes(ctx context.Context, t *testing.T, c kubernetes.Interface, rc *rest.Config, d lab.Dirs, name string) *result.Report {
	t.Helper()
	m := podres.New(30 * time.Second)
	dir := os.Getenv("KUBESLOW_RECORD_PODRES")
	if dir != "" {
		m.Record = func(rec podres.Recording) {
			if err := rec.Save(filepath.Join(dir, name)); err != nil {
				t.Errorf("recording: %v", err)
			}
		}
	}
	rules := append(podres.Rules(), nodeagent.Rules()...)
	rep, err := runner.Execute(ctx, runner.Plan{Target: runner.Target{Config: rc, Name: "lab", Lab: true},
		Measurements: []measure.Measurement{m, nodeagent.New(nodeagent.DefaultOptions(lab.AgentImage))}, Rules: rules,
		Progress: t.Logf, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		if sweep := rep.Result(nodeagent.Name); sweep != nil {
			b, _ := resultJSON(rep.Start, *sweep)
			if err := os.WriteFile(filepath.Join(dir, name, "node-sweep.json"), b, 0o644); err != nil {
				t.Errorf("recording the node sweep: %v", err)
			}
		}
	}
	return rep
}

// resultJSON is the node sweep's result with the run's start, as podrestest reads it back.
func resultJSON(start time.Time, r result.Result) ([]byte, error) {
	return json.MarshalIndent(struct {
		Start  time.Time     `json:"run_start"`
		Result result.Result `json:"result"`
	}{start, r}, "", " ")
}
