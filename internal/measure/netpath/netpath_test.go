package netpath

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeslow/kubeslow/internal/measure"
)

func node(name string, ready, unschedulable, kwok bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	if kwok {
		n.Annotations["kwok.x-k8s.io/node"] = "fake"
	}
	return n
}

// TestRealNodes: only Ready, schedulable, non-simulated nodes carry the agents; none at all is a skip with
// the reason, not an error.
func TestRealNodes(t *testing.T) {
	cs := fake.NewClientset(node("real-1", true, false, false), node("real-2", true, true, false), node("real-3", false, false, false), node("kwok-1", true, false, true))
	env := &measure.Env{Client: cs, Namespace: "ns", RunID: "r"}
	got, err := realNodes(context.Background(), env)
	if err != nil || len(got) != 1 || got[0].Name != "real-1" {
		t.Fatalf("real nodes %v %v", got, err)
	}
	env.Client = fake.NewClientset(node("kwok-1", true, false, true))
	_, err = New(Options{Image: "x"}).Run(context.Background(), env)
	var se *measure.SkipError
	if !errors.As(err, &se) {
		t.Fatalf("no real node: %v, want a skip", err)
	}
}
