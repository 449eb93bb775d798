// Package podstartup measures pod start-up by phase — the clusterloader2 PodStartupLatency method and
// kube-burner's conditions, plus local watch times — and attributes a slow start to a phase, a node or a
// throttled creator (case E).
package podstartup

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/source/kube"
)

// Timeline is one pod's start-up: local watch-receive times (ns precision) and the server's timestamps
// (1 s precision), kept compact so 10,000 pods cost little memory.
type Timeline struct {
	// Name is the pod's name; "namespace/name" when the collector watches every namespace.
	Name, Node string
	// Server timestamps.
	Created, Scheduled, SandboxReady, Started, Ready time.Time
	// Local times at which the watch first received: the pod, its node assignment, phase Running with all
	// containers started. Each is taken when the event comes off the watch stream, before any other work.
	SeenCreated, SeenScheduled, SeenRunning time.Time
	// SeenPhaseRunning is when the watch first received the pod with status.phase Running, whatever its
	// containers say: clusterloader2's "run" (and "watch") time.
	SeenPhaseRunning time.Time
	// Preexisting pods were in the initial LIST: they existed before the collector started, so their
	// start-up was not observed (a passive run's old replicas); Analyze leaves them out.
	Preexisting bool
	// PullTime is the image pull time reported by the kubelet's Pulled events (0 if the image was present).
	PullTime time.Duration
	// LastEvent is the last Warning event's reason and message (why a pod did not start).
	LastEvent string
	// Events are the pod's Events that slow a start-up (ClassifyEvent), one per Event object.
	Events []PodEvent
}

// Collector watches the pods of a run and their events: one LIST then a WATCH each, on a goroutine of its
// own per stream that stamps every event with the clock as it comes off the stream (see watchLoop). It never
// relists all pods unless the apiserver ends the watch with 410 Gone.
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

// NewCollector watches pods matching selector in namespace ("": every namespace). want is how many pods
// (not preexisting) must be Running for AllRunning to close (0: never). c should be the collector's own
// client (WatchClient), so that nothing else's requests or rate limiter sit in front of its watches.
func NewCollector(c kubernetes.Interface, namespace, selector string, clk clock.PassiveClock, want int) *Collector {
	return &Collector{client: c, namespace: namespace, selector: selector, clock: clk, pods: map[string]*Timeline{}, want: want,
		allRunning: make(chan struct{}), changed: make(chan struct{}, 1)}
}

// WatchClient returns a clientset of the collector's own from cfg: its own rate limiter (the creator's
// limiter never delays a watch or a relist) and its own connection (a dialer of its own keeps client-go
// from sharing the cached transport, so the watch streams do not share an HTTP/2 connection's flow control
// and frame writer with the creator's requests). fallback is used when cfg is nil (tests).
func WatchClient(cfg *rest.Config, fallback kubernetes.Interface) (kubernetes.Interface, error) {
	if cfg == nil {
		return fallback, nil
	}
	c := rest.CopyConfig(cfg)
	c.RateLimiter, c.QPS, c.Burst = nil, 50, 100
	if c.Transport == nil && c.Dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		c.Dial = d.DialContext
	}
	return kubernetes.NewForConfig(c)
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

func (c *Collector) key(ns, name string) string {
	if c.namespace == "" {
		return ns + "/" + name
	}
	return name
}

// Start lists the pods and their events, then watches both; it returns once both lists are in.
func (c *Collector) Start(ctx context.Context) error {
	sel, err := labels.Parse(c.selector)
	if err != nil {
		return fmt.Errorf("label selector %q: %w", c.selector, err)
	}
	ctx, c.stop = context.WithCancel(ctx)
	pods := c.client.CoreV1().Pods(c.namespace)
	podStream := stream{
		list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			o.LabelSelector = c.selector
			l, err := pods.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return objects(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = c.selector
			return pods.Watch(ctx, o)
		},
		handle: func(o runtime.Object, at time.Time, initial bool) {
			// The apiserver filters by the selector; checked again so that a pod that is not selected never
			// counts, whatever the server (or a fake) sends.
			if p, ok := o.(*corev1.Pod); ok && (c.namespace == "" || p.Namespace == c.namespace) && sel.Matches(labels.Set(p.Labels)) {
				c.observe(p, at, initial)
			}
		},
	}
	evSel := fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()
	events := c.client.CoreV1().Events(c.namespace)
	evStream := stream{
		list: func(ctx context.Context, o metav1.ListOptions) ([]runtime.Object, string, error) {
			o.FieldSelector = evSel
			l, err := events.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return objects(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = evSel
			return events.Watch(ctx, o)
		},
		handle: func(o runtime.Object, _ time.Time, _ bool) {
			if e, ok := o.(*corev1.Event); ok {
				c.event(e)
			}
		},
	}
	rvs := make([]string, 2)
	for i, s := range []stream{podStream, evStream} {
		rv, err := s.relist(ctx, c.clock, true)
		if err != nil {
			c.stop()
			return err
		}
		rvs[i] = rv
	}
	for i, s := range []stream{podStream, evStream} {
		c.done.Add(1)
		go func() { defer c.done.Done(); s.watchLoop(ctx, c.clock, rvs[i]) }()
	}
	return nil
}

// stream is one LIST+WATCH: handle gets each object with the time it was received (initial: from the first
// LIST, which is what the cluster held before the collector started).
type stream struct {
	list   func(context.Context, metav1.ListOptions) ([]runtime.Object, string, error)
	watch  func(context.Context, metav1.ListOptions) (watch.Interface, error)
	handle func(o runtime.Object, at time.Time, initial bool)
}

func (s stream) relist(ctx context.Context, clk clock.PassiveClock, initial bool) (string, error) {
	objs, rv, err := s.list(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	at := clk.Now()
	for _, o := range objs {
		s.handle(o, at, initial)
	}
	return rv, nil
}

// watchLoop watches from rv until ctx ends: on a closed stream it watches again from the last resource
// version seen, on 410 Gone it relists (the pods' later transitions are then seen at the relist's time).
// The time of each event is read as it is received from the stream, before it is handled; handling is a
// map update under a mutex (no informer store or queue in between).
func (s stream) watchLoop(ctx context.Context, clk clock.PassiveClock, rv string) {
	retry := time.Duration(0)
	for ctx.Err() == nil {
		if retry > 0 {
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		w, err := s.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			retry = min(max(2*retry, 100*time.Millisecond), 5*time.Second)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				if nrv, lerr := s.relist(ctx, clk, false); lerr == nil {
					rv = nrv
				}
			}
			continue
		}
		retry = 0
		rv = s.consume(ctx, clk, w, rv)
	}
}

// consume reads one watch stream to its end and returns the last resource version seen ("" after 410 Gone,
// once relisted: the relist's).
func (s stream) consume(ctx context.Context, clk clock.PassiveClock, w watch.Interface, rv string) string {
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv
		case ev, ok = <-w.ResultChan():
		}
		at := clk.Now() // on receipt, before anything else
		if !ok {
			return rv
		}
		switch ev.Type {
		case watch.Error:
			if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
				if nrv, err := s.relist(ctx, clk, false); err == nil {
					return nrv
				}
			}
			return rv
		case watch.Bookmark, watch.Added, watch.Modified, watch.Deleted:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				rv = m.GetResourceVersion()
			}
			if ev.Type != watch.Bookmark && ev.Type != watch.Deleted {
				s.handle(ev.Object, at, false)
			}
		}
	}
}

