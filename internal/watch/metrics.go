package watch

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeslow/kubeslow/internal/engine/runner"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The series' descriptions. kubeslow_metric has no fixed description: its labels are each metric's own.
var (
	descUp = prometheus.NewDesc("kubeslow_up",
		"1 when the last cycle reached the cluster, 0 when it could not.", nil, nil)
	descDuration = prometheus.NewDesc("kubeslow_cycle_duration_seconds",
		"How long the last cycle took.", nil, nil)
	descCycles = prometheus.NewDesc("kubeslow_cycles_total",
		"Cycles run, by result: ok, empty (nothing could be measured) or error (the cluster could not be reached).", []string{"result"}, nil)
	descLastOK = prometheus.NewDesc("kubeslow_last_success_timestamp_seconds",
		"When the last cycle that reached the cluster ended (Unix time).", nil, nil)
	descFinding = prometheus.NewDesc("kubeslow_finding",
		"1 for each finding that fires: it held for --for consecutive cycles and its evidence is fresh. cause is the ID of the finding it is folded under, empty for a cause.",
		[]string{"id", "severity", "cause", "namespace", "pod", "node"}, nil)
	descFindings = prometheus.NewDesc("kubeslow_findings",
		"Findings of the last cycle by state: pending (not yet held for --for cycles) or firing.", []string{"state"}, nil)
	descStatus = prometheus.NewDesc("kubeslow_measurement_status",
		"1 for each measurement of the last cycle, with its status (Pass, Warn, Fail, Skip, Error).", []string{"measurement", "status"}, nil)
	descDropped = prometheus.NewDesc("kubeslow_metric_series_dropped",
		"kubeslow_metric series of the last cycle left out by the per-cycle cap.", nil, nil)
	descRequests = prometheus.NewDesc("kubeslow_cycle_api_requests",
		"Requests kubeslow sent to the apiserver in the last cycle (its own cost).", nil, nil)
	descBytes = prometheus.NewDesc("kubeslow_cycle_api_bytes_read",
		"Bytes kubeslow read from the apiserver in the last cycle (its own cost).", nil, nil)
	descCPU = prometheus.NewDesc("kubeslow_cycle_cpu_seconds",
		"CPU kubeslow used in the last cycle (its own cost).", nil, nil)
)

const metricHelp = "A number the last cycle's measurements produced, by measurement, metric name and unit, with the metric's own labels."

// reportSeries turns a report's measurements into series: a status per measurement and each numeric metric
// as kubeslow_metric (at most maxSeries, in the report's order; the rest are counted as dropped). Results
// about kubeslow itself are left out (their cost is exported as kubeslow_cycle_*).
func reportSeries(rep *result.Report, maxSeries int) (ms []prometheus.Metric, dropped int) {
	seen := map[string]bool{}
	n := 0
	for _, res := range rep.Results {
		if strings.HasPrefix(res.Name, result.SelfPrefix) {
			continue
		}
		ms = append(ms, prometheus.MustNewConstMetric(descStatus, prometheus.GaugeValue, 1, labelValue(res.Name), labelValue(string(res.Status))))
		for _, m := range res.Metrics {
			names, values := metricLabels(res.Name, m)
			sig := strings.Join(names, "\xff") + "\xfe" + strings.Join(values, "\xff")
			if seen[sig] {
				continue // the same series twice in one report: the first counts
			}
			if n >= maxSeries {
				dropped++
				continue
			}
			seen[sig] = true
			d := prometheus.NewDesc("kubeslow_metric", metricHelp, names, nil)
			pm, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, m.Value, values...)
			if err != nil {
				dropped++
				continue
			}
			ms = append(ms, pm)
			n++
		}
	}
	return ms, dropped
}

// metricLabels are a metric's label names and values, sorted by name: measurement, name and unit, then
// the metric's own labels sanitised (a key that sanitises to one already taken is prefixed "label_" until
// it is free).
func metricLabels(measurement string, m result.Metric) ([]string, []string) {
	lv := map[string]string{"measurement": labelValue(measurement), "name": labelValue(m.Name), "unit": labelValue(m.Unit)}
	keys := make([]string, 0, len(m.Labels))
	for k := range m.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := labelName(k)
		for {
			if _, taken := lv[n]; !taken {
				break
			}
			n = "label_" + n
		}
		lv[n] = labelValue(m.Labels[k])
	}
	names := make([]string, 0, len(lv))
	for k := range lv {
		names = append(names, k)
	}
	sort.Strings(names)
	values := make([]string, len(names))
	for i, k := range names {
		values[i] = lv[k]
	}
	return names, values
}

// overheadOf is kubeslow's own cost in a report (kubeslow.overhead): requests, bytes read, CPU seconds.
func overheadOf(rep *result.Report) (reqs, bytes, cpu float64, ok bool) {
	r := rep.Result(runner.OverheadName)
	if r == nil || !r.Status.Measured() {
		return 0, 0, 0, false
	}
	for _, m := range r.Metrics {
		switch {
		case m.Name == "api_requests_total" && len(m.Labels) == 0:
			reqs = m.Value
		case m.Name == "api_bytes_read_total" && len(m.Labels) == 0:
			bytes = m.Value
		case m.Name == "cpu" && len(m.Labels) == 0:
			cpu = m.Value
		}
	}
	return reqs, bytes, cpu, true
}

// collector exports the Watcher's state at each scrape. It is unchecked (Describe sends nothing) because
// kubeslow_metric's labels are each metric's own.
type collector struct{ w *Watcher }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range []string{CycleOK, CycleEmpty, CycleError} {
		ch <- prometheus.MustNewConstMetric(descCycles, prometheus.CounterValue, w.cycles[r], r)
	}
	if !w.started {
		return // nothing known yet: kubeslow_up appears with the first cycle's outcome
	}
	up := 0.0
	if w.up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descDuration, prometheus.GaugeValue, w.duration.Seconds())
	if w.last == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLastOK, prometheus.GaugeValue, float64(w.lastOK.UnixNano())/1e9)
	if reqs, bytes, cpu, ok := overheadOf(w.last); ok {
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.GaugeValue, reqs)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, bytes)
		ch <- prometheus.MustNewConstMetric(descCPU, prometheus.GaugeValue, cpu)
	}
	if !w.fresh() {
		return // stale evidence: no finding fires, no measurement is reported as current
	}
	firing, pending := 0.0, 0.0
	for _, s := range w.findings.sorted() {
		if !s.Firing {
			pending++
			continue
		}
		firing++
		ch <- prometheus.MustNewConstMetric(descFinding, prometheus.GaugeValue, 1,
			labelValue(s.ID), labelValue(string(s.Severity)), labelValue(s.Cause), labelValue(s.Namespace), labelValue(s.Pod), labelValue(s.Node))
	}
	ch <- prometheus.MustNewConstMetric(descFindings, prometheus.GaugeValue, pending, "pending")
	ch <- prometheus.MustNewConstMetric(descFindings, prometheus.GaugeValue, firing, "firing")
	for _, m := range w.series {
		ch <- m
	}
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.GaugeValue, float64(w.dropped))
}
