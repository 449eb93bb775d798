// Package podres is pods.resources: the application pods' CPU throttling under their CPU limits and their
// OOM kills, in every namespace the user can read. cAdvisor's counters (each real node's kubelet
// /metrics/cadvisor through the apiserver's node proxy, at the start and the end of the run's window) give
// each limited container's share of throttled CFS periods and its memory peak; the API gives the pods'
// limits, readiness, restarts and last terminations (OOMKilled), their Unhealthy Events and the kubelets'
// SystemOOM Events, and the nodes' MemoryPressure. The rules tie the node sweep's kernel OOM kills
// (nodeagent, by the pod UID in the killed task's cgroup) to these pods.
package podres

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/internal/source/kubelet"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Measurement reads the real nodes' cAdvisor and the pods at the start and the end of the run's window.
type Measurement struct {
	Length time.Duration
	// Record, when set, receives what the measurement read (the lab tests save it as a fixture).
	Record func(Recording)
}

// New returns the measurement over a window of at least length.
func New(length time.Duration) *Measurement { return &Measurement{Length: length} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "application pods' CPU throttling under their limits and OOM kills (cAdvisor through the node proxy, the pods' status and Events)"
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

// Run implements measure.Measurement (the run starts and gathers it as an observer).
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

type observation struct {
	env       *measure.Env
	ends      throttle.Ends
	record    func(Recording)
	podsStart []corev1.Pod
	from      time.Time
}

// Start implements measure.Observer: the first read of every real node's cAdvisor, and the pods.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	o := &observation{env: env, record: m.Record,
		ends: throttle.Ends{Reader: Name, Families: Families, Window: m.Length, NoNode: "simulated nodes have no kubelet, hence no cAdvisor and no kernel"}}
	err := o.ends.Start(ctx, env, func(ctx context.Context) error {
		o.from = time.Now()
		pods, err := ListPods(ctx, env)
		o.podsStart = pods
		return err
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Sample implements measure.Observation: counters need only the window's two ends.
func (*observation) Sample(context.Context) {}

// Gather implements measure.Observation: the last reads, and the analysis.
func (o *observation) Gather(ctx context.Context) (result.Result, error) {
	lastScrapes, missed, errs, cerr := o.ends.Last(ctx)
	to := time.Now()
	pods, err := ListPods(ctx, o.env)
	if err != nil {
		return result.Result{}, err
	}
	nodes, err := o.env.ListNodes(ctx)
	if err != nil {
		return result.Result{}, err
	}
	var notes []string
	var events []corev1.Event
	for _, reason := range []string{"Unhealthy", "SystemOOM"} {
		evs, err := kube.ListEvents(ctx, o.env.Client, "", "reason="+reason)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s Events not read (%v): failed probes are not seen", reason, err))
			continue
		}
		events = append(events, evs...)
	}
	in := Input{First: kubelet.Snaps(o.ends.First), Last: kubelet.Snaps(lastScrapes), PodsStart: o.podsStart, PodsEnd: pods, Events: events, Nodes: nodes, From: o.from, To: to}
	if o.record != nil {
		o.record(Recording{Input: in, FirstText: kubelet.Texts(o.ends.First, Families), LastText: kubelet.Texts(lastScrapes, Families)})
	}
	res := Analyze(in)
	if cerr != nil {
		return res, cerr
	}
	if len(missed) > 0 {
		notes = append(notes, fmt.Sprintf("cAdvisor not read on %s (%s)", strings.Join(missed, ", "), throttle.JoinErrs(errs)))
	}
	if len(notes) > 0 {
		res.Reason += "; " + strings.Join(notes, "; ")
	}
	return res, nil
}

// ListPods lists every pod the user can read, in pages of 500, slim (Slim).
func ListPods(ctx context.Context, env *measure.Env) ([]corev1.Pod, error) {
	return listPods(ctx, env, Slim)
}

// listPods lists every pod, page by page, keeping keep(pod) of each.
func listPods(ctx context.Context, env *measure.Env, keep func(*corev1.Pod) corev1.Pod) ([]corev1.Pod, error) {
	return env.ListPods(ctx, func(p *corev1.Pod) (corev1.Pod, bool) { return keep(p), true })
}

// Slim keeps of a pod what Analyze reads: its identity, kubeslow's managed-by label, node, containers' names
// and memory limits, and the containers' states, restarts and readiness. A run holds every pod of the cluster
// twice (the window's two ends); at 30,000 pods the full objects (managed fields, volumes, env, conditions)
// were most of kubeslow's peak memory (docs/scale.md).
func Slim(p *corev1.Pod) corev1.Pod {
	s := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, CreationTimestamp: p.CreationTimestamp}}
	if v, ok := p.Labels[kube.ManagedByLabel]; ok {
		s.Labels = map[string]string{kube.ManagedByLabel: v}
	}
	s.Spec.NodeName = p.Spec.NodeName
	for _, c := range p.Spec.Containers {
		sc := corev1.Container{Name: c.Name}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			sc.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q}
		}
		s.Spec.Containers = append(s.Spec.Containers, sc)
	}
	s.Status.Phase, s.Status.Reason = p.Status.Phase, p.Status.Reason
	for _, cs := range p.Status.ContainerStatuses {
		s.Status.ContainerStatuses = append(s.Status.ContainerStatuses, corev1.ContainerStatus{Name: cs.Name, State: cs.State,
			LastTerminationState: cs.LastTerminationState, RestartCount: cs.RestartCount, Ready: cs.Ready})
	}
	return s
}
