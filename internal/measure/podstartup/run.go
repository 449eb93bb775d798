package podstartup

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ClusterImage is the benchmark's image when the chosen nodes hold no pause image already (on simulated nodes
// nothing is pulled: any name works).
const ClusterImage = "registry.k8s.io/pause:3.10"

// Options configure a pod start-up benchmark.
type Options struct {
	Kind  workload.Kind
	Count int
	// QPS is kubeslow's create rate (Kind pods). Burst is how many creates its limiter lets go at once first:
	// 1 (the default) is a steady rate, as clusterloader2's qpsLoad and SIG Scalability's pod start-up SLI
	// assume; a larger Burst queues that many pods in the scheduler at once, and the tail measures the queue.
	QPS     float64
	Burst   int
	Image   string
	SLO     time.Duration
	Timeout time.Duration
	// Simulated prefers kwok's simulated nodes where the cluster has some with room (they cost its machines
	// nothing), else the real ones; false: real nodes only. The choice is read from the cluster's nodes.
	Simulated bool
}

// Target is where the options ask the pods to go.
func (o Options) Target() measure.Target {
	if o.Simulated {
		return measure.PreferSimulated
	}
	return measure.RealOnly
}

// Measurement is the pod start-up benchmark as a measurement of `kubeslow run`.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// ClientLoad implements measure.Loader: with --kind pods kubeslow itself creates the pods at QPS.
func (m *Measurement) ClientLoad() (float32, int) {
	if m.Opts.Kind != workload.Pods {
		return 0, 0
	}
	return float32(m.Opts.QPS), m.Opts.Burst
}

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	load := string(m.Opts.Kind)
	if m.Opts.Kind == workload.Pods {
		load = fmt.Sprintf("pods created at %g/s, burst %d", m.Opts.QPS, max(m.Opts.Burst, 1))
	}
	return fmt.Sprintf("pod start-up by phase: up to %d pods (%s, as many as fit) vs the %s p99 SLO", m.Opts.Count, load, m.Opts.SLO)
}

// Spec builds the workload of count pods for env, placed by p.
func (o Options) Spec(env *measure.Env, p *measure.Placement, count int) workload.Spec {
	return workload.Spec{Kind: o.Kind, Name: "startup", Namespace: env.Namespace, RunID: env.RunID, Count: count,
		QPS: o.QPS, Burst: o.Burst, Workers: 8, Image: cmp.Or(o.Image, p.Image, ClusterImage), PullPolicy: corev1.PullIfNotPresent,
		NodeSelector: p.NodeSelector, Affinity: p.Affinity, Tolerations: p.Tolerations}
}

// Metrics of the load's placement and size.
const (
	// MetricPodsRequested is the pods the options asked for; MetricPods (pods) is how many were created.
	MetricPodsRequested = "pods_requested"
	// MetricFreePodSlots is the free pod slots (allocatable pods less non-terminated pods) on the nodes the
	// load may use (label nodes: simulated or real, and how many).
	MetricFreePodSlots = "free_pod_slots"
	// MetricPodsOwnLimit counts pods turned away for the nodes' pod limit ("Too many pods"): kubeslow's own
	// load, not a fault of the cluster.
	MetricPodsOwnLimit = "pods_not_fitting"
)

// OwnLimit reports whether a pod's last event (a not-started reason) says the nodes had no pod slot left:
// kubeslow sized its load to the slots it saw free, so such a pod met kubeslow's own sizing (or other pods
// that arrived meanwhile), not a slow or broken cluster.
func OwnLimit(reason string) bool {
	return strings.HasPrefix(reason, "FailedScheduling") && strings.Contains(reason, "Too many pods")
}

