// Package measure defines what a measurement is and how measurements are registered and run.
//
// A measurement is one package under internal/measure/<name> (internal/bench/<name> when only `kubeslow
// bench` runs it) that implements Measurement; it is added to kubeslow by its Spec (spec.go) and one line in
// internal/engine/catalogue.Specs.
package measure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Env is everything a measurement may use. Measurements must not reach for globals.
type Env struct {
	// Client and Config talk to the cluster under test.
	Client kubernetes.Interface
	Config *rest.Config
	// Clock is the time source; tests pass a fake clock.
	Clock clock.Clock
	Log   *slog.Logger
	// Namespace is where the measurement may create objects; it belongs to this run.
	Namespace string
	// RunID is the value of the run label that every created object must carry (see internal/source/kube).
	RunID string
	// NodeTier is the run's shared control-plane node tier (nil: none; NodeTierOff says why).
	NodeTier    NodeTier
	NodeTierOff string
	// Scrapes shares each step's scrape of a source between the measurements that read it (nil: each
	// fetches its own).
	Scrapes *SharedScrapes
	// Cadvisor shares each real node's cAdvisor scrape at a window end between its readers (system.throttling,
	// pods.resources): one request per node per window end (nil: each reader scrapes its own).
	Cadvisor *kubelet.Cadvisor
	// Nodes is the run's shared node informer (nil: ListNodes sends its own paginated LIST).
	Nodes *NodeCache
	// BenchDeadline is when the run's --budget for benchmarks ends (zero: no budget): a benchmark's waits on
	// the cluster (WaitBound, BoundContext, WaitRunning) stop there, and it reports what it saw.
	BenchDeadline time.Time
	// There is no lab here on purpose: a measurement learns about the cluster only from the cluster (the API,
	// the kubelet through the node proxy, the node agent, an optional Prometheus) and from what the user states
	// in flags, so kubeslow's own lab is measured as any other cluster (TestNoLabImports enforces the imports).
}

// Measurement is one kind of measurement.
type Measurement interface {
	// Name is stable and dotted, e.g. "pods.startup"; it names the Result.
	Name() string
	// Description is one line for --help and reports.
	Description() string
	// Run measures. A returned error means "could not measure" (the result becomes Error, or Skip for a
	// SkipError); a measured problem is a Result with status Warn or Fail and no error.
	Run(ctx context.Context, env *Env) (result.Result, error)
}

// Kind tells read-only checks from benchmarks that create load or objects.
type Kind int

const (
	// ReadOnly measurements only read the cluster; they run first and need only read RBAC.
	ReadOnly Kind = iota
	// Benchmark measurements create objects or load; they run after the read-only ones within a budget.
	Benchmark
)

// KindOf returns m's kind: its Spec's (SpecOf), ReadOnly for a measurement no Spec declares.
func KindOf(m Measurement) Kind {
	if s, ok := SpecOf(m); ok {
		return s.Kind
	}
	return ReadOnly
}

// Loader is implemented by benchmarks that send requests at a rate of their own (pod creation at a set QPS):
// the run's client-side limit gets that much headroom on top of kubeslow's own reads, so kubeslow does not
// throttle its own benchmark.
type Loader interface {
	ClientLoad() (qps float32, burst int)
}

// ReadOnlyOf returns the read-only measurements of ms (what `run --read-only` runs).
func ReadOnlyOf(ms []Measurement) []Measurement {
	var out []Measurement
	for _, m := range ms {
		if KindOf(m) == ReadOnly {
			out = append(out, m)
		}
	}
	return out
}

