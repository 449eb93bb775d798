// Package storm generates the abusive API traffic of the lab's fault scenarios, against the real apiserver:
// a LIST storm (case B: a per-node agent LISTing Events) and a conflict storm (case E: CNI IPAM clients racing
// to update the same blocks and retrying on 409). Every storm is bounded in time and rate.
package storm

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Counts are what a storm did.
type Counts struct {
	Requests  atomic.Int64
	Conflicts atomic.Int64
	Errors    atomic.Int64
}

func (c *Counts) String() string {
	return fmt.Sprintf("requests=%d conflicts=%d errors=%d", c.Requests.Load(), c.Conflicts.Load(), c.Errors.Load())
}

// ListOptions configure a LIST storm.
type ListOptions struct {
	Namespace string // "" = all namespaces
	Clients   int
	// Interval between one client's LISTs.
	Interval  time.Duration
	UserAgent string
	Duration  time.Duration
	// SeedEvents is how many Events to create first, so that each LIST is large.
	SeedEvents int
}

// ListEvents runs Clients goroutines that each LIST Events every Interval (full LISTs, no resourceVersion:
// served from etcd, like the monitoring agent of case B), until Duration or ctx ends.
func ListEvents(ctx context.Context, cfg *rest.Config, o ListOptions, log *slog.Logger) (*Counts, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = o.UserAgent
	cfg.QPS, cfg.Burst = float32(o.Clients)*2, o.Clients*2
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := SeedEvents(ctx, c, o.SeedEvents); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	counts := &Counts{}
	var wg sync.WaitGroup
	for i := 0; i < o.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the clients over the interval, as agents on different nodes would be.
			jitter := time.Duration(rand.Int64N(int64(o.Interval) + 1))
			t := time.NewTimer(jitter)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				_, err := c.CoreV1().Events(o.Namespace).List(ctx, metav1.ListOptions{})
				counts.Requests.Add(1)
				if err != nil && ctx.Err() == nil {
					counts.Errors.Add(1)
				}
				t.Reset(o.Interval)
			}
		}()
	}
	log.Info("list storm running", "clients", o.Clients, "interval", o.Interval, "userAgent", o.UserAgent, "duration", o.Duration)
	wg.Wait()
	return counts, nil
}

// SeedReason is the reason of the Events SeedEvents creates.
const SeedReason = "LabStorm"

// SeedEvents makes sure the n Events kubeslow-lab-storm-00000… exist in the default namespace: one LIST of
// those seeded already (they stay for the apiserver's Event TTL, an hour: a lab's second LIST storm finds
// them), then the missing ones created, 8 at a time; the client's own rate limit bounds the rate.
func SeedEvents(ctx context.Context, c kubernetes.Interface, n int) error {
	if n <= 0 {
		return nil
	}
	l, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + SeedReason})
	if err != nil {
		return fmt.Errorf("seeding events: listing those seeded before: %w", err)
	}
	have := map[string]bool{}
	for _, ev := range l.Items {
		if ev.Reason == SeedReason {
			have[ev.Name] = true
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := 0; i < n; i++ {
		if !have[seedName(i)] {
			g.Go(func() error { return seedEvent(ctx, c, i) })
		}
	}
	return g.Wait()
}

func seedName(i int) string { return fmt.Sprintf("kubeslow-lab-storm-%05d", i) }

func seedEvent(ctx context.Context, c kubernetes.Interface, i int) error {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: seedName(i), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("kwok-node-%d", i%50+1)},
		Reason:         SeedReason, Message: "seeded by the list-storm scenario so that each LIST is large " + fmt.Sprint(i),
		Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "kubeslow-lab"},
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	if _, err := c.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("seeding events: %w", err)
	}
	return nil
}

// IPAMBlockGVR is the lab's stand-in for Calico's IPAMBlock (crd.projectcalico.org/v1).
var IPAMBlockGVR = schema.GroupVersionResource{Group: "lab.kubeslow.dev", Version: "v1", Resource: "ipamblocks"}

// ConflictOptions configure a conflict storm.
type ConflictOptions struct {
	// Clients are the racing writers (one per "node" in case E); Blocks the shared objects they race on.
	Clients, Blocks int
	// QPS bounds each client's attempts per second (retries included).
	QPS       float64
	UserAgent string
	Duration  time.Duration
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ensureIPAMBlockCRD creates the CRD (through the dynamic client: no apiextensions dependency) and waits
// until it is established.
func ensureIPAMBlockCRD(ctx context.Context, dc dynamic.Interface) error {
	name := IPAMBlockGVR.Resource + "." + IPAMBlockGVR.Group
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/managed-by": "kubeslow-lab"}},
		"spec": map[string]any{
			"group": IPAMBlockGVR.Group, "scope": "Cluster",
			"names": map[string]any{"plural": "ipamblocks", "singular": "ipamblock", "kind": "IPAMBlock", "listKind": "IPAMBlockList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := dc.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// Conflicts creates Blocks IPAMBlocks and runs Clients writers that each repeatedly read a block, allocate an
// address in it and update it, retrying at once on 409 Conflict, as Calico's IPAM did in case E.
func Conflicts(ctx context.Context, cfg *rest.Config, o ConflictOptions, log *slog.Logger) (*Counts, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = o.UserAgent
	cfg.QPS, cfg.Burst = float32(o.QPS*float64(o.Clients))+1, o.Clients*2
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := ensureIPAMBlockCRD(ctx, dc); err != nil {
		return nil, fmt.Errorf("IPAMBlock CRD: %w", err)
	}
	blocks := dc.Resource(IPAMBlockGVR)
	for b := 0; b < o.Blocks; b++ {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": IPAMBlockGVR.Group + "/" + IPAMBlockGVR.Version, "kind": "IPAMBlock",
			"metadata": map[string]any{"name": blockName(b)},
			"spec":     map[string]any{"cidr": fmt.Sprintf("198.18.%d.0/26", 200+b), "allocations": []any{}},
		}}
		if _, err := blocks.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	counts := &Counts{}
	var wg sync.WaitGroup
	for i := 0; i < o.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := rate.NewLimiter(rate.Limit(o.QPS), 1)
			for n := 0; ctx.Err() == nil; n++ {
				name := blockName(rand.IntN(o.Blocks))
				for ctx.Err() == nil { // retry on conflict, immediately
					if lim.Wait(ctx) != nil {
						return
					}
					obj, err := blocks.Get(ctx, name, metav1.GetOptions{})
					counts.Requests.Add(1)
					if err != nil {
						counts.Errors.Add(1)
						break
					}
					allocs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "allocations")
					allocs = append(allocs, fmt.Sprintf("client-%d-%d", i, n))
					if len(allocs) > 64 { // a /26 is full: free the oldest, as pods go away
						allocs = allocs[len(allocs)-64:]
					}
					_ = unstructured.SetNestedSlice(obj.Object, allocs, "spec", "allocations")
					_, err = blocks.Update(ctx, obj, metav1.UpdateOptions{})
					counts.Requests.Add(1)
					if apierrors.IsConflict(err) {
						counts.Conflicts.Add(1)
						continue
					}
					if err != nil && ctx.Err() == nil {
						counts.Errors.Add(1)
					}
					break
				}
			}
		}()
	}
	log.Info("conflict storm running", "clients", o.Clients, "blocks", o.Blocks, "qps", o.QPS, "userAgent", o.UserAgent, "duration", o.Duration)
	wg.Wait()
	return counts, nil
}

func blockName(i int) string { return fmt.Sprintf("198-18-%d-0-26", 200+i) }
