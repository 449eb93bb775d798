package measure_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// nodeOpt shapes a test node.
type nodeOpt func(*corev1.Node)

func simulated(n *corev1.Node) {
	n.Annotations[kube.SimulatedNodeAnnotation] = kube.SimulatedNodeValue
	n.Labels[kube.SimulatedNodeLabel] = kube.SimulatedNodeLabelValue
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: kube.SimulatedNodeTaint, Value: kube.SimulatedNodeValue, Effect: corev1.TaintEffectNoSchedule})
}
func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }
func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func taint(key string, e corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: e}) }
}
func images(names ...string) nodeOpt {
	return func(n *corev1.Node) {
		for _, name := range names {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{name}})
		}
	}
}

func testNode(name string, pods int64, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	for _, o := range opts {
		o(n)
	}
	return n
}

// podsOn makes n pods bound to node in phase.
func podsOn(node string, n int, phase corev1.PodPhase) []runtime.Object {
	var out []runtime.Object
	for i := 0; i < n; i++ {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node, phase, i), Namespace: "other"},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}})
	}
	return out
}

func place(t *testing.T, target measure.Target, objs ...runtime.Object) (*measure.Placement, int) {
	t.Helper()
	cs, lists := measuretest.Clientset(objs...)
	p, err := measure.Place(context.Background(), &measure.Env{Client: cs}, target)
	if err != nil {
		t.Fatal(err)
	}
	return p, *lists
}

func chosen(p *measure.Placement) string {
	var s []string
	for _, n := range p.Nodes {
		s = append(s, n.Name)
	}
	return strings.Join(s, ",")
}

// TestPlaceSimulatedFirst: with simulated nodes in the cluster the load goes to them (tolerating their taint,
// held there by their label), whatever runs on the real node; real nodes only when asked.
func TestPlaceSimulatedFirst(t *testing.T) {
	objs := []runtime.Object{testNode("real-1", 110, images("kubeslow.local/pause:1")), testNode("kwok-1", 110, simulated), testNode("kwok-2", 110, simulated)}
	objs = append(objs, podsOn("real-1", 100, corev1.PodRunning)...)
	p, _ := place(t, measure.PreferSimulated, objs...)
	if !p.Simulated || chosen(p) != "kwok-1,kwok-2" || p.Free() != 220 {
		t.Fatalf("placement %+v: want the two simulated nodes, 220 free", p)
	}
	if len(p.Tolerations) != 1 || p.Tolerations[0].Key != kube.SimulatedNodeTaint || p.NodeSelector[kube.SimulatedNodeLabel] != kube.SimulatedNodeLabelValue || p.Image != "" {
		t.Errorf("steering %+v %v, image %q", p.Tolerations, p.NodeSelector, p.Image)
	}
	if got := p.Fit(500); got != 218 { // 220 less the 1% margin on simulated nodes (2 slots)
		t.Errorf("fit 500 on 220 free: %d, want 218", got)
	}

	r, _ := place(t, measure.RealOnly, objs...)
	if r.Simulated || chosen(r) != "real-1" || r.Free() != 10 || len(r.Tolerations) != 0 || r.Image != "kubeslow.local/pause:1" {
		t.Fatalf("real placement %+v", r)
	}
	// The simulated nodes' taint keeps the real-node pods off them: no selector needed.
	if r.NodeSelector != nil || r.Affinity != nil {
		t.Errorf("real placement steers with %v %v, the taint suffices", r.NodeSelector, r.Affinity)
	}
	if got := r.Fit(500); got != 9 {
		t.Errorf("fit 500 on 10 free: %d, want 9 (one slot kept)", got)
	}
	if msg := r.Limit(500, 9); !strings.Contains(msg, "kubeslow's own limit: 500 pods requested, 9 fit on 1 real node(s)") {
		t.Errorf("limit: %q", msg)
	}
}

