package churn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

func node(name string, pods int64, used int, sim bool) []runtime.Object {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	if sim {
		n.Annotations[kube.SimulatedNodeAnnotation] = kube.SimulatedNodeValue
	}
	out := []runtime.Object{n}
	for i := 0; i < used; i++ {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "x"},
			Spec: corev1.PodSpec{NodeName: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return out
}

func cluster(nodes ...[]runtime.Object) *measure.Env {
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n...)
	}
	cs, _ := measuretest.Clientset(objs...)
	return &measure.Env{Client: cs, Namespace: "ns", RunID: "r"}
}

// TestChurnPlacement: churn runs on the real nodes the cluster says take its pods, its concurrency lowered to
// their free pod slots (each node holds an equal share, and its disk agent a slot), said as kubeslow's own
// limit; no slot at all, or only simulated nodes, is a skip; simulated nodes named are refused.
func TestChurnPlacement(t *testing.T) {
	ctx := context.Background()
	env := cluster(node("a", 110, 100, false), node("b", 110, 107, false), node("full", 110, 110, false), node("kwok-1", 110, 0, true))
	o := DefaultOptions()
	o.Concurrency, o.AgentImage = 10, "kubeslow:1"
	m := New(o, nil)
	p, err := m.place(ctx, env)
	if err != nil || len(p.Nodes) != 3 || p.Simulated {
		t.Fatalf("placement %+v %v", p, err)
	}
	nodes, c, limit := m.fit(p)
	// a: 10 free, b: 3 free, each less its agent: 2 nodes x 2 slots.
	if strings.Join(nodes, ",") != "a,b" || c != 4 || !strings.Contains(limit, "kubeslow's own limit: concurrency 10 requested, 4 fit") {
		t.Errorf("fit: %v %d %q", nodes, c, limit)
	}
	m.Opts.AgentImage, m.Opts.Concurrency = "", 1
	if nodes, c, limit := m.fit(p); len(nodes) != 2 || c != 1 || limit != "" {
		t.Errorf("one at a time: %v %d %q", nodes, c, limit)
	}

	var se *measure.SkipError
	for name, env := range map[string]*measure.Env{
		"full":           cluster(node("full", 110, 110, false), node("kwok-1", 110, 0, true)),
		"simulated only": cluster(node("kwok-1", 110, 0, true)),
	} {
		if _, err := New(DefaultOptions(), nil).Run(ctx, env); !errors.As(err, &se) {
			t.Errorf("%s: %v, want a skip", name, err)
		}
	}
	o = DefaultOptions()
	o.Nodes = []string{"kwok-1"}
	if _, err := New(o, nil).place(ctx, env); err == nil || errors.As(err, &se) {
		t.Errorf("simulated node named: %v, want an error", err)
	}
}

// TestKneeCheckDue: a check as cheap as the first (none yet) is due after every start; one that took 1.7 s (10,000
// starts) waits ten times that.
func TestKneeCheckDue(t *testing.T) {
	for _, c := range []struct {
		since, cost time.Duration
		due         bool
	}{
		{0, 0, true},
		{300 * time.Millisecond, 5 * time.Millisecond, true},
		{time.Second, 1700 * time.Millisecond, false},
		{16 * time.Second, 1700 * time.Millisecond, false},
		{17 * time.Second, 1700 * time.Millisecond, true},
	} {
		if got := kneeCheckDue(c.since, c.cost); got != c.due {
			t.Errorf("kneeCheckDue(%s since, cost %s) = %v, want %v", c.since, c.cost, got, c.due)
		}
	}
}
