package measure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NodeCache is a run's one view of the cluster's nodes, shared by every measurement that lists them
// (Env.ListNodes): a node informer — one LIST in pages of 500, then one WATCH — started by the first caller
// and read from its store by every later one. Without it each of the ~8 measurements that need the nodes sent
// its own paginated LIST: at 5,000 nodes, ten pages and ~15 MiB each time (docs/scale.md).
type NodeCache struct {
	client kubernetes.Interface

	once     sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	informer cache.SharedIndexInformer

	mu  sync.Mutex
	err error // the LIST's or WATCH's last error until the store synced (Forbidden: a Skip)
}

// NewNodeCache returns a cache that starts on its first List.
func NewNodeCache(c kubernetes.Interface) *NodeCache {
	return &NodeCache{client: c, stop: make(chan struct{})}
}

// List returns every node, waiting (at most ctx) for the informer's first sync; no permission to list or
// watch nodes is a SkipError, another error of the first LIST an error.
func (n *NodeCache) List(ctx context.Context) ([]corev1.Node, error) {
	n.once.Do(n.start)
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		if n.informer.HasSynced() {
			return true, nil
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.err != nil, nil
	})
	if !n.informer.HasSynced() {
		n.mu.Lock()
		lerr := n.err
		n.mu.Unlock()
		switch {
		case apierrors.IsForbidden(lerr):
			return nil, Skipf("no permission to list nodes: %v", lerr)
		case lerr != nil:
			return nil, fmt.Errorf("listing nodes: %w", lerr)
		default:
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
	}
	objs := n.informer.GetStore().List()
	out := make([]corev1.Node, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*corev1.Node)) // a shallow copy: callers only read
	}
	// In name order, as the apiserver lists them (etcd's key order): the store's order is a map's, and callers
	// pick "the first two real nodes" and the like.
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (n *NodeCache) start() {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return n.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return n.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	n.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, n.client), &corev1.Node{}, 0, cache.Indexers{})
	// Managed fields are the API server's bookkeeping, read by no measurement: not kept for every node.
	_ = n.informer.SetTransform(func(o any) (any, error) {
		if a, err := meta.Accessor(o); err == nil {
			a.SetManagedFields(nil)
		}
		return o, nil
	})
	_ = n.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
	})
	go n.informer.Run(n.stop)
}

// Stop ends the informer's WATCH (the runner calls it at the end of the run; a cache never listed has none).
func (n *NodeCache) Stop() {
	n.stopOnce.Do(func() { close(n.stop) })
}