// TestPlaceCapacity: allocatable pods less non-terminated pods; Succeeded and Failed pods hold no slot, nor do
// pods on other nodes; a full node counts 0, never less.
func TestPlaceCapacity(t *testing.T) {
	objs := []runtime.Object{testNode("a", 110), testNode("b", 10), testNode("c", 30)}
	objs = append(objs, podsOn("a", 30, corev1.PodRunning)...)
	objs = append(objs, podsOn("a", 5, corev1.PodPending)...)
	objs = append(objs, podsOn("a", 40, corev1.PodSucceeded)...)
	objs = append(objs, podsOn("a", 7, corev1.PodFailed)...)
	objs = append(objs, podsOn("b", 12, corev1.PodRunning)...) // over its allocatable (static pods)
	objs = append(objs, podsOn("gone", 50, corev1.PodRunning)...)
	p, lists := place(t, measure.RealOnly, objs...)
	want := map[string][2]int{"a": {110, 35}, "b": {10, 12}, "c": {30, 0}}
	for _, n := range p.Nodes {
		if w := want[n.Name]; n.Allocatable != w[0] || n.Used != w[1] {
			t.Errorf("%s: %d allocatable, %d used; want %v", n.Name, n.Allocatable, n.Used, w)
		}
	}
	if p.Free() != 75+0+30 || lists != 1 {
		t.Errorf("free %d in %d LISTs, want 105 in 1 (the three nodes are the whole cluster)", p.Free(), lists)
	}
	// Two nodes of nine: one LIST each.
	for i := 0; i < 7; i++ {
		objs = append(objs, testNode(fmt.Sprintf("out-%d", i), 110, cordoned))
	}
	objs[2] = testNode("c", 30, cordoned)
	p, lists = place(t, measure.RealOnly, objs...)
	if chosen(p) != "a,b" || p.Free() != 75 || lists != 2 {
		t.Errorf("%s: free %d in %d LISTs, want a,b: 75 in 2 (one per node)", chosen(p), p.Free(), lists)
	}
}

// TestPlaceManyNodesOneList: above PerNodeCountMax nodes the pods are counted with one LIST, with the same
// result.
func TestPlaceManyNodesOneList(t *testing.T) {
	var objs []runtime.Object
	for i := 0; i < measure.PerNodeCountMax+8; i++ {
		name := fmt.Sprintf("n%02d", i)
		objs = append(objs, testNode(name, 20))
		objs = append(objs, podsOn(name, i%5, corev1.PodRunning)...)
		objs = append(objs, podsOn(name, 3, corev1.PodSucceeded)...)
	}
	p, lists := place(t, measure.RealOnly, objs...)
	used := 0
	for i, n := range p.Nodes {
		if n.Used != i%5 {
			t.Errorf("%s: %d used, want %d", n.Name, n.Used, i%5)
		}
		used += n.Used
	}
	if lists != 1 || p.Free() != 20*len(p.Nodes)-used {
		t.Errorf("%d LISTs, free %d", lists, p.Free())
	}
}

// TestPlaceExcludes: cordoned, NotReady, tainted (NoSchedule, NoExecute; PreferNoSchedule is no bar) and
// pod-less nodes are left out with the reason.
func TestPlaceExcludes(t *testing.T) {
	p, _ := place(t, measure.RealOnly,
		testNode("ok", 110), testNode("prefer", 110, taint("soft", corev1.TaintEffectPreferNoSchedule)),
		testNode("cordoned", 110, cordoned), testNode("down", 110, notReady),
		testNode("cp", 110, taint("node-role.kubernetes.io/control-plane", corev1.TaintEffectNoSchedule)),
		testNode("evict", 110, taint("gpu", corev1.TaintEffectNoExecute)), testNode("zero", 0))
	if chosen(p) != "ok,prefer" {
		t.Fatalf("nodes %s, want ok,prefer", chosen(p))
	}
	why := map[string]string{}
	for _, e := range p.Excluded {
		why[e.Name] = e.Reason
	}
	for n, w := range map[string]string{"cordoned": "cordoned", "down": "not Ready", "cp": "tainted node-role.kubernetes.io/control-plane:NoSchedule",
		"evict": "tainted gpu:NoExecute", "zero": "no allocatable pods"} {
		if why[n] != w {
			t.Errorf("%s left out for %q, want %q", n, why[n], w)
		}
	}
	if d := p.Describe(); !strings.Contains(d, "2 real node(s), 220 free pod slots; left out: 1 cordoned, 1 no allocatable pods, 1 not Ready") {
		t.Errorf("describe: %s", d)
	}
	// The simulated nodes' own taint is tolerated only by pods placed on them: a cordoned simulated node is
	// still out.
	s, _ := place(t, measure.PreferSimulated, testNode("kwok-1", 110, simulated), testNode("kwok-2", 110, simulated, cordoned), testNode("real", 110))
	if !s.Simulated || chosen(s) != "kwok-1" {
		t.Errorf("simulated placement %s", chosen(s))
	}
	// A Ready node that still carries the lifecycle controller's not-ready taint (it lags the condition: a
	// node just joined) takes the pods; a node that is not Ready does not.
	j, _ := place(t, measure.PreferSimulated, testNode("joined", 110, simulated, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)),
		testNode("gone", 110, simulated, notReady, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)))
	if chosen(j) != "joined" {
		t.Errorf("just-joined placement %s, want joined", chosen(j))
	}
}

