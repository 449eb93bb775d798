package podstartup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func node(name string, pods int64, sim bool, imgs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	if sim {
		n.Annotations[kube.SimulatedNodeAnnotation] = kube.SimulatedNodeValue
		n.Labels[kube.SimulatedNodeLabel] = kube.SimulatedNodeLabelValue
		n.Spec.Taints = []corev1.Taint{{Key: kube.SimulatedNodeTaint, Value: kube.SimulatedNodeValue, Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, i := range imgs {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{i}})
	}
	return n
}

func runningPods(nodeName string, n int) []runtime.Object {
	var out []runtime.Object
	for i := 0; i < n; i++ {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", nodeName, i), Namespace: "kube-system"},
			Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return out
}

// runFake runs the benchmark on a fake cluster (its pods never start) until its time-out, and returns the
// result and the pods it created.
func runFake(t *testing.T, o Options, objs ...runtime.Object) (result.Result, []corev1.Pod, error) {
	t.Helper()
	cs, _ := measuretest.Clientset(objs...)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	env := &measure.Env{Client: cs, Clock: clk, Namespace: "kubeslow-r", RunID: "r"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type out struct {
		res result.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := New(o).Run(ctx, env)
		done <- out{res, err}
	}()
	// The run waits for its pods on the clock's time-out: once it does, every create has been answered.
	var got out
	_ = wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case got = <-done:
			return true, nil
		default:
		}
		if clk.HasWaiters() {
			clk.Step(o.Timeout)
		}
		return false, nil
	})
	l, err := cs.CoreV1().Pods(env.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.res, l.Items, got.err
}

func opts(count int, simulated bool) Options {
	o := DefaultOptions()
	o.Count, o.QPS, o.Burst, o.Simulated, o.Timeout = count, 1000, 1000, simulated, time.Minute
	return o
}

// TestRunDownsizes: on a lab of simulated nodes and one real node whose kubeconfig is all kubeslow has, the
// pods go to the simulated nodes, tolerating their taint; asked for real nodes, the load is lowered to the
// real node's free pod slots and the result says it was kubeslow's own limit.
func TestRunDownsizes(t *testing.T) {
	objs := []runtime.Object{node("kwok-1", 110, true), node("kwok-2", 110, true), node("real-1", 20, false, "kubeslow.local/pause:1")}
	objs = append(objs, runningPods("real-1", 10)...)

	res, pods, err := runFake(t, opts(30, true), objs...)
	if err != nil || len(pods) != 30 {
		t.Fatalf("simulated: %d pods, %v", len(pods), err)
	}
	for _, p := range pods {
		if p.Spec.NodeSelector[kube.SimulatedNodeLabel] != kube.SimulatedNodeLabelValue || len(p.Spec.Tolerations) != 1 || p.Spec.Containers[0].Image != ClusterImage {
			t.Fatalf("simulated pod %s: selector %v tolerations %v image %s", p.Name, p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.Containers[0].Image)
		}
	}
	if m := res.Metric(MetricFreePodSlots, nil); m == nil || m.Value != 220 || m.Labels["nodes"] != "simulated" || strings.Contains(res.Reason, "own limit") {
		t.Errorf("simulated: %+v, reason %q", m, res.Reason)
	}

	res, pods, err = runFake(t, opts(50, false), objs...)
	if err != nil || len(pods) != 9 { // 10 free, one kept
		t.Fatalf("real: %d pods created, %v; want 9", len(pods), err)
	}
	if p := pods[0]; p.Spec.NodeSelector != nil || len(p.Spec.Tolerations) != 0 || p.Spec.Containers[0].Image != "kubeslow.local/pause:1" {
		t.Errorf("real pod: selector %v tolerations %v image %s", p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.Containers[0].Image)
	}
	if !strings.HasPrefix(res.Reason, "kubeslow's own limit: 50 pods requested, 9 fit on 1 real node(s) (10 free pod slots") {
		t.Errorf("reason %q", res.Reason)
	}
	if m := res.Metric(MetricPodsRequested, nil); m == nil || m.Value != 50 {
		t.Errorf("requested %+v", m)
	}
	if m := res.Metric(MetricPods, nil); m == nil || m.Value != 9 {
		t.Errorf("pods %+v", m)
	}
}

// TestRunNothingFits: no slot left, or no node that takes the pods, is a skip that says why, before anything
// is created.
func TestRunNothingFits(t *testing.T) {
	full := append([]runtime.Object{node("real-1", 10, false)}, runningPods("real-1", 10)...)
	for name, objs := range map[string][]runtime.Object{
		"full":          full,
		"no real nodes": {node("kwok-1", 110, true)},
	} {
		_, pods, err := runFake(t, opts(50, false), objs...)
		var se *measure.SkipError
		if !errors.As(err, &se) || len(pods) != 0 {
			t.Errorf("%s: %v, %d pods", name, err, len(pods))
			continue
		}
		if name == "full" && !strings.Contains(se.Reason, "kubeslow's own limit: 50 pods requested, 0 fit on 1 real node(s)") {
			t.Errorf("%s: %s", name, se.Reason)
		}
	}
}

// TestOwnLimitNotBlamed: pods turned away for the nodes' pod limit are kubeslow's own limit: counted apart,
// said in the reason, a skip when nothing else happened, and never a KS-POD-STUCK finding; other reasons
// still are.
func TestOwnLimitNotBlamed(t *testing.T) {
	tooMany := "FailedScheduling: 0/21 nodes are available: 1 Too many pods, 20 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}."
	sandbox := "FailedCreatePodSandBox: failed to setup network for sandbox"
	notStarted := func(reasons map[string]int, running int) result.Result {
		res := result.Result{Name: Name, Status: result.StatusFail, Reason: "no pod reached Running"}
		res.Metrics = append(res.Metrics, result.Metric{Name: "pods_running", Unit: "count", Value: float64(running)})
		for r, n := range reasons {
			res.Metrics = append(res.Metrics, result.Metric{Name: MetricNotStartedByReason, Unit: "count", Value: float64(n), Labels: map[string]string{"reason": r}})
		}
		return res
	}
	p := &measure.Placement{Nodes: []measure.NodeRoom{{Name: "real-1", Allocatable: 110, Used: 10}}}
	var stuck rule.Rule
	for _, r := range Rules() {
		if r.ID == "KS-POD-STUCK" {
			stuck = r
		}
	}

	res := notStarted(map[string]int{tooMany: 390}, 0)
	sized(&res, p, 500, 500)
	if m := res.Metric(MetricPodsOwnLimit, nil); m == nil || m.Value != 390 || res.Status != result.StatusSkip ||
		!strings.HasPrefix(res.Reason, "kubeslow's own limit: 390 of its pods found no free pod slot") {
		t.Errorf("own limit only: %+v %s %q", m, res.Status, res.Reason)
	}
	if fs, _ := rule.Evaluate(ruletest.Report(nil, res), []rule.Rule{stuck}); len(fs) != 0 {
		t.Errorf("KS-POD-STUCK fired on kubeslow's own limit: %+v", fs)
	}

	res = notStarted(map[string]int{tooMany: 3, sandbox: 2}, 40)
	res.Status = result.StatusPass
	sized(&res, p, 45, 45)
	if res.Status != result.StatusPass {
		t.Errorf("status %s", res.Status)
	}
	fs, _ := rule.Evaluate(ruletest.Report(nil, res), []rule.Rule{stuck})
	if len(fs) != 1 || fs[0].ItemCount != 1 || !strings.Contains(fs[0].Summary, "FailedCreatePodSandBox") {
		t.Errorf("KS-POD-STUCK on the sandbox failures: %+v", fs)
	}
}

// TestSpecImage: --image first, then a pause image the real nodes hold, then ClusterImage.
func TestSpecImage(t *testing.T) {
	env := &measure.Env{Namespace: "ns", RunID: "r"}
	o := Options{Kind: workload.Pods}
	if s := o.Spec(env, &measure.Placement{Image: "kubeslow.local/pause:1"}, 3); s.Image != "kubeslow.local/pause:1" || s.Count != 3 {
		t.Errorf("node image: %+v", s)
	}
	if s := o.Spec(env, &measure.Placement{}, 3); s.Image != ClusterImage {
		t.Errorf("default: %s", s.Image)
	}
	o.Image = "mine:1"
	if s := o.Spec(env, &measure.Placement{Image: "kubeslow.local/pause:1"}, 3); s.Image != "mine:1" {
		t.Errorf("--image: %s", s.Image)
	}
}

// TestRunStatesLoad: the benchmark's result carries the load's shape, its rate and burst, beside the SLI.
func TestRunStatesLoad(t *testing.T) {
	objs := []runtime.Object{node("kwok-1", 110, true)}
	for _, burst := range []int{1, 20} {
		o := opts(5, true)
		o.QPS, o.Burst = 50, burst
		res, pods, err := runFake(t, o, objs...)
		if err != nil || len(pods) != 5 {
			t.Fatalf("burst %d: %d pods, %v", burst, len(pods), err)
		}
		q, b := res.Metric(MetricCreateQPS, map[string]string{"creator": "client"}), res.Metric(MetricCreateBurst, map[string]string{"creator": "client"})
		if q == nil || q.Value != 50 || b == nil || b.Value != float64(burst) {
			t.Fatalf("burst %d: create_qps %+v create_burst %+v", burst, q, b)
		}
		if !strings.Contains(res.Reason, "load: kubeslow created them at") || !strings.Contains(res.Reason, fmt.Sprint(burst)) {
			t.Errorf("burst %d: reason %q", burst, res.Reason)
		}
	}
}
