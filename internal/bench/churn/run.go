package churn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubeslow/kubeslow/internal/bench/diskagent"
	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Limits on a run: both a count and a duration bound it.
const (
	MaxCount       = 100000
	MaxDuration    = 24 * time.Hour
	MaxConcurrency = 20
)

// Options configure a churn run.
type Options struct {
	// Nodes are the nodes to start pods on, in turn; empty: every real node that takes the pods (Ready, not
	// cordoned, no taint against them), read from the cluster.
	Nodes []string
	// Count and Duration bound the run: it stops at whichever comes first.
	Count    int
	Duration time.Duration
	// Concurrency is how many pods are in flight at once (1: strictly one after another, as `docker run` in a
	// loop).
	Concurrency int
	Image       string
	// PodTimeout bounds one pod's start and one pod's deletion.
	PodTimeout time.Duration
	// DiskDirs maps a node to a directory on its container runtime's disk as this process sees it, for
	// sampling in-process (the lab's nodes share this machine's kernel). Nodes without one are not sampled.
	DiskDirs map[string]string
	// SampleInterval is the disk sampling period (default 1 s).
	SampleInterval time.Duration
	// AgentImage holds the kubeslow binary: nodes without a DiskDirs entry are sampled by an agent pod of
	// the run on the node (`agent disk-sample`), on the host directory AgentDirs[node], else RuntimeDir.
	// Empty: those nodes are not sampled.
	AgentImage string
	AgentDirs  map[string]string
	// RuntimeDir is the container runtime's directory on the nodes (default /var/lib/containerd).
	RuntimeDir string
	// StopAfterKnee ends the run once start latency's knee (KneeRatio, KneeMinAfter) has held for this many
	// pod starts: past it more load only hurts the node further and adds nothing to the diagnosis. 0 runs to
	// Count or Duration.
	StopAfterKnee int
}

// DefaultRuntimeDir is containerd's root directory.
const DefaultRuntimeDir = "/var/lib/containerd"

// Validate checks the bounds.
func (o Options) Validate() error {
	if o.Count < 1 || o.Count > MaxCount {
		return fmt.Errorf("--count %d: want 1..%d", o.Count, MaxCount)
	}
	if o.Duration <= 0 || o.Duration > MaxDuration {
		return fmt.Errorf("--duration %s: want (0, %s]", o.Duration, MaxDuration)
	}
	if o.Concurrency < 1 || o.Concurrency > MaxConcurrency {
		return fmt.Errorf("--concurrency %d: want 1..%d", o.Concurrency, MaxConcurrency)
	}
	if o.PodTimeout <= 0 || o.PodTimeout > time.Hour {
		return fmt.Errorf("--pod-timeout %s: want (0, 1h]", o.PodTimeout)
	}
	if o.StopAfterKnee < 0 || o.StopAfterKnee > MaxCount {
		return fmt.Errorf("--stop-after-knee %d: want 0..%d", o.StopAfterKnee, MaxCount)
	}
	if o.SampleInterval != 0 && (o.SampleInterval < 100*time.Millisecond || o.SampleInterval > time.Minute) {
		return fmt.Errorf("--sample-interval %s: want 100ms..1m", o.SampleInterval)
	}
	return nil
}

// Measurement is the churn benchmark.
type Measurement struct {
	Opts Options
	// Progress receives a line now and then (iteration, rate, latency); nil for none.
	Progress func(format string, args ...any)
}

// New returns the measurement.
func New(o Options, progress func(string, ...any)) *Measurement {
	return &Measurement{Opts: o, Progress: progress}
}

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// ClientLoad is the client-side rate the loop needs: a create, a delete and the deletion polls (every 100 ms)
// per pod in flight.
func (m *Measurement) ClientLoad() (float32, int) {
	return float32(12 * m.Opts.Concurrency), 12 * m.Opts.Concurrency
}

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("pod churn: up to %d pods started and deleted (%d at a time, at most %s), start latency and the nodes' disks over time",
		m.Opts.Count, m.Opts.Concurrency, m.Opts.Duration)
}

