package podstartup

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func labPod(ns, name string, l map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l, CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
}

func running(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}
	return p
}

// TestPassiveSelection runs the passive measurement against a fake cluster where a rollout's pods are
// created by someone else: it measures exactly the pods of the namespace and selector that were created
// after it started (not a replica that was already there, not a pod of another app or namespace), ends
// once Count of them run, and sends nothing but LISTs and WATCHes.
func TestPassiveSelection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	web := map[string]string{"app": "web"}
	old := running(labPod("shop", "web-old", web), "n1")
	cs := fake.NewClientset(old)
	watching := make(chan struct{}, 2)
	cs.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
		watching <- struct{}{}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(t0)
	p := NewPassive(PassiveOptions{Namespace: "shop", Selector: "app=web", Count: 2, SLO: DefaultSLO, Timeout: time.Hour})
	if measure.KindOf(p) != measure.ReadOnly {
		t.Fatal("passive mode must be read-only (no namespace is created for it)")
	}
	type out struct {
		r   result.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := p.Run(ctx, &measure.Env{Client: cs, Clock: clk})
		done <- out{r, err}
	}()
	for range 2 { // pods and events
		<-watching
	}
	// Someone else's rollout, plus pods that must not count.
	other := cs.Tracker()
	for _, o := range []runtime.Object{labPod("shop", "web-1", web), labPod("shop", "web-2", web),
		labPod("shop", "db-1", map[string]string{"app": "db"}), labPod("lab", "web-x", web)} {
		if err := other.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []*corev1.Pod{running(labPod("shop", "db-1", map[string]string{"app": "db"}), "n1"), running(labPod("lab", "web-x", web), "n1"),
		running(labPod("shop", "web-1", web), "n1"), running(labPod("shop", "web-2", web), "n2")} {
		if err := other.Update(corev1.SchemeGroupVersion.WithResource("pods"), o, o.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	var res out
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("passive run did not end when its 2 pods ran")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	r := res.r
	if metric(t, r, MetricPods, nil) != 2 || metric(t, r, MetricPodsPreexisting, nil) != 1 {
		t.Fatalf("pods %v preexisting %v: %+v", metric(t, r, MetricPods, nil), metric(t, r, MetricPodsPreexisting, nil), r.Records)
	}
	var ids []string
	for _, rec := range r.Records {
		ids = append(ids, rec.ID)
	}
	if strings.Join(ids, ",") != "web-1,web-2" && strings.Join(ids, ",") != "web-2,web-1" {
		t.Fatalf("measured %v, want web-1 and web-2", ids)
	}
	if r.Metric(MetricClientLimiterWait, map[string]string{"creator": "others"}) != nil || r.Metric(MetricCreateQPS, nil) != nil {
		t.Fatal("a passive run reports no limiter or rate of its own")
	}
	if !strings.Contains(r.Reason, "load: created by others") || !strings.Contains(r.Reason, "not kubeslow's rate") {
		t.Errorf("reason %q: the load's rate was not kubeslow's", r.Reason)
	}
	// It creates nothing: only reads.
	for _, a := range cs.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" {
			t.Errorf("passive run sent %s %s", v, a.GetResource().Resource)
		}
	}
}

// TestPassiveEverywhere: with no namespace, pods of every namespace that match are measured, named
// namespace/name so two namespaces' pods of one name stay apart.
func TestPassiveEverywhere(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	col := NewCollector(cs, "", "run=r1", clk, 2)
	if err := col.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer col.Stop()
	l := map[string]string{"run": "r1"}
	for _, ns := range []string{"a", "b"} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, labPod(ns, "p", l), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Pods("a").Create(ctx, labPod("a", "q", map[string]string{"run": "r2"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, col, func() bool { return len(col.Timelines()) == 2 })
	for _, name := range []string{"a/p", "b/p"} {
		if _, ok := col.Timeline(name); !ok {
			t.Errorf("no timeline %s: %+v", name, col.Timelines())
		}
	}
	if _, ok := col.Timeline("a/q"); ok {
		t.Error("a pod outside the selector was recorded")
	}
}

func TestPassiveOptionsValidate(t *testing.T) {
	ok := DefaultPassiveOptions()
	ok.Namespace, ok.Selector = "shop", "app=web,tier in (front)"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(o *PassiveOptions){
		func(o *PassiveOptions) { o.Namespace = "Shop_1" },
		func(o *PassiveOptions) { o.Selector = "-bad=x" },
		func(o *PassiveOptions) { o.Selector = "app in (a" },
		func(o *PassiveOptions) { o.Count = -1 },
		func(o *PassiveOptions) { o.Count = MaxCount + 1 },
		func(o *PassiveOptions) { o.Timeout = 0 },
	} {
		o := ok
		bad(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
