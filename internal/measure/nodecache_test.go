package measure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestNodeCacheSharesOneList: three measurements' ListNodes through the run's NodeCache send one LIST (and one
// WATCH) between them, see all 1,200 nodes, and see a node added after the first call.
func TestNodeCacheSharesOneList(t *testing.T) {
	var objs []runtime.Object
	for i := range 1200 {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n-%04d", i),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}}})
	}
	c := fake.NewClientset(objs...)
	env := &Env{Client: c, Nodes: NewNodeCache(c)}
	defer env.Nodes.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		nodes, err := env.ListNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1200 {
			t.Fatalf("%d nodes, want 1200", len(nodes))
		}
		if len(nodes[0].ManagedFields) != 0 {
			t.Fatalf("managed fields kept: %+v", nodes[0].ManagedFields)
		}
		// In name order, as the apiserver lists them (callers take "the first two real nodes").
		if !slices.IsSortedFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("nodes not in name order")
		}
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The watch delivers the new node; poll the cache (not the API) until it does.
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		nodes, err := env.ListNodes(ctx)
		return len(nodes) == 1201, err
	}); err != nil {
		t.Fatalf("the node created later never appeared: %v", err)
	}
	lists, watches := 0, 0
	for _, a := range c.Actions() {
		if a.GetResource().Resource != "nodes" {
			continue
		}
		switch a.GetVerb() {
		case "list":
			lists++
		case "watch":
			watches++
		}
	}
	if lists != 1 || watches != 1 {
		t.Errorf("%d LISTs and %d WATCHes of nodes, want 1 and 1", lists, watches)
	}
}

// TestNodeCacheErrors: no permission to list nodes is a Skip with the reason, not a wait until the
// context ends; another error is an error.
func TestNodeCacheErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		skip bool
	}{
		"forbidden": {apierrors.NewForbidden(corev1.Resource("nodes"), "", errors.New("no")), true},
		"internal":  {apierrors.NewInternalError(errors.New("etcd down")), false},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			env := &Env{Client: c, Nodes: NewNodeCache(c)}
			defer env.Nodes.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := env.ListNodes(ctx)
			var skip *SkipError
			if err == nil || errors.As(err, &skip) != tc.skip || ctx.Err() != nil {
				t.Errorf("err %v (skip %v, context %v), want skip=%v before the time-out", err, errors.As(err, &skip), ctx.Err(), tc.skip)
			}
		})
	}
}
