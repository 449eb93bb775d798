package promwindow

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// NodesName is the result of the node-side signals read from Prometheus.
const NodesName = "nodes.prometheus"

// Nodes reads the signals over the window that no live measurement analyses: control-plane CPU,
// and node_exporter's mean disk write latency. (The kubelet's and node_exporter's signals the live node rules
// read are nodes.kubelet and nodes.agent; cAdvisor's throttling of kube-system pods is system.throttling.)
type Nodes struct{ src *Source }

// NewNodes returns the measurement.
func NewNodes(s *Source) *Nodes { return &Nodes{src: s} }

// Name implements measure.Measurement.
func (*Nodes) Name() string { return NodesName }

// Description implements measure.Measurement.
func (n *Nodes) Description() string {
	return fmt.Sprintf("control-plane CPU, node disk write latency, from Prometheus over %s", n.src.Window)
}

// signal is one metric of the result: a PromQL expression over the window (%[1]s is the role's job matcher,
// %[2]s the window), the labels kept, and how many series at most (the highest first).
type signal struct {
	Role, Metric, Unit, Series string
	Query                      string
	Keep                       []string
	Top                        int
	// Const labels added to every metric (e.g. the component).
	Const map[string]string
}

func nodeSignals() []signal {
	var out []signal
	// kube-apiserver's and etcd's are controlplane.usage's.
	for _, r := range []string{"scheduler", "controller-manager"} {
		out = append(out, signal{Role: r, Metric: "cpu_cores", Unit: "cores", Series: "process_cpu_seconds_total",
			Query: `sum by (instance) (rate(process_cpu_seconds_total{%[1]s}[%[2]s]))`, Keep: []string{"instance"}, Top: 5, Const: map[string]string{"component": r}})
	}
	return append(out,
		signal{Role: "node-exporter", Metric: "disk_write_latency_mean", Unit: "seconds", Series: "node_disk_write_time_seconds_total",
			Query: `rate(node_disk_write_time_seconds_total{%[1]s}[%[2]s]) / rate(node_disk_writes_completed_total{%[1]s}[%[2]s]) > 0`,
			Keep:  []string{"instance", "device"}, Top: 5},
	)
}

// Run implements measure.Measurement.
func (n *Nodes) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := n.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	res := result.Result{Name: NodesName, Status: result.StatusPass, Start: s.Window.From, End: s.Window.To}
	anyRole := false
	for _, sg := range nodeSignals() {
		job, ok := s.Selector(sg.Role)
		if !ok {
			series := sg.Series
			if c := sg.Const["component"]; c != "" {
				series += " of " + c
			}
			res.Absent = append(res.Absent, result.Absence{Metric: sg.Metric, Series: series, Reason: s.absentReason(sg.Role)})
			continue
		}
		anyRole = true
		v, err := s.Client.Instant(ctx, fmt.Sprintf(sg.Query, job, s.window()), s.Window.To)
		if err != nil {
			return res, err
		}
		var ms []result.Metric
		for _, smp := range v {
			f := float64(smp.Value)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			labels := map[string]string{"prometheus": fmt.Sprintf("%s %s", job, s.Window)}
			for _, k := range sg.Keep {
				labels[k] = string(smp.Metric[model.LabelName(k)])
			}
			for k, v := range sg.Const {
				labels[k] = v
			}
			ms = append(ms, result.Metric{Name: sg.Metric, Unit: sg.Unit, Value: f, Labels: labels})
		}
		if len(ms) == 0 {
			res.Absent = append(res.Absent, result.Absence{Metric: sg.Metric, Series: sg.Series,
				Reason: fmt.Sprintf("job %s has no %s in the window (or nothing happened to measure)", job, sg.Series)})
			continue
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Value > ms[j].Value })
		top := sg.Top
		if top <= 0 {
			top = 1
		}
		if len(ms) > top {
			ms = ms[:top]
		}
		res.Metrics = append(res.Metrics, ms...)
	}
	if !anyRole {
		return res, measure.Skipf("none of cAdvisor, node_exporter or the control-plane jobs is scraped by %s in %s", s.Client.URL(), s.Window)
	}
	var absent []string
	for _, a := range res.Absent {
		absent = append(absent, a.Metric+" ("+a.Series+")")
	}
	if len(absent) > 0 {
		res.Reason = "not measured from this Prometheus: " + strings.Join(absent, ", ")
	}
	return res, nil
}