// Run places the load on the nodes the cluster says may take it, sized to their free pod slots, creates it,
// watches it start, and analyses the timelines.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	p, err := measure.Place(ctx, env, m.Opts.Target())
	if err != nil {
		return result.Result{}, err
	}
	want := m.Opts.Count
	count := p.Fit(want)
	switch {
	case len(p.Nodes) == 0:
		return result.Result{}, measure.Skipf("no %s node takes kubeslow's pods (%s)", p.Kind(), p.Describe())
	case count == 0:
		return result.Result{}, measure.Skipf("%s", p.Limit(want, 0))
	}
	if env.Log != nil {
		env.Log.Info("pod start-up placement", "nodes", p.Describe(), "requested", want, "creating", count)
	}
	spec := m.Opts.Spec(env, p, count)
	wc, err := WatchClient(env.Config, env.Client)
	if err != nil {
		return result.Result{}, fmt.Errorf("the watch client: %w", err)
	}
	col := NewCollector(wc, env.Namespace, spec.Selector(), env.Clock, spec.Count)
	if err := col.Start(ctx); err != nil {
		return result.Result{}, fmt.Errorf("watching pods: %w", err)
	}
	defer col.Stop()
	out, err := workload.Run(ctx, env.Client, env.Clock, spec)
	if err != nil {
		return result.Result{}, fmt.Errorf("creating the workload: %w", err)
	}
	if spec.Kind == workload.Pods {
		col.SetWant(spec.Count - out.Failed()) // creates refused by a failing control plane: no pod to wait for
	}
	timeout := m.Opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	bound := env.WaitBound(timeout)
	timeout = bound.D
	timedOut := false
	select {
	case <-col.AllRunning():
	case <-env.Clock.After(timeout):
		timedOut = true
	case <-ctx.Done():
		return result.Result{}, ctx.Err()
	}
	in := Input{Timelines: col.Timelines(), SLO: m.Opts.SLO, Expected: spec.Count, Creator: "controller"}
	if spec.Kind == workload.Pods {
		in.Creator, in.RequestedQPS, in.Burst = "client", spec.QPS, max(spec.Burst, 1)
		for _, c := range out.Creates {
			in.ClientWait += max(0, c.Sent.Sub(c.Intended))
			in.CreateLatency = append(in.CreateLatency, c.Done.Sub(c.Sent))
		}
	}
	res := Analyze(in)
	if f := out.Failed(); f > 0 {
		res.Metrics = append(res.Metrics, result.Metric{Name: "create_errors", Unit: "count", Value: float64(f)})
	}
	if timedOut && res.Reason == "" {
		res.Reason = fmt.Sprintf("not all pods Running after %s", timeout.Round(time.Second))
	}
	if timedOut {
		res.Reason += bound.Note()
	}
	sized(&res, p, want, count)
	return res, nil
}

// sized adds the load's size and placement to res and says when kubeslow's own limit shaped it: the load
// lowered to the free pod slots, or pods turned away for the nodes' pod limit (which KS-POD-STUCK leaves out).
func sized(res *result.Result, p *measure.Placement, want, count int) {
	nodes := map[string]string{"nodes": p.Kind(), "node_count": strconv.Itoa(len(p.Nodes))}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricPodsRequested, Unit: "count", Value: float64(want)})
	if p.Unchecked == "" {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricFreePodSlots, Unit: "count", Value: float64(p.Free()), Labels: nodes})
	}
	var notes []string
	if count < want {
		notes = append(notes, p.Limit(want, count))
	}
	turned, notStarted := 0, 0
	for _, mt := range res.Metrics {
		if mt.Name == MetricNotStartedByReason {
			notStarted += int(mt.Value)
			if OwnLimit(mt.Labels["reason"]) {
				turned += int(mt.Value)
			}
		}
	}
	if turned > 0 {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricPodsOwnLimit, Unit: "count", Value: float64(turned), Labels: nodes})
		notes = append(notes, fmt.Sprintf("kubeslow's own limit: %d of its pods found no free pod slot on the %d %s node(s) it may use (Too many pods)",
			turned, len(p.Nodes), p.Kind()))
		if r := res.Metric("pods_running", nil); r != nil && r.Value == 0 && turned == notStarted {
			// Nothing ran and only for want of slots: nothing about the cluster was measured.
			res.Status = result.StatusSkip
		}
	}
	if len(notes) > 0 {
		if res.Reason != "" {
			notes = append(notes, res.Reason)
		}
		res.Reason = strings.Join(notes, "; ")
	}
}
