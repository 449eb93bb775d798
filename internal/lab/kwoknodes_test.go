package lab

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// TestKwokPodCIDRPlan checks the address plan that lifts the node limit: the simulated nodes' shared pod CIDR is
// the upper half of the cluster's pod CIDR (so the range allocator occupies it and hands real nodes /24s of the
// lower half only), holds MaxKwokPods addresses, and does not reach the service or node networks.
func TestKwokPodCIDRPlan(t *testing.T) {
	pods, kwok := netip.MustParsePrefix(PodCIDR), netip.MustParsePrefix(KwokPodCIDR)
	if !pods.Contains(kwok.Addr()) || kwok.Bits() <= pods.Bits() {
		t.Fatalf("%s is not inside %s", KwokPodCIDR, PodCIDR)
	}
	if got := 1<<(32-kwok.Bits()) - 2; got != MaxKwokPods {
		t.Errorf("%s holds %d pods, MaxKwokPods says %d", KwokPodCIDR, got, MaxKwokPods)
	}
	// Real nodes' /24 blocks left to the allocator: those of PodCIDR outside KwokPodCIDR.
	free := 1<<(NodeCIDRMask-pods.Bits()) - 1<<(NodeCIDRMask-kwok.Bits())
	if free < MaxRealNodes+1 { // +1: the kubeadm layout's control-plane node
		t.Errorf("%d /%d blocks left for %d real nodes", free, NodeCIDRMask, MaxRealNodes+1)
	}
	for _, c := range []string{ServiceCIDR, NodeNetCIDR} {
		if p := netip.MustParsePrefix(c); p.Overlaps(kwok) {
			t.Errorf("%s overlaps %s", c, KwokPodCIDR)
		}
	}
	n := kwokNode(MaxKwokNodes)
	if n.Spec.PodCIDR != KwokPodCIDR || len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != KwokPodCIDR {
		t.Errorf("kwok node's pod CIDRs %q %v, want %s", n.Spec.PodCIDR, n.Spec.PodCIDRs, KwokPodCIDR)
	}
	if (&Config{Nodes: MaxKwokNodes}).Validate() != nil || (&Config{Nodes: 5000}).Validate() != nil {
		t.Error("5,000 and MaxKwokNodes simulated nodes refused")
	}
}

// TestEnsureKwokNodes creates 600 nodes through a real client against an HTTP server whose creates take a
// little time, and checks every node is created once, that creates overlap (bounded by kwokCreateParallel),
// and that a second call, with the nodes there (409 AlreadyExists), creates nothing and fails nothing.
func TestEnsureKwokNodes(t *testing.T) {
	var mu sync.Mutex
	nodes := map[string]bool{}
	var inFlight, peak, posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/nodes" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		posts.Add(1)
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		var n corev1.Node
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(5 * time.Millisecond) // a create's latency, so that parallel creates overlap
		mu.Lock()
		exists := nodes[n.Name]
		nodes[n.Name] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if exists {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(apierrors.NewAlreadyExists(corev1.Resource("nodes"), n.Name).Status())
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&n)
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	if err := ensureKwokNodes(context.Background(), c, n); err != nil {
		t.Fatal(err)
	}
	if len(nodes) != n || posts.Load() != n {
		t.Fatalf("%d nodes from %d creates, want %d", len(nodes), posts.Load(), n)
	}
	if p := peak.Load(); p < 2 || p > kwokCreateParallel {
		t.Errorf("%d creates in flight at most, want 2..%d", p, kwokCreateParallel)
	}
	if err := ensureKwokNodes(context.Background(), c, n); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if len(nodes) != n || posts.Load() != 2*n {
		t.Errorf("%d nodes from %d creates after the second call, want %d from %d", len(nodes), posts.Load(), n, 2*n)
	}
}

// TestWaitNodesReady: waitNodesReady returns once want nodes are Ready, counting a node that turns NotReady or is
// deleted out again.
func TestWaitNodesReady(t *testing.T) {
	node := func(name string, ready bool) *corev1.Node {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"k": "v"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	}
	c := fake.NewClientset(node("a", true), node("b", false))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waitNodesReady(ctx, c, "k=v", 2) }()
	nodes := c.CoreV1().Nodes()
	// a turns NotReady, then b and c become Ready: 2 Ready (b, c) only once c is.
	steps := []func() error{
		func() error { _, err := nodes.Update(ctx, node("a", false), metav1.UpdateOptions{}); return err },
		func() error { _, err := nodes.Update(ctx, node("b", true), metav1.UpdateOptions{}); return err },
		func() error { return nodes.Delete(ctx, "b", metav1.DeleteOptions{}) },
		func() error { _, err := nodes.Create(ctx, node("c", true), metav1.CreateOptions{}); return err },
	}
	for i, s := range steps {
		select {
		case err := <-done:
			t.Fatalf("returned (%v) after %d of %d changes, with fewer than 2 nodes Ready", err, i, len(steps))
		default:
		}
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodes.Update(ctx, node("a", true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := nodesReadyTimeout(5000); got != 5*time.Minute {
		t.Errorf("timeout for 5,000 nodes %s, want 5m", got)
	}
}
