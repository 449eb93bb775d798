package passive

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// pod is a pod created at created on node n1, with an init container that ran from created+1 s for init, and
// Ready at ready (zero: not Ready).
func pod(ns, name string, created time.Time, init time.Duration, ready time.Time, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created), Labels: labels},
		Spec:   corev1.PodSpec{NodeName: "n1", InitContainers: []corev1.Container{{Name: "warm-up"}}, Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	sched := created.Add(200 * time.Millisecond).Truncate(time.Second)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(sched)}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "warm-up", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		StartedAt: metav1.NewTime(created.Add(time.Second)), FinishedAt: metav1.NewTime(created.Add(time.Second + init)), ExitCode: 0, Reason: "Completed"}}}}
	if !ready.IsZero() {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{
			StartedAt: metav1.NewTime(created.Add(time.Second + init + time.Second))}}}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)})
	}
	return p
}

// TestGather: of the pods not kubeslow's whose start-up began or ended in the window, those of 2 s or more are
// explained, slowest first, each with its longest step and first verdict; kubeslow's own pods, pods that
// started before the window and fast pods are not.
func TestGather(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	in := func(d time.Duration) time.Time { return t0.Add(d) }
	objs := []corev1.Pod{
		*pod("shop", "slow-init", in(2*time.Second), 8*time.Second, in(12*time.Second), nil),                  // 10 s, the init container
		*pod("shop", "fast", in(3*time.Second), 0, in(4*time.Second), nil),                                    // 1 s
		*pod("shop", "older", in(-40*time.Second), 2*time.Second, in(-35*time.Second), nil),                   // before the window
		*pod("shop", "ready-in-window", in(-20*time.Second), 20*time.Second, in(5*time.Second), nil),          // began before, ended in it: 25 s
		*pod("kubeslow-r1", "ours", in(time.Second), 9*time.Second, in(11*time.Second), kube.RunLabels("r1")), // kubeslow's
		*pod("shop", "still-starting", in(20*time.Second), 30*time.Second, time.Time{}, nil),                  // not Ready at the end: 10 s so far
	}
	c := fake.NewClientset()
	for i := range objs {
		if _, err := c.CoreV1().Pods(objs[i].Namespace).Create(context.Background(), &objs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env := &measure.Env{Client: c, Clock: clk}
	m := New(30 * time.Second)
	obs, err := m.Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(30 * time.Second)
	res, err := obs.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	metric := func(name string) float64 {
		if mm := res.Metric(name, nil); mm != nil {
			return mm.Value
		}
		return -1
	}
	if res.Status != result.StatusPass || metric(MetricStarted) != 4 || metric(MetricSlow) != 3 || metric(MetricExplained) != 3 {
		t.Fatalf("started %v, slow %v, explained %v (%s): want 4, 3, 3", metric(MetricStarted), metric(MetricSlow), metric(MetricExplained), res.Reason)
	}
	var ids []string
	for _, r := range res.Records {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, ","); got != "shop/ready-in-window,shop/slow-init,shop/still-starting" {
		t.Fatalf("explained %s: want the slowest first, none of kubeslow's", got)
	}
	r := res.Records[1]
	if r.Values["startup_seconds"] != 10 || r.Labels["longest_step"] != "init:warm-up" || r.Values["longest_step_seconds"] < 8 || r.Labels["verdict"] == "" {
		t.Errorf("slow-init: %+v", r)
	}
	if st := res.Records[2]; st.Labels["ready"] != "false" {
		t.Errorf("still-starting: %+v", st)
	}
	if !strings.Contains(res.Reason, "4 pod(s) not kubeslow's started in the window, 3 took 2 s or more; the slowest: shop/ready-in-window 25 s") {
		t.Errorf("reason %q", res.Reason)
	}
	t.Log(res.Reason)

	// A quiet window.
	obs, _ = m.Start(context.Background(), env)
	clk.Step(30 * time.Second)
	res, err = obs.Gather(context.Background())
	if err != nil || res.Reason != "no pod other than kubeslow's started in the window" || len(res.Records) != 0 {
		t.Fatalf("quiet window: %v %q %+v", err, res.Reason, res.Records)
	}
}