// SkipError says a measurement could not run for a reason that is not a fault: missing permission,
// a capability the cluster lacks, a source that is unreachable by design.
type SkipError struct {
	Reason string
	// OutOfReach are the signals the skip leaves unread, each with why and the fix (the result carries them).
	OutOfReach []result.OutOfReach
}

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// Skipf returns a SkipError.
func Skipf(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

// Registry is an explicit, ordered set of measurements.
type Registry struct {
	byName map[string]Measurement
	order  []string
}

// NewRegistry returns a registry holding ms; it panics on a duplicate name, which is a programming error.
func NewRegistry(ms ...Measurement) *Registry {
	r := &Registry{byName: map[string]Measurement{}}
	for _, m := range ms {
		if _, dup := r.byName[m.Name()]; dup {
			panic("measure: duplicate measurement " + m.Name())
		}
		r.byName[m.Name()] = m
		r.order = append(r.order, m.Name())
	}
	return r
}

// All returns the measurements in registration order.
func (r *Registry) All() []Measurement {
	out := make([]Measurement, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.byName[n])
	}
	return out
}

// Select returns the measurements to run: all of them, or those named in only, minus those in skip.
// Names may be prefixes ending in "." ("pods." selects every pods measurement). Unknown names are errors.
func (r *Registry) Select(only, skip []string) ([]Measurement, error) {
	match := func(pattern, name string) bool {
		if pattern == name {
			return true
		}
		return len(pattern) > 0 && pattern[len(pattern)-1] == '.' && len(name) > len(pattern) && name[:len(pattern)] == pattern
	}
	check := func(list []string) error {
		for _, p := range list {
			found := false
			for _, n := range r.order {
				if match(p, n) {
					found = true
					break
				}
			}
			if !found {
				names := append([]string(nil), r.order...)
				sort.Strings(names)
				return fmt.Errorf("unknown measurement %q (known: %v)", p, names)
			}
		}
		return nil
	}
	if err := check(only); err != nil {
		return nil, err
	}
	if err := check(skip); err != nil {
		return nil, err
	}
	var out []Measurement
	for _, n := range r.order {
		sel := len(only) == 0
		for _, p := range only {
			sel = sel || match(p, n)
		}
		for _, p := range skip {
			if match(p, n) {
				sel = false
			}
		}
		if sel {
			out = append(out, r.byName[n])
		}
	}
	return out, nil
}

// RunOne runs m and always returns a well-formed Result: errors become Error (or Skip) with the reason,
// and the start and end times are filled in.
func RunOne(ctx context.Context, env *Env, m Measurement) result.Result {
	start := env.Clock.Now()
	res, err := m.Run(kube.WithMeasurement(ctx, m.Name()), env) // its API requests counted as its own
	return Complete(env, m.Name(), start, res, err)
}

// Complete makes a well-formed Result of what a measurement returned: its name, start and end times, and an
// error turned into Error (or Skip for a SkipError) with the reason.
func Complete(env *Env, name string, start time.Time, res result.Result, err error) result.Result {
	if res.Name == "" {
		res.Name = name
	}
	if res.Start.IsZero() {
		res.Start = start
	}
	if res.End.IsZero() {
		res.End = env.Clock.Now()
	}
	var skip *SkipError
	switch {
	case errors.As(err, &skip):
		res.Status, res.Reason = result.StatusSkip, skip.Reason
		res.OutOfReach = append(res.OutOfReach, skip.OutOfReach...)
	case err != nil:
		res.Status, res.Reason = result.StatusError, err.Error()
	case !res.Status.Valid():
		res.Status, res.Reason = result.StatusError, fmt.Sprintf("measurement returned invalid status %q", res.Status)
	}
	return res
}

// Elapsed is a convenience for measurements: the duration since t on env's clock.
func (e *Env) Elapsed(t time.Time) time.Duration { return e.Clock.Since(t) }

