// Package passive is pods.explained: in a run, the slowest pods that started during the run's window and were
// not kubeslow's, each explained as `kubeslow explain pod` explains it (internal/explain), creating nothing.
package passive

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeslow/kubeslow/internal/explain"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/source/kube"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "pods.explained"

// Metrics.
const (
	MetricStarted   = "pods_started"   // pods not kubeslow's whose start-up began or ended in the window
	MetricSlow      = "pods_slow"      // of those, the ones that took MinSeconds or more (or are still starting)
	MetricExplained = "pods_explained" // of those, the slowest MaxPods, explained
	MetricStartup   = "startup_seconds"
)

// MinSeconds: a start-up shorter than explain's least explained step (explain.MinLongestSeconds) has nothing to
// explain; MaxPods bounds the pods explained (each costs a few reads of its namespace).
const (
	MinSeconds = explain.MinLongestSeconds
	MaxPods    = 5
)

// Measurement is pods.explained, an observer of the run's window.
type Measurement struct {
	window time.Duration
}

// New returns the measurement over a window of at least w.
func New(w time.Duration) *Measurement { return &Measurement{window: w} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return fmt.Sprintf("the slowest (up to %d) pods not kubeslow's that started in the window, each explained step by step as kubeslow explain does", MaxPods)
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.window }

// Run is the measurement on its own: the pods that started over its window from now.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

// Start implements measure.Observer: it notes the window's start (nothing is read before the end).
func (m *Measurement) Start(_ context.Context, env *measure.Env) (measure.Observation, error) {
	return &window{env: env, start: env.Clock.Now()}, nil
}

type window struct {
	env   *measure.Env
	start time.Time
}

// Sample implements measure.Observation: the pods' own timestamps are read at the end.
func (*window) Sample(context.Context) {}

// started is a pod whose start-up began or ended in the window, with its start-up so far.
type started struct {
	pod     corev1.Pod
	seconds float64
}

// Gather implements measure.Observation: one paginated LIST of the cluster's pods, then explain's reads of each
// of the slowest.
func (w *window) Gather(ctx context.Context) (result.Result, error) {
	end := w.env.Clock.Now()
	// The API's timestamps are whole seconds: the window's start is taken down to its second.
	from := w.start.Truncate(time.Second)
	inWindow := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && !t.After(end) }
	pods, err := w.env.ListPods(ctx, func(p *corev1.Pod) (corev1.Pod, bool) {
		_, ours := p.Labels[kube.RunLabel]
		if ours || p.DeletionTimestamp != nil || !inWindow(p.CreationTimestamp.Time) && !inWindow(kube.PodTrueSince(p, corev1.PodReady)) {
			return corev1.Pod{}, false
		}
		return *p, true
	})
	if err != nil {
		return result.Result{}, err
	}
	cands := make([]started, 0, len(pods))
	for _, p := range pods {
		stop := kube.PodTrueSince(&p, corev1.PodReady)
		if stop.IsZero() {
			stop = end // still starting: its start-up so far
		}
		cands = append(cands, started{pod: p, seconds: stop.Sub(p.CreationTimestamp.Time).Seconds()})
	}
	res := result.Result{Name: Name, Status: result.StatusPass}
	var slow []started
	for _, c := range cands {
		if c.seconds >= MinSeconds {
			slow = append(slow, c)
		}
	}
	sort.SliceStable(slow, func(i, j int) bool {
		if slow[i].seconds != slow[j].seconds {
			return slow[i].seconds > slow[j].seconds
		}
		return slow[i].pod.Namespace+"/"+slow[i].pod.Name < slow[j].pod.Namespace+"/"+slow[j].pod.Name
	})
	nSlow := len(slow)
	res.Metrics = append(res.Metrics,
		result.Metric{Name: MetricStarted, Unit: "count", Value: float64(len(cands))},
		result.Metric{Name: MetricSlow, Unit: "count", Value: float64(nSlow)})
	if len(slow) > MaxPods {
		slow = slow[:MaxPods]
	}
	var said, unread []string
	explained := 0
	for _, c := range slow {
		ref := explain.Ref{Kind: explain.KindPod, Namespace: c.pod.Namespace, Name: c.pod.Name}
		in, err := explain.Read(ctx, w.env.Client, ref, end)
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s/%s: %v", c.pod.Namespace, c.pod.Name, err))
			continue
		}
		x := explain.Explain(*in)
		if len(x.Pods) != 1 {
			continue
		}
		explained++
		rec, line := record(x)
		res.Records = append(res.Records, rec)
		said = append(said, line)
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricStartup, Unit: "seconds", Value: x.Pods[0].Seconds,
			Labels: map[string]string{"namespace": c.pod.Namespace, "pod": c.pod.Name, "node": x.Pods[0].Node, "longest_step": rec.Labels["longest_step"],
				"verdict": rec.Labels["verdict"]}})
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricExplained, Unit: "count", Value: float64(explained)})
	switch {
	case len(cands) == 0:
		res.Reason = "no pod other than kubeslow's started in the window"
	case len(said) == 0 && len(unread) == 0:
		res.Reason = fmt.Sprintf("%d pod(s) not kubeslow's started in the window, none took %s s or more", len(cands), result.FormatValue(MinSeconds))
	default:
		res.Reason = fmt.Sprintf("%d pod(s) not kubeslow's started in the window, %d took %s s or more; the slowest: %s",
			len(cands), nSlow, result.FormatValue(MinSeconds), strings.Join(said, "; "))
	}
	if len(unread) > 0 {
		res.Reason += "; not explained: " + strings.Join(unread, "; ")
	}
	return res, nil
}

// record is one explained pod: its longest step and its first verdict, and the line the reason says of it.
func record(x *result.Explanation) (result.Record, string) {
	p := x.Pods[0]
	name := x.Target.Namespace + "/" + x.Target.Name
	var longest result.Step
	for _, s := range p.Steps {
		if s.Within == "" && s.Seconds > longest.Seconds {
			longest = s
		}
	}
	rec := result.Record{ID: name, Labels: map[string]string{"namespace": x.Target.Namespace, "pod": x.Target.Name, "node": p.Node,
		"ready": fmt.Sprint(p.Ready), "longest_step": longest.Name},
		Values: map[string]float64{"startup_seconds": p.Seconds, "longest_step_seconds": longest.Seconds}}
	line := fmt.Sprintf("%s %s s (longest step %s %s s", name, result.FormatValue(p.Seconds), longest.Name, result.FormatValue(longest.Seconds))
	if len(x.Verdicts) > 0 {
		v := x.Verdicts[0]
		rec.Labels["verdict"], rec.Labels["verdict_summary"] = v.ID, v.Summary
		line += "; " + v.ID + ": " + v.Summary
	}
	return rec, line + ")"
}
