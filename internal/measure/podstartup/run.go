package podstartup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/kube"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/workload"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// LabImage and the lab's kwok taint: on the lab, benchmark pods run the local pause image on simulated nodes.
const (
	LabImage     = "kubeslow.local/pause:1"
	ClusterImage = "registry.k8s.io/pause:3.10"
)

// Options configure a pod start-up benchmark.
type Options struct {
	Kind    workload.Kind
	Count   int
	QPS     float64
	Burst   int
	Image   string
	SLO     time.Duration
	Timeout time.Duration
	// Simulated targets kwok nodes (the lab's default); false targets real nodes.
	Simulated bool
}

// Measurement is the pod start-up benchmark as a measurement of `kubeslow run`.
type Measurement struct{ Opts Options }

// New returns the measurement.
func New(o Options) *Measurement { return &Measurement{Opts: o} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Permissions implements measure.Permissioned.
func (*Measurement) Permissions() []measure.Permission {
	return []measure.Permission{
		{Verbs: []string{"create", "delete", "list", "watch"}, Resource: "pods", Reason: "the benchmark's pods (--kind pods), watched through their phases"},
		{Verbs: []string{"list", "watch"}, Resource: "events", Reason: "the pods' scheduling and pull events"},
		{Verbs: []string{"create", "delete"}, Group: "apps", Resource: "deployments", Reason: "--kind deployment"},
		{Verbs: []string{"create", "delete"}, Group: "batch", Resource: "jobs", Reason: "--kind job"},
	}
}

// Kind marks it as a benchmark: it creates pods.
func (*Measurement) Kind() measure.Kind { return measure.Benchmark }

// ClientLoad implements measure.Loader: with --kind pods kubeslow itself creates the pods at QPS.
func (m *Measurement) ClientLoad() (float32, int) {
	if m.Opts.Kind != workload.Pods {
		return 0, 0
	}
	return float32(m.Opts.QPS), m.Opts.Burst
}

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("pod start-up by phase: %d pods (%s) vs the %s p99 SLO", m.Opts.Count, m.Opts.Kind, m.Opts.SLO)
}

// Spec builds the workload for env.
func (o Options) Spec(env *measure.Env) workload.Spec {
	s := workload.Spec{Kind: o.Kind, Name: "startup", Namespace: env.Namespace, RunID: env.RunID, Count: o.Count,
		QPS: o.QPS, Burst: o.Burst, Workers: 8, Image: o.Image, PullPolicy: corev1.PullIfNotPresent}
	if s.Image == "" {
		s.Image = ClusterImage
		if env.Lab != nil {
			s.Image = LabImage
		}
	}
	if env.Lab != nil && o.Simulated {
		s.NodeSelector = map[string]string{kube.SimulatedNodeLabel: kube.SimulatedNodeLabelValue}
		s.Tolerations = []corev1.Toleration{{Key: kube.SimulatedNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return s
}

// Run creates the workload, watches it start, and analyses the timelines.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	spec := m.Opts.Spec(env)
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
	timeout := m.Opts.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
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
		in.Creator, in.RequestedQPS = "client", spec.QPS
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
		res.Reason = fmt.Sprintf("not all pods Running after %s", timeout)
	}
	return res, nil
}
