package measure_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
)

var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// TestBoundContext: without a budget the wait keeps its own time-out (a deadline d ahead, untouched by the
// clock); with the budget's end ahead of d it ends there, on the env's clock, and says so.
func TestBoundContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	env := &measure.Env{Clock: clk}
	ctx, cancel, b := env.BoundContext(context.Background(), time.Hour)
	dl, ok := ctx.Deadline()
	if b.Cut || b.D != time.Hour || !ok || time.Until(dl) < 59*time.Minute || b.Note() != "" {
		t.Fatalf("no budget: bound %+v, deadline %v %v, note %q", b, dl, ok, b.Note())
	}
	clk.Step(2 * time.Hour)
	if ctx.Err() != nil {
		t.Fatalf("no budget: the fake clock ended the wait: %v", ctx.Err())
	}
	cancel()

	env.BenchDeadline = t0.Add(2*time.Hour + 5*time.Second)
	ctx, cancel, b = env.BoundContext(context.Background(), time.Hour)
	defer cancel()
	if !b.Cut || b.D != 5*time.Second || b.Note() != " (stopped waiting after 5s, at the end of the run's --budget)" {
		t.Fatalf("budget 5s ahead: %+v %q", b, b.Note())
	}
	clk.Step(4 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("ended before the budget")
	}
	clk.Step(time.Second)
	<-ctx.Done()
	if !measure.BudgetEnded(ctx) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	// A budget that ends after d leaves the wait its own time-out.
	if _, c, b := env.BoundContext(context.Background(), time.Second); b.Cut || b.D != time.Second {
		t.Fatalf("d first: %+v", b)
	} else {
		c()
	}
}

// TestWaitRunningBudget: pods that never run stop the wait at the budget's end, a skip that says so rather
// than an error; without a budget the wait goes on past that (the pods then run and are returned).
func TestWaitRunningBudget(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	clk := clocktesting.NewFakeClock(t0)
	env := &measure.Env{Client: k8sfake.NewClientset(pod), Clock: clk, Namespace: "ns", BenchDeadline: t0.Add(10 * time.Second)}
	err := measuretest.Stepped(t, clk, 10*time.Second, func() error { _, err := env.WaitRunning(context.Background(), "p"); return err })
	var se *measure.SkipError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "stopped waiting after 10s, at the end of the run's --budget") {
		t.Fatalf("budget: %v, want a skip at the budget", err)
	}

	// Without a budget: once the wait has asked, an hour passes on the clock, then the pod runs.
	env.BenchDeadline = time.Time{}
	asked := make(chan struct{}, 1)
	env.Client.(*k8sfake.Clientset).PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case asked <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	type out struct {
		got map[string]*corev1.Pod
		err error
	}
	done := make(chan out, 1)
	go func() {
		got, err := env.WaitRunning(context.Background(), "p")
		done <- out{got, err}
	}()
	<-asked
	clk.Step(time.Hour)
	running := pod.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	if _, err := env.Client.CoreV1().Pods("ns").UpdateStatus(context.Background(), running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.err != nil || o.got["p"] == nil {
		t.Fatalf("no budget: %v %v", o.got, o.err)
	}
}