// SetWant lowers the number of pods AllRunning waits for to n, when fewer pods than asked were created
// (creates refused while the apiserver restarted or etcd stalled): the run must not wait out its time-out
// for pods that do not exist. n above the current count is ignored.
func (c *Collector) SetWant(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.want <= 0 || n >= c.want {
		return
	}
	closed := c.running >= c.want
	c.want = n
	if !closed && c.running >= n {
		close(c.allRunning)
	}
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
		x := *t
		x.Events = append([]PodEvent(nil), t.Events...)
		out = append(out, x)
	}
	return out
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

// observe records a pod's state as received at at (initial: from the first LIST).
func (c *Collector) observe(p *corev1.Pod, at time.Time, initial bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify()
	k := c.key(p.Namespace, p.Name)
	t := c.pods[k]
	if t == nil {
		t = &Timeline{Name: k}
		c.pods[k] = t
	}
	// The pod's own watch may see it after one of its events (the events come on another watch: under load the
	// scheduler's Scheduled event can arrive first); its first sighting is this one either way.
	if t.SeenCreated.IsZero() {
		t.Created, t.SeenCreated, t.Preexisting = p.CreationTimestamp.Time, at, initial
	}
	if p.Spec.NodeName != "" {
		t.Node = p.Spec.NodeName
		if t.SeenScheduled.IsZero() {
			t.SeenScheduled = at
		}
	}
	if s := kube.PodTrueSince(p, corev1.PodScheduled); !s.IsZero() {
		t.Scheduled = s
	}
	if s := kube.PodTrueSince(p, corev1.PodReadyToStartContainers); !s.IsZero() {
		t.SandboxReady = s
	}
	if s := kube.PodTrueSince(p, corev1.PodReady); !s.IsZero() {
		t.Ready = s
	}
	if p.Status.Phase == corev1.PodRunning && t.SeenPhaseRunning.IsZero() {
		t.SeenPhaseRunning = at
	}
	if st, ok := started(p); ok && p.Status.Phase == corev1.PodRunning {
		t.Started = st
		if t.SeenRunning.IsZero() {
			t.SeenRunning = at
			if !t.Preexisting {
				c.running++
				if c.want > 0 && c.running == c.want {
					close(c.allRunning)
				}
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
	k := c.key(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
	if e.InvolvedObject.Namespace == "" {
		k = c.key(e.Namespace, e.InvolvedObject.Name)
	}
	t := c.pods[k]
	if t == nil {
		t = &Timeline{Name: k}
		c.pods[k] = t
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
	if cl, ok := ClassifyEvent(e.Reason, e.Message); ok {
		t.Events = recordEvent(t.Events, podEventOf(e, cl))
	}
}

// podEventOf is e as a PodEvent: its count and times from the core/v1 fields, or from its series and event
// time (events.k8s.io/v1 writers fill those instead).
func podEventOf(e *corev1.Event, cl EventClass) PodEvent {
	pe := PodEvent{UID: string(e.UID), Class: cl, Count: int(e.Count), First: e.FirstTimestamp.Time, Last: e.LastTimestamp.Time,
		Message: strings.TrimSpace(e.Message)}
	if pe.First.IsZero() {
		pe.First = e.EventTime.Time
	}
	if e.Series != nil {
		pe.Count = max(pe.Count, int(e.Series.Count))
		if t := e.Series.LastObservedTime.Time; t.After(pe.Last) {
			pe.Last = t
		}
	}
	if pe.Last.IsZero() {
		pe.Last = pe.First
	}
	pe.Count = max(pe.Count, 1)
	return pe
}

// Timeline returns one pod's timeline so far (name: "namespace/name" when the collector watches every
// namespace).
func (c *Collector) Timeline(name string) (Timeline, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.pods[name]
	if !ok {
		return Timeline{}, false
	}
	return *t, true
}

// objects are a list's items as objects (pointers into the list, not copies).
func objects[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}
