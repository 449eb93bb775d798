package workload

import (
	"context"
	"errors"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

func spec(k Kind, n int) Spec {
	return Spec{Kind: k, Name: "w", Namespace: "ns", RunID: "run1", Count: n, QPS: 2000, Burst: 10, Workers: 4, Image: "pause"}
}

func TestPods(t *testing.T) {
	c := fake.NewClientset()
	// The 7th create fails: the outcome must say so, not hide it.
	var calls atomic.Int32
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if strings.HasSuffix(p.Name, "-00006") {
			return true, nil, errors.New("quota exceeded")
		}
		return false, nil, nil
	})
	out, err := Run(context.Background(), c, clock.RealClock{}, spec(Pods, 50))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Creates) != 50 || out.Failed() != 1 || calls.Load() != 50 {
		t.Fatalf("creates %d failed %d calls %d", len(out.Creates), out.Failed(), calls.Load())
	}
	pods, _ := c.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{LabelSelector: out.Spec.Selector()})
	if len(pods.Items) != 49 {
		t.Fatalf("%d pods selected by the workload selector", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Labels[kube.ManagedByLabel] != kube.ManagedByValue || p.Labels[kube.RunLabel] != "run1" {
			t.Fatalf("pod %s lacks run labels: %v", p.Name, p.Labels)
		}
	}
	for i, cr := range out.Creates {
		if cr.Sent.Before(cr.Intended.Add(-time.Millisecond)) && i >= 10 {
			t.Fatalf("create %d sent %s before its intended time %s", i, cr.Sent, cr.Intended)
		}
		if cr.Done.Before(cr.Sent) {
			t.Fatalf("create %d done before sent", i)
		}
	}
	// The intended schedule: burst at once, then 1/QPS apart.
	if got := out.Creates[12].Intended.Sub(out.Creates[11].Intended); got != 500*time.Microsecond {
		t.Fatalf("intended spacing %s, want 500µs at 2000 QPS", got)
	}
}

func TestControllers(t *testing.T) {
	c := fake.NewClientset()
	if _, err := Run(context.Background(), c, clock.RealClock{}, spec(Deployment, 300)); err != nil {
		t.Fatal(err)
	}
	d, err := c.AppsV1().Deployments("ns").Get(context.Background(), "w", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 300 || d.Spec.Template.Labels[WorkloadLabel] != "w" {
		t.Fatalf("deployment %+v %v", d, err)
	}
	if _, err := Run(context.Background(), c, clock.RealClock{}, spec(Job, 20)); err != nil {
		t.Fatal(err)
	}
	j, err := c.BatchV1().Jobs("ns").Get(context.Background(), "w", metav1.GetOptions{})
	if err != nil || *j.Spec.Completions != 20 || *j.Spec.CompletionMode != "Indexed" || j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("job %+v %v", j, err)
	}
}

func TestValidate(t *testing.T) {
	bad := spec(Pods, 0)
	if _, err := Run(context.Background(), fake.NewClientset(), clock.RealClock{}, bad); err == nil {
		t.Fatal("count 0 accepted")
	}
	noQPS := spec(Pods, 3)
	noQPS.QPS = 0
	if _, err := Run(context.Background(), fake.NewClientset(), clock.RealClock{}, noQPS); err == nil {
		t.Fatal("pods without QPS accepted")
	}
	if _, err := ParseKind("statefulset"); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestCancelStopsSending(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := spec(Pods, 1000)
	s.QPS, s.Burst = 100, 1
	c := fake.NewClientset()
	var n atomic.Int32
	c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if n.Add(1) == 5 {
			cancel()
		}
		return false, nil, nil
	})
	out, err := Run(ctx, c, clock.RealClock{}, s)
	if err == nil || len(out.Creates) >= 1000 {
		t.Fatalf("cancelled run sent %d creates, err %v", len(out.Creates), err)
	}
}

// TestLimiter: the limiter is QPS tokens a second in a bucket of Burst (at least 1), and Schedule, the
// intended send times, is what that limiter lets through when every create asks at once.
func TestLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		burst, want int
	}{{0, 1}, {1, 1}, {20, 20}} {
		s := spec(Pods, 30)
		s.QPS, s.Burst = 10, c.burst
		lim := s.Limiter()
		if lim.Limit() != 10 || lim.Burst() != c.want {
			t.Fatalf("burst %d: limiter %v/s burst %d, want 10/s burst %d", c.burst, lim.Limit(), lim.Burst(), c.want)
		}
		sched := s.Schedule(t0, s.Count)
		for i, at := range sched {
			r := lim.ReserveN(t0, 1)
			if d := t0.Add(r.DelayFrom(t0)).Sub(at); d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("burst %d: create %d intended at %s, the limiter lets it go %s later", c.burst, i, at.Sub(t0), d)
			}
			want := time.Duration(0)
			if i >= c.want {
				want = time.Duration(i-c.want+1) * 100 * time.Millisecond
			}
			if got := at.Sub(t0); got != want {
				t.Fatalf("burst %d: create %d intended at +%s, want +%s", c.burst, i, got, want)
			}
		}
	}
}

// TestPodsPaced runs the creates on a fake clock stepped 1 ms at a time while the limiter holds them: at
// 10/s with burst 1 they go ~100 ms apart from the first; with burst 20 the first 20 go at once.
func TestPodsPaced(t *testing.T) {
	for _, burst := range []int{1, 20} {
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		clk := clocktesting.NewFakeClock(t0)
		s := spec(Pods, 25)
		s.QPS, s.Burst = 10, burst
		type res struct {
			out *Outcome
			err error
		}
		done := make(chan res, 1)
		go func() {
			out, err := Run(context.Background(), fake.NewClientset(), clk, s)
			done <- res{out, err}
		}()
		var got res
		deadline := time.Now().Add(30 * time.Second)
	loop:
		for {
			select {
			case got = <-done:
				break loop
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("burst %d: not done at fake +%s", burst, clk.Since(t0))
			}
			if clk.HasWaiters() {
				clk.Step(time.Millisecond)
			} else {
				goruntime.Gosched()
			}
		}
		if got.err != nil || len(got.out.Creates) != s.Count {
			t.Fatalf("burst %d: %v, %d creates", burst, got.err, len(got.out.Creates))
		}
		for i, cr := range got.out.Creates {
			want := time.Duration(0)
			if i >= burst {
				want = time.Duration(i-burst+1) * 100 * time.Millisecond
			}
			if d := cr.Released.Sub(t0) - want; d < 0 || d > time.Millisecond {
				t.Errorf("burst %d: create %d released at +%s, want +%s", burst, i, cr.Released.Sub(t0), want)
			}
			if cr.Sent.Before(cr.Released) {
				t.Errorf("burst %d: create %d sent before the limiter let it go", burst, i)
			}
		}
	}
}