// TestPlaceSteering: pods are held on the chosen nodes by name when the scheduler could put them elsewhere
// (simulated nodes without the lab's label and taint; real nodes next to untainted simulated ones).
func TestPlaceSteering(t *testing.T) {
	bare := func(n *corev1.Node) { n.Annotations[kube.SimulatedNodeAnnotation] = kube.SimulatedNodeValue } // no label, no taint
	objs := []runtime.Object{testNode("kwok-1", 110, bare), testNode("kwok-2", 110, bare), testNode("real-1", 110)}
	s, _ := place(t, measure.PreferSimulated, objs...)
	if s.NodeSelector != nil || s.Affinity == nil {
		t.Fatalf("simulated without their label: selector %v affinity %v", s.NodeSelector, s.Affinity)
	}
	req := s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
	// The shorter list: not on the one real node.
	if req.Key != "metadata.name" || req.Operator != corev1.NodeSelectorOpNotIn || strings.Join(req.Values, ",") != "real-1" {
		t.Errorf("simulated affinity %+v", req)
	}
	r, _ := place(t, measure.RealOnly, objs...)
	req = r.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
	if req.Operator != corev1.NodeSelectorOpIn || strings.Join(req.Values, ",") != "real-1" {
		t.Errorf("real affinity %+v", req)
	}
}

// TestPlaceFallsBack: simulated nodes without room send the load to the real ones; neither with room leaves a
// placement where nothing fits.
func TestPlaceFallsBack(t *testing.T) {
	objs := append([]runtime.Object{testNode("kwok-1", 5, simulated), testNode("real-1", 110)}, podsOn("kwok-1", 5, corev1.PodRunning)...)
	p, _ := place(t, measure.PreferSimulated, objs...)
	if p.Simulated || chosen(p) != "real-1" {
		t.Errorf("full simulated nodes: placed on %s (simulated %v)", chosen(p), p.Simulated)
	}
	p, _ = place(t, measure.RealOnly, append([]runtime.Object{testNode("real-1", 3)}, podsOn("real-1", 3, corev1.PodRunning)...)...)
	if p.Free() != 0 || p.Fit(10) != 0 {
		t.Errorf("full node: free %d fit %d", p.Free(), p.Fit(10))
	}
	p, _ = place(t, measure.RealOnly, testNode("real-1", 1))
	if p.Fit(10) != 0 {
		t.Errorf("one slot: fit %d, want 0 (the margin keeps it)", p.Fit(10))
	}
}

// TestPlacePermissions: no right to list nodes is a skip; no right to list pods leaves capacity unchecked
// (the request is trusted, and said so).
func TestPlacePermissions(t *testing.T) {
	cs := kfake.NewClientset(testNode("real-1", 110))
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	})
	var se *measure.SkipError
	if _, err := measure.Place(context.Background(), &measure.Env{Client: cs}, measure.RealOnly); !errors.As(err, &se) {
		t.Errorf("nodes forbidden: %v, want a skip", err)
	}
	cs = kfake.NewClientset(testNode("real-1", 110))
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	p, err := measure.Place(context.Background(), &measure.Env{Client: cs}, measure.RealOnly)
	if err != nil || p.Unchecked == "" || p.Fit(500) != 500 {
		t.Errorf("pods forbidden: %+v %v", p, err)
	}
}

// TestPlaceOn: named nodes must exist and take the pods; a mix of simulated and real is refused.
func TestPlaceOn(t *testing.T) {
	cs, _ := measuretest.Clientset(testNode("a", 110), testNode("b", 110, cordoned), testNode("kwok-1", 110, simulated))
	env := &measure.Env{Client: cs}
	ctx := context.Background()
	if p, err := measure.PlaceOn(ctx, env, []string{"a"}); err != nil || chosen(p) != "a" || p.Free() != 110 {
		t.Errorf("a: %+v %v", p, err)
	}
	for _, bad := range [][]string{{"nope"}, {"b"}, {"a", "kwok-1"}} {
		if _, err := measure.PlaceOn(ctx, env, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestPauseImage: a tagged pause image on every node, the same one every time; none when a node lacks it.
func TestPauseImage(t *testing.T) {
	a := testNode("a", 1, images("registry.k8s.io/pause:3.10", "registry.k8s.io/pause@sha256:ab", "docker.io/library/nginx:1", "kubeslow.local/pause:1"))
	b := testNode("b", 1, images("registry.k8s.io/pause:3.10", "kubeslow.local/pause:1"))
	c := testNode("c", 1, images("kubeslow.local/pause:1"))
	if got := measure.PauseImage([]*corev1.Node{a, b}); got != "registry.k8s.io/pause:3.10" {
		t.Errorf("a, b: %q", got)
	}
	if got := measure.PauseImage([]*corev1.Node{a, b, c}); got != "kubeslow.local/pause:1" {
		t.Errorf("a, b, c: %q", got)
	}
	if got := measure.PauseImage([]*corev1.Node{a, testNode("d", 1)}); got != "" {
		t.Errorf("a, d: %q", got)
	}
}