// RealNodes lists (paginated, Env.ListNodes) Ready, schedulable nodes that are not kwok's simulated ones.
func RealNodes(ctx context.Context, env *Env) ([]corev1.Node, error) {
	all, err := env.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []corev1.Node
	for _, n := range all {
		if !kube.IsSimulated(&n) && !n.Spec.Unschedulable && kube.NodeReady(&n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// AgentPod is a pod running the kubeslow binary of image with args (e.g. "pause", "agent serve ..."), pinned
// to node, tolerating every taint, never restarted, carrying the run's labels.
func (e *Env) AgentPod(name, image, node string, args ...string) *corev1.Pod {
	meta := kube.ObjectMeta(name, e.Namespace, e.RunID)
	zero := int64(0)
	return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
		NodeName: node, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero,
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers:  []corev1.Container{{Name: "agent", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: args}},
	}}
}

// WaitRunning polls (every second, for at most 3 minutes: the apiserver is the source of truth) until every
// named pod of the run's namespace is Running, and returns them by name; a pod that ended is an error. The
// wait ends sooner at the end of the run's budget (BoundContext): that is a SkipError that says so.
func (e *Env) WaitRunning(ctx context.Context, names ...string) (map[string]*corev1.Pod, error) {
	got := map[string]*corev1.Pod{}
	bctx, cancel, bound := e.BoundContext(ctx, 3*time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(bctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return false, fmt.Errorf("%s ended: %s %s", name, p.Status.Phase, p.Status.Message)
			}
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
			got[name] = p
		}
		return true, nil
	})
	if err != nil && BudgetEnded(bctx) && ctx.Err() == nil {
		return nil, Skipf("%s not Running yet%s", strings.Join(names, ", "), bound.Note())
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for %s: %w", strings.Join(names, ", "), err)
	}
	return got, nil
}

// KubeletNodes lists (paginated) the nodes that run a kubelet: every node but the simulated ones, Ready or
// not (a NotReady node's kubelet may still answer, and is worth reading).
func (e *Env) KubeletNodes(ctx context.Context) ([]corev1.Node, error) {
	all, err := e.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var nodes []corev1.Node
	for i := range all {
		if !kube.IsSimulated(&all[i]) {
			nodes = append(nodes, all[i])
		}
	}
	return nodes, nil
}

// ListPods lists every pod of every namespace in pages of 500, keeping keep(pod) of those keep accepts (a slim
// copy: a page's full objects are dropped as soon as it is read); no permission is a SkipError.
func (e *Env) ListPods(ctx context.Context, keep func(*corev1.Pod) (corev1.Pod, bool)) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := e.Client.CoreV1().Pods("").List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, Skipf("no permission to list pods in all namespaces: %v", err)
		}
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		for i := range l.Items {
			if p, ok := keep(&l.Items[i]); ok {
				out = append(out, p)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// ListNodes lists every node: from the run's shared informer (Env.Nodes) when there is one, else in pages
// of 500 (one paginated LIST, however large the cluster); no permission is a SkipError.
func (e *Env) ListNodes(ctx context.Context) ([]corev1.Node, error) {
	if e.Nodes != nil {
		return e.Nodes.List(ctx)
	}
	var nodes []corev1.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := e.Client.CoreV1().Nodes().List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, Skipf("no permission to list nodes: %v", err)
		}
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		nodes = append(nodes, l.Items...)
		if l.Continue == "" {
			return nodes, nil
		}
		opts.Continue = l.Continue
	}
}

// NodeTier is the run's one handle on the control-plane node tier (the node agent on the control-plane
// nodes: internal/measure/cpnode.Shared). It is started by the first measurement that needs it and shared by
// every other (etcd.health, controlplane.usage, api.audit); the runner closes it at the end of the run, and
// everything it creates carries the run's label (kubeslow cleanup removes what an interrupted run left).
type NodeTier interface {
	Close(ctx context.Context)
}

// NodeTierUser is implemented by measurements that read the node tier when no flag of the user gives them
// the signal: the runner then gives the run a namespace for the agents.
type NodeTierUser interface {
	UsesNodeTier() bool
}

// UsesNodeTier reports whether any of ms may read the node tier.
func UsesNodeTier(ms []Measurement) bool {
	for _, m := range ms {
		if u, ok := m.(NodeTierUser); ok && u.UsesNodeTier() {
			return true
		}
	}
	return false
}