// Run starts and deletes pods until the count or the duration is reached, sampling the disks meanwhile.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	o := m.Opts
	if err := o.Validate(); err != nil {
		return result.Result{}, err
	}
	pl, err := m.place(ctx, env)
	if err != nil {
		return result.Result{}, err
	}
	nodes, concurrency, limit := m.fit(pl)
	if len(nodes) == 0 {
		return result.Result{}, measure.Skipf("kubeslow's own limit: no free pod slot for churn's pods on the %d real node(s) it may use (%s)", len(pl.Nodes), pl.Describe())
	}
	m.progress("churn: %s", pl.Describe())
	if limit != "" {
		m.progress("churn: %s", limit)
	}
	o.Concurrency = concurrency
	spec := workload.Spec{Kind: workload.Pods, Name: "churn", Namespace: env.Namespace, RunID: env.RunID,
		Image: cmp.Or(o.Image, pl.Image, podstartup.ClusterImage), PullPolicy: corev1.PullIfNotPresent}
	col := podstartup.NewCollector(env.Client, env.Namespace, spec.Selector(), env.Clock, 0)
	if err := col.Start(ctx); err != nil {
		return result.Result{}, fmt.Errorf("watching pods: %w", err)
	}
	defer col.Stop()

	// The run lasts Duration, or until the end of the run's budget when that comes first.
	runCtx, cancel, bound := env.BoundContext(ctx, o.Duration)
	defer cancel()
	// The disk samplers run until the last pod is gone.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	disks, sampled := m.startSamplers(sampleCtx, env, nodes)

	// Pods waiting to be seen Running, woken by the collector.
	w := newWaiter(col)
	go w.run(sampleCtx)

	var mu sync.Mutex
	var its []Iteration
	var stopped string // why the run stopped before its bounds
	// The last knee check's end and how long it took (kneeCheckDue).
	var checkedAt time.Time
	var checkCost time.Duration
	next := 0
	start := env.Clock.Now()
	var wg sync.WaitGroup
	for worker := 0; worker < o.Concurrency; worker++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= o.Count || runCtx.Err() != nil || stopped != "" {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				it := m.iterate(runCtx, ctx, env, w, spec, i, nodes[i%len(nodes)])
				mu.Lock()
				its = append(its, it)
				done := len(its)
				if m.Progress != nil && (done%10 == 0 || done == o.Count) {
					m.Progress("%s", progressLine(its, done, env.Clock.Since(start)))
				}
				// Checked after a start whenever kneeCheckDue says the check is cheap beside the run: after every
				// start up to ~1,000 starts at ~0.3 s each, so that the run stops on the start that completes the
				// hold (up to 4 later with one check every 5 until 2026-11-30: each slow start is seconds more of a
				// node already hurt), and a tenth of a longer run's time at most.
				if o.StopAfterKnee > 0 && stopped == "" && kneeCheckDue(env.Clock.Since(checkedAt), checkCost) {
					t0 := env.Clock.Now()
					why, ok := KneeHeld(its, o.StopAfterKnee)
					checkedAt = env.Clock.Now()
					checkCost = checkedAt.Sub(t0)
					if ok {
						stopped = why
						if m.Progress != nil {
							m.Progress("churn: %s", why)
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stopSampling()
	sampled.Wait()
	in := Input{Iterations: its}
	for _, d := range disks {
		in.Disks = append(in.Disks, *d)
	}
	res := Analyze(in)
	res.Start, res.End = start, env.Clock.Now()
	res.Metrics = append(res.Metrics,
		result.Metric{Name: MetricFreePodSlots, Unit: "count", Value: float64(pl.Free()), Labels: map[string]string{"nodes": strconv.Itoa(len(pl.Nodes))}},
		result.Metric{Name: MetricConcurrency, Unit: "count", Value: float64(concurrency), Labels: map[string]string{"requested": strconv.Itoa(m.Opts.Concurrency)}})
	if stopped != "" {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricStoppedAtKnee, Unit: "count", Value: float64(len(its))})
	}
	if measure.BudgetEnded(runCtx) && ctx.Err() == nil && len(its) < o.Count {
		// kubeslow's own budget stopped the run: the pods it left unstarted say nothing of the cluster.
		budget := fmt.Sprintf("%d of %d pods started or tried%s", len(its), o.Count, bound.Note())
		if res.Status == result.StatusError { // no pod started before the budget ended
			res.Status = result.StatusSkip
		}
		stopped = strings.Join(slices.DeleteFunc([]string{stopped, budget}, func(s string) bool { return s == "" }), "; ")
	}
	if limit != "" || stopped != "" {
		res.Reason = strings.Join(slices.DeleteFunc([]string{limit, stopped, res.Reason}, func(s string) bool { return s == "" }), "; ")
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return res, ctx.Err()
	}
	return res, nil
}

// kneeCheckRatio paces the knee checks: a check (KneeHeld: the change point over every start so far, quadratic
// in them: ~5-17 ms for 1,000 starts, 1.7 s for 10,000, 16 s for 30,000, measured on the 2-core machine) runs only
// once kneeCheckRatio times its last cost has passed since it ended, so that checks take at most about a tenth of
// the run (they hold the workers' lock).
const kneeCheckRatio = 10

// kneeCheckDue reports whether a knee check is due, since its last ended, the last having taken cost.
func kneeCheckDue(since, cost time.Duration) bool { return since >= kneeCheckRatio*cost }

// Metrics of the load's placement.
const (
	// MetricFreePodSlots is the free pod slots on the nodes churn may use (label nodes: how many).
	MetricFreePodSlots = "free_pod_slots"
	// MetricConcurrency is the pods in flight at once, as run (label requested: as asked).
	MetricConcurrency = "concurrency"
	// MetricStoppedAtKnee is the pods started when the run stopped because the knee had held
	// (Options.StopAfterKnee); absent when it ran to its bounds.
	MetricStoppedAtKnee = "stopped_at_knee"
)

// place reads the nodes churn may use from the cluster: the chosen ones, or every real node that takes
// its pods (Ready, not cordoned, no taint it does not tolerate).
func (m *Measurement) place(ctx context.Context, env *measure.Env) (*measure.Placement, error) {
	if len(m.Opts.Nodes) == 0 {
		p, err := measure.Place(ctx, env, measure.RealOnly)
		if err != nil {
			return nil, err
		}
		if len(p.Nodes) == 0 {
			return nil, measure.Skipf("no real node takes churn's pods, and churn needs real kubelets (%s)", p.Describe())
		}
		return p, nil
	}
	p, err := measure.PlaceOn(ctx, env, m.Opts.Nodes)
	if err != nil {
		return nil, err
	}
	if p.Simulated {
		return nil, fmt.Errorf("nodes %s: simulated, and churn needs real kubelets", strings.Join(m.Opts.Nodes, ","))
	}
	return p, nil
}

// fit returns the nodes to start pods on in turn (those with a free pod slot besides the disk agent's),
// the concurrency they take (each node holds an equal share of the pods in flight) and, when that is
// below the concurrency asked, kubeslow's own limit in words.
func (m *Measurement) fit(p *measure.Placement) ([]string, int, string) {
	var nodes []string
	least := 0
	for _, n := range p.Nodes {
		slots := n.Free()
		if p.Unchecked != "" {
			slots = MaxConcurrency
		}
		if m.Opts.DiskDirs[n.Name] == "" && m.Opts.AgentImage != "" {
			slots-- // the node's disk agent
		}
		if slots <= 0 {
			continue
		}
		nodes = append(nodes, n.Name)
		if least == 0 || slots < least {
			least = slots
		}
	}
	c := min(m.Opts.Concurrency, len(nodes)*least)
	if c >= m.Opts.Concurrency {
		return nodes, c, ""
	}
	return nodes, c, fmt.Sprintf("kubeslow's own limit: concurrency %d requested, %d fit in the free pod slots of %d of the %d real node(s) it may use (%d free)",
		m.Opts.Concurrency, c, len(nodes), len(p.Nodes), p.Free())
}

// startSamplers starts one disk sampler per node: in-process for a node with a directory here (the lab's
// nodes share this machine's kernel), else an agent pod on the node. It returns once every sampler runs
// (or could not start: its node's Reason says why); the agent pods run until ctx ends.
func (m *Measurement) startSamplers(ctx context.Context, env *measure.Env, nodes []string) ([]*NodeDisk, *sync.WaitGroup) {
	var wg, started sync.WaitGroup
	var out []*NodeDisk
	interval := m.Opts.SampleInterval
	if interval <= 0 {
		interval = time.Second
	}
	for i, n := range nodes {
		nd := &NodeDisk{Node: n, Dir: m.Opts.DiskDirs[n]}
		out = append(out, nd)
		if nd.Dir == "" {
			if m.Opts.AgentImage == "" {
				nd.Reason = "no agent image to sample the node's disk with (--agent-image), and no local directory of it (--disk-dir)"
				continue
			}
			nd.Dir = m.Opts.AgentDirs[n]
			if nd.Dir == "" {
				nd.Dir = cmp.Or(m.Opts.RuntimeDir, DefaultRuntimeDir)
			}
			nd.Remote = true
			started.Add(1)
			go func() {
				defer started.Done()
				var mu sync.Mutex
				spec := diskagent.PodSpec{Namespace: env.Namespace, RunID: env.RunID, Name: fmt.Sprintf("churn-disk-%d", i), Node: n,
					Image: m.Opts.AgentImage, HostDir: nd.Dir}
				// The agent stops on its own a little after the run's bounds; the run stops it sooner.
				life := m.Opts.Duration + 2*m.Opts.PodTimeout + time.Minute
				start := env.WaitBound(2 * time.Minute) // the wait for the sampler pod to run
				st, err := diskagent.StartSampler(ctx, env.Client, spec, interval, min(life, MaxDuration), start.D, func(smp diskprobe.Sample) {
					mu.Lock()
					defer mu.Unlock()
					nd.Samples = append(nd.Samples, smp)
					if nd.Device == "" {
						nd.Device = smp.Device
					}
				})
				if err != nil {
					nd.Reason = err.Error()
					if errors.Is(err, context.DeadlineExceeded) {
						nd.Reason += start.Note()
					}
					m.progress("churn: %s's disk not sampled: %v", n, err)
					return
				}
				m.progress("churn: sampling %s's disk (%s) every %s through agent pod %s", n, nd.Dir, interval, spec.Name)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := st.Wait(); err != nil {
						nd.Reason = err.Error()
					}
				}()
			}()
			continue
		}
		s, err := diskprobe.NewSampler(diskprobe.SamplerOptions{Dir: nd.Dir, Interval: interval})
		if err != nil {
			nd.Reason = err.Error()
			continue
		}
		nd.Device = s.Device()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			if err := s.Run(ctx, func(smp diskprobe.Sample) { nd.Samples = append(nd.Samples, smp) }); err != nil {
				nd.Reason = "sampling stopped: " + err.Error()
			}
		}()
	}
	started.Wait()
	return out, &wg
}

