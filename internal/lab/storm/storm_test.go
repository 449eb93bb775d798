package storm

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSeedEventsCreatesOnlyTheMissing: Events seeded by an earlier storm are listed, not created again; the
// missing ones are created, and an Event of another reason under a seeded name does not count as seeded.
func TestSeedEventsCreatesOnlyTheMissing(t *testing.T) {
	var objs []runtime.Object
	for _, i := range []int{0, 2, 3} {
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: seedName(i), Namespace: "default"}, Reason: SeedReason})
	}
	objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: seedName(4), Namespace: "default"}, Reason: "Other"})
	c := fake.NewClientset(objs...)
	var creates atomic.Int32
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		return false, nil, nil
	})
	if err := SeedEvents(context.Background(), c, 6); err != nil {
		t.Fatal(err)
	}
	// 1 and 5 are created; 4 is tried (AlreadyExists, ignored).
	if got := creates.Load(); got != 3 {
		t.Errorf("%d creates, want 3 (seeds 1, 4 and 5)", got)
	}
	for i := range 6 {
		if _, err := c.CoreV1().Events("default").Get(context.Background(), seedName(i), metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", seedName(i), err)
		}
	}
	if err := SeedEvents(context.Background(), c, 0); err != nil {
		t.Error(err)
	}
	if _, err := c.CoreV1().Events("default").Get(context.Background(), fmt.Sprintf("kubeslow-lab-storm-%05d", 6), metav1.GetOptions{}); err == nil {
		t.Error("seed 6 exists, but only 6 Events were asked for")
	}
}
