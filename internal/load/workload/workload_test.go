package workload

import (
	"context"
	"errors"
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
