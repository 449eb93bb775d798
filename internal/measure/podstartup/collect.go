// Package podstartup measures pod start-up by phase — the clusterloader2 PodStartupLatency method and
// kube-burner's conditions, plus local watch times — and attributes a slow start to a phase, a node or a
// throttled creator (case E).
package podstartup

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Timeline is one pod's start-up: local watch-receive times (ns precision) and the server's timestamps
// (1 s precision), kept compact so 10,000 pods cost little memory.
type Timeline struct {
	Name, Node string
	// Server timestamps.
	Created, Scheduled, SandboxReady, Started, Ready time.Time
	// Local times at which the watch first saw: the pod, its node assignment, phase Running with all
	// containers started.
	SeenCreated, SeenScheduled, SeenRunning time.Time
	// PullTime is the image pull time reported by the kubelet's Pulled events (0 if the image was present).
	PullTime time.Duration
	// LastEvent is the last Warning event's reason and message (why a pod did not start).
	LastEvent string
}

// Collector watches the pods of a run (one LIST, then WATCH; never relisting all pods) and their events.
type Collector struct {
	client    kubernetes.Interface
	namespace string
	selector  string
	clock     clock.PassiveClock

	mu         sync.Mutex
	pods       map[string]*Timeline
	running    int
	want       int
	allRunning chan struct{}
	changed    chan struct{}
	stop       context.CancelFunc
	done       sync.WaitGroup
}

// NewCollector watches pods matching selector in namespace. want is how many pods must be Running for
// AllRunning to close (0: never).
func NewCollector(c kubernetes.Interface, namespace, selector string, clk clock.PassiveClock, want int) *Collector {
	return &Collector{client: c, namespace: namespace, selector: selector, clock: clk, pods: map[string]*Timeline{}, want: want,
		allRunning: make(chan struct{}), changed: make(chan struct{}, 1)}
}

// Changed receives a value (coalesced) after the collector has recorded an update of a pod or an event.
func (c *Collector) Changed() <-chan struct{} { return c.changed }

// notify signals Changed without blocking; called with c.mu held.
func (c *Collector) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Start begins watching; it returns once both informers have synced.
func (c *Collector) Start(ctx context.Context) error {
	ctx, c.stop = context.WithCancel(ctx)
	podLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = c.selector
			return c.client.CoreV1().Pods(c.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = c.selector
			return c.client.CoreV1().Pods(c.namespace).Watch(ctx, o)
		},
	}
	evSel := fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()
	evLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = evSel
			return c.client.CoreV1().Events(c.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = evSel
			return c.client.CoreV1().Events(c.namespace).Watch(ctx, o)
		},
	}
	// The wrappers keep the clients' word on streaming-list support (fake clientsets have none).
	podInf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(podLW, c.client),
		&corev1.Pod{}, 0, cache.Indexers{})
	evInf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(evLW, c.client),
		&corev1.Event{}, 0, cache.Indexers{})
	// Transform drops what the timeline does not need before the informer stores it.
	_ = podInf.SetTransform(func(o any) (any, error) {
		if p, ok := o.(*corev1.Pod); ok {
			c.observe(p)
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion}}, nil
		}
		return o, nil
	})
	_ = evInf.SetTransform(func(o any) (any, error) {
		if e, ok := o.(*corev1.Event); ok {
			c.event(e)
			return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, ResourceVersion: e.ResourceVersion}}, nil
		}
		return o, nil
	})
	for _, inf := range []cache.SharedIndexInformer{podInf, evInf} {
		c.done.Add(1)
		go func() { defer c.done.Done(); inf.RunWithContext(ctx) }()
	}
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, evInf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

// Stop ends the watches.
func (c *Collector) Stop() {
	if c.stop != nil {
		c.stop()
	}
	c.done.Wait()
}

// AllRunning is closed when the wanted number of pods has been seen Running.
func (c *Collector) AllRunning() <-chan struct{} { return c.allRunning }

// Timelines returns a copy of every pod's timeline.
func (c *Collector) Timelines() []Timeline {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Timeline, 0, len(c.pods))
	for _, t := range c.pods {
		out = append(out, *t)
	}
	return out
}

func condTime(p *corev1.Pod, t corev1.PodConditionType) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// started returns the latest container start time if every container has started.
func started(p *corev1.Pod) (time.Time, bool) {
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) || len(p.Spec.Containers) == 0 {
		return time.Time{}, false
	}
	var last time.Time
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil {
			return time.Time{}, false
		}
		if t := s.State.Running.StartedAt.Time; t.After(last) {
			last = t
		}
	}
	return last, true
}

func (c *Collector) observe(p *corev1.Pod) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify()
	t := c.pods[p.Name]
	if t == nil {
		t = &Timeline{Name: p.Name}
		c.pods[p.Name] = t
	}
	// The pod's own watch may see it after one of its events (the events come on another watch: under load the
	// scheduler's Scheduled event can arrive first); its first sighting is this one either way.
	if t.SeenCreated.IsZero() {
		t.Created, t.SeenCreated = p.CreationTimestamp.Time, now
	}
	if p.Spec.NodeName != "" {
		t.Node = p.Spec.NodeName
		if t.SeenScheduled.IsZero() {
			t.SeenScheduled = now
		}
	}
	if s := condTime(p, corev1.PodScheduled); !s.IsZero() {
		t.Scheduled = s
	}
	if s := condTime(p, corev1.PodReadyToStartContainers); !s.IsZero() {
		t.SandboxReady = s
	}
	if s := condTime(p, corev1.PodReady); !s.IsZero() {
		t.Ready = s
	}
	if st, ok := started(p); ok && p.Status.Phase == corev1.PodRunning {
		t.Started = st
		if t.SeenRunning.IsZero() {
			t.SeenRunning = now
			c.running++
			if c.want > 0 && c.running == c.want {
				close(c.allRunning)
			}
		}
	}
}

// pulledIn reads the pull durations from the kubelet's Pulled message: `Successfully pulled image "x" in 407ms
// (407ms including waiting)` (Go durations: "1m5.981s" past a minute). The pod's pull phase is the second, which
// includes the wait for the node's puller (serializeImagePulls, maxParallelImagePulls); the first alone when
// the kubelet (before 1.28) gave no other.
var pulledIn = regexp.MustCompile(`Successfully pulled image .* in ([0-9.hmsuµn]+)(?: \(([0-9.hmsuµn]+) including waiting\))?`)

func (c *Collector) event(e *corev1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify()
	t := c.pods[e.InvolvedObject.Name]
	if t == nil {
		t = &Timeline{Name: e.InvolvedObject.Name}
		c.pods[e.InvolvedObject.Name] = t
	}
	switch {
	case e.Reason == "Pulled":
		if m := pulledIn.FindStringSubmatch(e.Message); m != nil {
			d, err := time.ParseDuration(m[1])
			if w, werr := time.ParseDuration(m[2]); m[2] != "" && werr == nil {
				d, err = w, nil
			}
			if err == nil {
				t.PullTime += d
			}
		}
	case e.Type == corev1.EventTypeWarning:
		t.LastEvent = e.Reason + ": " + strings.TrimSpace(e.Message)
	}
}

// Timeline returns one pod's timeline so far.
func (c *Collector) Timeline(name string) (Timeline, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.pods[name]
	if !ok {
		return Timeline{}, false
	}
	return *t, true
}