// iterate starts one pod on node, waits for it to run, deletes it and waits for it to be gone. runCtx bounds
// the start; the deletion uses ctx so that a pod started before the end of the run is still cleaned up.
func (m *Measurement) iterate(runCtx, ctx context.Context, env *measure.Env, w *waiter, spec workload.Spec, i int, node string) Iteration {
	name := fmt.Sprintf("churn-%06d", i)
	it := Iteration{Index: i, Pod: name, Node: node, Latency: math.NaN(), Delete: math.NaN()}
	pod := spec.Pod(name)
	// Pinned by name through the scheduler (as DaemonSets pin their pods): a node's hostname label need not
	// be its name.
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	ch := w.add(name)
	it.Start = env.Clock.Now()
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(runCtx, pod, metav1.CreateOptions{}); err != nil {
		w.remove(name)
		it.Err = err.Error()
		return it
	}
	tctx, cancel := context.WithTimeout(runCtx, m.Opts.PodTimeout)
	select {
	case <-ch:
	case <-tctx.Done():
		if runCtx.Err() != nil {
			it.Err = "run ended before the pod was Running"
		} else {
			// Censored: the start took at least the timeout, which is what the series shows.
			it.TimedOut, it.Latency = true, m.Opts.PodTimeout.Seconds()
		}
	}
	cancel()
	w.remove(name)
	if tl, ok := w.col.Timeline(name); ok && it.Err == "" && !it.TimedOut {
		if ph, sli, ok := podstartup.PhasesOf(tl); ok {
			it.Phases, it.Latency = ph, sli
		}
	}
	// Delete and wait until it is gone (as `docker run --rm` does), bounded by PodTimeout (or the end of the
	// run's budget: the deletion is then not timed; the run's cleanup removes what is left).
	dctx, dcancel, _ := env.BoundContext(ctx, m.Opts.PodTimeout)
	defer dcancel()
	t0 := env.Clock.Now()
	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
		if it.Err == "" {
			it.Err = "delete: " + err.Error()
		}
		return it
	}
	err := wait.PollUntilContextCancel(dctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err == nil {
		it.Delete = env.Clock.Since(t0).Seconds()
	}
	return it
}

