package podstartup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSchedulingDetail: the scheduler's messages (as kube-scheduler 1.36 writes them) are classified by the
// reason that turned away the most nodes.
func TestSchedulingDetail(t *testing.T) {
	for msg, want := range map[string]string{
		"0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.":                              "Insufficient cpu",
		"0/3 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: …":                                "untolerated taint",
		"0/21 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 20 Too many pods.":                                                               "Too many pods",
		"0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.": "affinity/selector",
		"0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.":    "unbound PVC",
		"0/2 nodes are available: 2 Insufficient example.com/gpu.":                                                                                                       "Insufficient resources",
		"0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.":                                                                                            "Insufficient cpu",
		"0/1 nodes are available: 1 node(s) were unschedulable.":                                                                                                         "unschedulable nodes",
		"something new": "other",
	} {
		if got := SchedulingDetail(msg); got != want {
			t.Errorf("%q: got %q, want %q", msg, got, want)
		}
	}
}

func TestClassifyEvent(t *testing.T) {
	for _, c := range []struct {
		reason, msg string
		want        EventClass
		ok          bool
	}{
		{"FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "missing" is configured`, EventClass{ClassSandbox, "RuntimeClass handler", "sandbox"}, true},
		{"FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "x": plugin type="bridge" failed (add): failed to allocate for range 0`, EventClass{ClassSandbox, "CNI", "sandbox"}, true},
		{"Failed", `Failed to pull image "nope:1": rpc error: code = NotFound`, EventClass{ClassImagePull, "ErrImagePull", "start"}, true},
		{"BackOff", `Back-off pulling image "nope:1"`, EventClass{ClassImagePull, "ImagePullBackOff", "start"}, true},
		{"BackOff", `Back-off restarting failed container app in pod x`, EventClass{ClassCrashLoop, "", "start"}, true},
		{"Unhealthy", `Readiness probe failed: Get "http://198.18.0.5:8080/": context deadline exceeded`, EventClass{ClassUnhealthy, "readiness probe", PhaseReady}, true},
		{"FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`, EventClass{ClassMount, "", "sandbox"}, true},
		{"Evicted", "The node was low on resource: memory.", EventClass{ClassEvicted, "", PhaseAny}, true},
		{"NodeNotReady", "Node is not ready", EventClass{ClassNodeDown, "", PhaseAny}, true},
		{"Scheduled", "Successfully assigned ns/p to n1", EventClass{}, false},
		{"Pulled", `Successfully pulled image "x" in 1s`, EventClass{}, false},
	} {
		got, ok := ClassifyEvent(c.reason, c.msg)
		if got != c.want || ok != c.ok {
			t.Errorf("%s %q: got %+v %v, want %+v %v", c.reason, c.msg, got, ok, c.want, c.ok)
		}
	}
}

// TestCollectorRecordsEvents: an Event object that recurs (its count grows) is one entry with its latest
// count and its first time; Events of classes that slow nothing are not kept.
func TestCollectorRecordsEvents(t *testing.T) {
	col := NewCollector(nil, "ns", "", nil, 0)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ev := func(count int32, last time.Time) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u1"), Namespace: "ns"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
			Reason: "FailedScheduling", Type: corev1.EventTypeWarning, Message: "0/2 nodes are available: 2 Insufficient cpu.",
			Count: count, FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(last)}
	}
	col.event(ev(1, t0))
	col.event(ev(4, t0.Add(30*time.Second)))
	col.event(&corev1.Event{ObjectMeta: metav1.ObjectMeta{UID: "u2"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"},
		Reason: "Scheduled", Type: corev1.EventTypeNormal})
	tl, _ := col.Timeline("p")
	if len(tl.Events) != 1 {
		t.Fatalf("events %+v", tl.Events)
	}
	e := tl.Events[0]
	if e.Count != 4 || !e.First.Equal(t0) || !e.Last.Equal(t0.Add(30*time.Second)) || e.Class.Detail != "Insufficient cpu" {
		t.Fatalf("event %+v", e)
	}
}

func FuzzClassifyEvent(f *testing.F) {
	f.Add("FailedScheduling", "0/3 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated taint {a: b}.")
	f.Add("FailedScheduling", "0/ nodes are available: x")
	f.Add("BackOff", "Back-off pulling image")
	f.Fuzz(func(t *testing.T, reason, msg string) {
		c, ok := ClassifyEvent(reason, msg)
		if ok && (c.Class == "" || c.Phase == "") {
			t.Fatalf("%q %q: %+v", reason, msg, c)
		}
		if ok && FixOf(c) == "" {
			t.Fatalf("no fix for %+v", c)
		}
	})
}
