package lab

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// kwokNode is a simulated node as kwok expects it: annotated for kwok, tainted so that only pods that
// tolerate simulated nodes land there.
func kwokNode(i int) *corev1.Node {
	name := KwokNodeName(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: kube.SimulatedNodeValue, "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{KwokNodeLabel: KwokNodeLabelValue, "kubernetes.io/hostname": name,
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubeslow.dev/lab-node-index": strconv.Itoa(i)},
		},
		// KwokPodCIDR, shared: see its comment (the range allocator then takes no /24 for this node).
		Spec:   corev1.NodeSpec{PodCIDR: KwokPodCIDR, PodCIDRs: []string{KwokPodCIDR}, Taints: []corev1.Taint{{Key: kube.SimulatedNodeTaint, Value: kube.SimulatedNodeValue, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
	}
}

// kwokCreateParallel bounds the node creates in flight: enough to keep the apiserver busy (a create takes
// a few ms, so the admin client's 200 QPS is the limit, 5,000 nodes in ~25 s), few enough not to queue in
// APF's workload-high level behind the controllers.
const kwokCreateParallel = 32

// ensureKwokNodes creates kwok-node-1..n (those that do not exist yet), kwokCreateParallel at a time.
func ensureKwokNodes(ctx context.Context, c kubernetes.Interface, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(kwokCreateParallel)
	for i := 1; i <= n; i++ {
		g.Go(func() error {
			_, err := c.CoreV1().Nodes().Create(ctx, kwokNode(i), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s: %w", KwokNodeName(i), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// nodesReadyTimeout is how long want nodes may take to become Ready: 3 minutes, and 60 ms more per node
// above 3,000 (kwok initialises ~100 nodes/s here; 5,000 nodes get 5 minutes).
func nodesReadyTimeout(want int) time.Duration {
	return max(3*time.Minute, time.Duration(want)*60*time.Millisecond)
}

// waitNodesReady watches nodes matching selector until want of them are Ready.
func waitNodesReady(ctx context.Context, c kubernetes.Interface, selector string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, nodesReadyTimeout(want))
	defer cancel()
	ready := map[string]bool{}
	count := 0
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return c.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	// The wrapper tells the reflector when c cannot stream a watch-list (a fake clientset), so that it lists first.
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, c), &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		n, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		now := ev.Type != watch.Deleted && kube.NodeReady(n)
		if was := ready[n.Name]; was != now {
			count += map[bool]int{true: 1, false: -1}[now]
		}
		if now {
			ready[n.Name] = true
		} else {
			delete(ready, n.Name)
		}
		return count >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Ready nodes (%s): %w", want, selector, err)
	}
	return nil
}

// waitDefaultServiceAccount waits until the controller-manager has made the default ServiceAccount, the
// point from which pods can be created.
func waitDefaultServiceAccount(ctx context.Context, c kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", "default").String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return c.CoreV1().ServiceAccounts("default").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return c.CoreV1().ServiceAccounts("default").Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.ServiceAccount{}, nil, func(ev watch.Event) (bool, error) {
		return ev.Type != watch.Deleted, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default ServiceAccount: %w", err)
	}
	return nil
}
