package nodeagent

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// stuckAgents is a cluster where the DaemonSet schedules two agents and neither gets Ready.
func stuckAgents(m *Measurement) *fake.Clientset {
	ds := m.DaemonSet("ns", "r")
	var objs []runtime.Object
	for _, n := range []string{"n1", "n2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + n, Namespace: "ns", Labels: ds.Spec.Template.Labels},
			Spec: corev1.PodSpec{NodeName: n}, Status: corev1.PodStatus{Phase: corev1.PodPending}})
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("get", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		d := ds.DeepCopy()
		d.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberReady: 0}
		return true, d, nil
	})
	return cs
}

// TestBudgetBoundsWaits: with the run's budget ending 10 s ahead, the wait for the agents (3 minutes of its
// own) stops there and the result, a skip, says so; without a budget the sweep's own Timeout ends the wait
// and its result (agents that did not report) says nothing of a budget.
func TestBudgetBoundsWaits(t *testing.T) {
	m := New(DefaultOptions("img:1"))
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	env := &measure.Env{Client: stuckAgents(m), Clock: clk, Namespace: "ns", RunID: "r", BenchDeadline: t0.Add(10 * time.Second)}
	res := measuretest.Stepped(t, clk, 10*time.Second, func() result.Result { return measure.RunOne(context.Background(), env, m) })
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "2 of 2 node agents did not report (stopped waiting after 10s, at the end of the run's --budget)") {
		t.Fatalf("budget: %s %q", res.Status, res.Reason)
	}

	m.Opts.Timeout = 50 * time.Millisecond // its own time-out, on the real clock as before
	env = &measure.Env{Client: stuckAgents(m), Clock: clk, Namespace: "ns", RunID: "r"}
	res = measure.RunOne(context.Background(), env, m)
	if res.Status != result.StatusError || res.Reason != "2 of 2 node agents did not report" {
		t.Fatalf("no budget: %s %q", res.Status, res.Reason)
	}
}
