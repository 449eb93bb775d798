// Package nodes is the read-only node-health check: readiness and pressure conditions of every node.
package nodes

import (
	"context"
	"fmt"
	"sort"
	"strings"

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
)

// Measurement checks node conditions.
type Measurement struct{}

// New returns the measurement.
func New() *Measurement { return &Measurement{} }

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (*Measurement) Description() string {
	return "node readiness and pressure conditions (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable)"
}

// Run lists nodes (one paginated LIST) and records each node's conditions.
func (*Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	res := result.Result{Name: Name}
	var nodes []corev1.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := env.Client.CoreV1().Nodes().List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return res, measure.Skipf("no permission to list nodes: %v", err)
		}
		if err != nil {
			return res, fmt.Errorf("listing nodes: %w", err)
		}
		nodes = append(nodes, l.Items...)
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	return Analyze(nodes), nil
}

// bad lists the conditions that are bad when True (all but Ready).
var bad = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}

// Analyze turns nodes into the result (pure).
func Analyze(nodes []corev1.Node) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	ready, problems := 0, 0
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
	for _, b := range bad {
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricWithCondition, Unit: "count", Value: float64(counts[string(b)]), Labels: map[string]string{"condition": string(b)}})
	}
	if problems > 0 {
		res.Status = result.StatusWarn
		res.Reason = fmt.Sprintf("%d of %d nodes not Ready or under pressure", problems, len(nodes))
	}
	return res
}