func (m *Measurement) progress(format string, args ...any) {
	if m.Progress != nil {
		m.Progress(format, args...)
	}
}

// progressLine: the iteration, the current rate and latency (over the last 20 starts).
func progressLine(its []Iteration, done int, elapsed time.Duration) string {
	var recent []float64
	for k := len(its) - 1; k >= 0 && len(recent) < 20; k-- {
		if !math.IsNaN(its[k].Latency) {
			recent = append(recent, its[k].Latency)
		}
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Minutes()
	}
	last := "-"
	if l := its[len(its)-1].Latency; !math.IsNaN(l) {
		last = Secs(l)
	}
	med := "-"
	if len(recent) > 0 {
		med = Secs(stats.Median(recent))
	}
	return fmt.Sprintf("churn: %d pods in %s, %.0f/min, last start %s, p50 of the last %d %s", done, elapsed.Round(time.Second), rate, last, len(recent), med)
}

// waiter wakes the goroutine waiting for a pod when the collector has seen it Running.
type waiter struct {
	col     *podstartup.Collector
	mu      sync.Mutex
	pending map[string]chan struct{}
}

func newWaiter(col *podstartup.Collector) *waiter {
	return &waiter{col: col, pending: map[string]chan struct{}{}}
}

func (w *waiter) add(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.pending[name] = ch
	return ch
}

func (w *waiter) remove(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, name)
}

func (w *waiter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.col.Changed():
		}
		w.mu.Lock()
		for name, ch := range w.pending {
			if tl, ok := w.col.Timeline(name); ok && !tl.SeenRunning.IsZero() {
				close(ch)
				delete(w.pending, name)
			}
		}
		w.mu.Unlock()
	}
}
