package podstartup

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestCollector scripts a pod's life through a fake clientset's watch with a fake clock: the collector
// records when it saw each step, the server timestamps, and the image pull time from the Pulled event.
func TestCollector(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(t0)
	col := NewCollector(cs, "ns", "app=x", clk, 1)
	if err := col.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer col.Stop()
	pods := cs.CoreV1().Pods("ns")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}, CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, col, func() bool { return len(col.Timelines()) == 1 })
	clk.Step(1500 * time.Millisecond)
	p.Spec.NodeName = "n1"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))}}
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, col, func() bool { return col.Timelines()[0].Node == "n1" })
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
		Reason: "Pulled", Message: `Successfully pulled image "x" in 1.25s (1.25s including waiting). Image size: 1 bytes.`}
	if _, err := cs.CoreV1().Events("ns").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Second)
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(3 * time.Second))}}}}
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-col.AllRunning():
	case <-time.After(10 * time.Second):
		t.Fatal("AllRunning not closed")
	}
	waitFor(t, col, func() bool { return col.Timelines()[0].PullTime > 0 })
	tl := col.Timelines()[0]
	if !tl.SeenCreated.Equal(t0) || !tl.SeenScheduled.Equal(t0.Add(1500*time.Millisecond)) || !tl.SeenRunning.Equal(t0.Add(3500*time.Millisecond)) {
		t.Fatalf("local times %+v", tl)
	}
	if !tl.Scheduled.Equal(t0.Add(time.Second)) || !tl.Started.Equal(t0.Add(3*time.Second)) || tl.PullTime != 1250*time.Millisecond {
		t.Fatalf("server times / pull %+v", tl)
	}
}

// TestEventBeforePod: a pod whose event arrives before the pod watch reports it (two watches, no order
// between them) is still counted from the pod's first sighting; it was dropped as "never seen" before.
func TestEventBeforePod(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	col := NewCollector(fake.NewClientset(), "ns", "app=x", clk, 1)
	col.event(&corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"}, Reason: "Scheduled", Type: corev1.EventTypeNormal})
	clk.Step(300 * time.Millisecond)
	col.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)}}, clk.Now(), false)
	tl := col.Timelines()
	if len(tl) != 1 || !tl[0].SeenCreated.Equal(t0.Add(300*time.Millisecond)) || !tl[0].Created.Equal(t0) {
		t.Fatalf("timeline %+v", tl)
	}
}

// TestPulledIn: the pod's pull phase includes its wait for the node's puller, and durations past a minute
// parse whole.
func TestPulledIn(t *testing.T) {
	for msg, want := range map[string]string{
		`Successfully pulled image "x" in 6.376s (22.61s including waiting). Image size: 76092894 bytes.`: "6.376s 22.61s",
		`Successfully pulled image "x" in 1m5.981s (1m5.981s including waiting). Image size: 1 bytes.`:    "1m5.981s 1m5.981s",
		`Successfully pulled image "x" in 407ms`:                                                          "407ms ",
	} {
		m := pulledIn.FindStringSubmatch(msg)
		if m == nil || m[1]+" "+m[2] != want {
			t.Errorf("%q: %q", msg, m)
		}
	}
}

// waitFor re-checks cond each time the collector records an update (bounded: the fake watch delivers
// asynchronously).
func waitFor(t *testing.T, col *Collector, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-col.Changed():
		case <-deadline:
			t.Fatal("condition not reached")
		}
	}
}

// BenchmarkWatchPath is the work between an event's arrival on the pod watch and the collector being ready
// for the next one: the receipt time, then the timeline update (go test -bench WatchPath -cpuprofile …).
func BenchmarkWatchPath(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	col := NewCollector(fake.NewClientset(), "ns", "", clock.RealClock{}, 0)
	w := watch.NewFake()
	s := stream{handle: func(o runtime.Object, at time.Time, initial bool) { col.observe(o.(*corev1.Pod), at, initial) }}
	done := make(chan struct{})
	go func() { s.consume(ctx, clock.RealClock{}, w, ""); close(done) }()
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		p := running(labPod("ns", fmt.Sprintf("p%d", i), nil), "n1")
		p.ResourceVersion = fmt.Sprint(i + 1)
		pods[i] = p
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.Modify(pods[i%len(pods)])
	}
	w.Stop()
	<-done
}

// TestWatchLoopResumes: a closed watch is resumed from the last resourceVersion seen (no relist); a 410 Gone
// relists (objects handled as not initial) and watches from the relist's resourceVersion.
func TestWatchLoopResumes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type call struct{ rv string }
	watches := make(chan call, 10)
	ws := []*watch.FakeWatcher{watch.NewFake(), watch.NewFake(), watch.NewFake()}
	lists := 0
	handled := make(chan string, 10)
	s := stream{
		list: func(context.Context, metav1.ListOptions) ([]runtime.Object, string, error) {
			lists++
			return []runtime.Object{labPod("ns", "relisted", nil)}, "100", nil
		},
		watch: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			watches <- call{o.ResourceVersion}
			w := ws[0]
			ws = ws[1:]
			return w, nil
		},
		handle: func(o runtime.Object, _ time.Time, initial bool) {
			handled <- fmt.Sprintf("%s %v", o.(*corev1.Pod).Name, initial)
		},
	}
	w0, w1 := ws[0], ws[1]
	done := make(chan struct{})
	go func() { s.watchLoop(ctx, clock.RealClock{}, "5"); close(done) }()
	if c := <-watches; c.rv != "5" {
		t.Fatalf("first watch from %q, want 5", c.rv)
	}
	p := labPod("ns", "a", nil)
	p.ResourceVersion = "7"
	w0.Add(p)
	if h := <-handled; h != "a false" {
		t.Fatal(h)
	}
	w0.Stop() // the apiserver closes the stream
	if c := <-watches; c.rv != "7" || lists != 0 {
		t.Fatalf("resumed from %q after %d lists, want 7 and none", c.rv, lists)
	}
	w1.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
	if h := <-handled; h != "relisted false" {
		t.Fatal(h)
	}
	if c := <-watches; c.rv != "100" || lists != 1 {
		t.Fatalf("after 410: watch from %q after %d lists, want 100 and 1", c.rv, lists)
	}
	cancel()
	<-done
}
