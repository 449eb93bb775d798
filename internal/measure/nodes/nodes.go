// Package nodes is the read-only node-health check: readiness and pressure conditions of every node, and the
// nodes that went NotReady and came back (flapped) within the window, told apart from those that are down.
package nodes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "nodes.health"

// Metric names of the result: rules read them through these.
const (
	MetricNodes    = "nodes"
	MetricReady    = "nodes_ready"
	MetricNotReady = "nodes_not_ready"
	// MetricWithCondition counts the nodes with a pressure condition True (label condition).
	MetricWithCondition = "nodes_with_condition"
	// MetricFlapping counts the nodes that went NotReady in the window and came back (absent when the Events
	// could not be read).
	MetricFlapping = "nodes_flapping"
)

// DefaultWindow is how far back NotReady transitions are counted: the apiserver's default --event-ttl (1 h),
// beyond which the Events that record them are gone anyway.
const DefaultWindow = time.Hour

// NotReadyReason is the Event reason the node lifecycle controller and the kubelet both record when a node's
// Ready condition leaves True.
const NotReadyReason = "NodeNotReady"

// Measurement checks node conditions and counts NotReady transitions over Window.
type Measurement struct {
	Window time.Duration
}

// New returns the measurement with DefaultWindow.
func New() *Measurement { return &Measurement{Window: DefaultWindow} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "node readiness and pressure conditions (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable); nodes that flapped NotReady in the last hour of Events"
}

// Run lists nodes (one paginated LIST) and records each node's conditions, then lists the NodeNotReady Events
// of the window (a LIST with a field selector) to count each node's transitions. Without permission to list
// Events the transitions are not counted, and the result says so.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name}
	nodes, err := env.ListNodes(ctx)
	if err != nil {
		return res, err
	}
	window := m.Window
	if window <= 0 {
		window = DefaultWindow
	}
	since := env.Clock.Now().Add(-window)
	events, err := notReadyEvents(ctx, env, since)
	if apierrors.IsForbidden(err) {
		res = analyze(nodes, nil, false)
		res.Reason = strings.TrimPrefix(res.Reason+"; ", "; ") + fmt.Sprintf("NotReady transitions not counted: no permission to list events: %v", err)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("listing %s events: %w", NotReadyReason, err)
	}
	return Analyze(nodes, events...), nil
}

// notReadyEvents lists the NodeNotReady Events on nodes (in every namespace) last seen at or after since.
func notReadyEvents(ctx context.Context, env *measure.Env, since time.Time) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{Limit: 500, FieldSelector: "involvedObject.kind=Node,reason=" + NotReadyReason}
	for {
		l, err := env.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, e := range l.Items {
			if !lastSeen(&e).Before(since) {
				out = append(out, e)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// lastSeen is when an Event last occurred, whichever API recorded it (core/v1 lastTimestamp, or
// events.k8s.io's eventTime and series).
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// occurrences is how many times an Event happened (the recorder folds repeats into one object).
func occurrences(e *corev1.Event) int {
	switch {
	case e.Series != nil && e.Series.Count > 0:
		return int(e.Series.Count)
	case e.Count > 0:
		return int(e.Count)
	}
	return 1
}

// bad lists the conditions that are bad when True (all but Ready).
var bad = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}

// Analyze turns nodes and the NodeNotReady Events of the window into the result (pure).
//
// A node's NotReady transitions are the occurrences of NodeNotReady Events on it. A node that went NotReady in
// the window and is Ready now, or went NotReady more than once (so it came back in between), flapped: it is
// up but loses its heartbeat, which is a finding of its own. A node that is NotReady and went so at most once
// is down.
func Analyze(nodes []corev1.Node, notReady ...corev1.Event) result.Result {
	return analyze(nodes, notReady, true)
}

func analyze(nodes []corev1.Node, notReady []corev1.Event, counted bool) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	transitions := map[string]int{}
	for i := range notReady {
		e := &notReady[i]
		if e.InvolvedObject.Kind == "Node" && e.Reason == NotReadyReason {
			transitions[e.InvolvedObject.Name] += occurrences(e)
		}
	}
	ready, problems, flapping := 0, 0, 0
	counts := map[string]int{}
	for i := range nodes {
		n := &nodes[i]
		rec := result.Record{ID: n.Name, Labels: map[string]string{"kubelet": n.Status.NodeInfo.KubeletVersion}, Values: map[string]float64{}}
		isReady := false
		var issues []string
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				isReady = c.Status == corev1.ConditionTrue
				continue
			}
			for _, b := range bad {
				if c.Type == b && c.Status == corev1.ConditionTrue {
					issues = append(issues, string(c.Type))
					counts[string(c.Type)]++
				}
			}
		}
		if isReady {
			ready++
			rec.Values["ready"] = 1
		} else {
			issues = append(issues, "NotReady")
			rec.Values["ready"] = 0
		}
		if counted {
			t := transitions[n.Name]
			rec.Values["not_ready_transitions"] = float64(t)
			if (isReady && t >= 1) || t >= 2 {
				flapping++
				issues = append(issues, "Flapping")
			}
		}
		if len(issues) > 0 {
			problems++
			sort.Strings(issues)
			rec.Labels["issues"] = strings.Join(issues, ",")
		}
		res.Records = append(res.Records, rec)
	}
	res.Metrics = append(res.Metrics,
		result.Metric{Name: MetricNodes, Unit: "count", Value: float64(len(nodes))},
		result.Metric{Name: MetricReady, Unit: "count", Value: float64(ready)},
		result.Metric{Name: MetricNotReady, Unit: "count", Value: float64(len(nodes) - ready)},
	)
	if counted {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricFlapping, Unit: "count", Value: float64(flapping)})
	}
	for _, b := range bad {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricWithCondition, Unit: "count", Value: float64(counts[string(b)]), Labels: map[string]string{"condition": string(b)}})
	}
	if problems > 0 {
		res.Status = result.StatusWarn
		res.Reason = fmt.Sprintf("%d of %d nodes not Ready, under pressure or flapping", problems, len(nodes))
	}
	return res
}
