// Package timeline is the last result of the past-window path (`kubeslow run --prometheus`),
// prometheus.timeline: when each signal crossed its rule's threshold in the window, in order, and the rule
// that reads it, KS-PROM-ORDER. It is a leaf, apart from promwindow (which builds the result from its range
// queries), so that the findings engine (internal/engine/check) can hold the rule while promwindow reads the rule
// set for its thresholds.
package timeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name is the result's name.
const Name = "prometheus.timeline"

// Metric names of the result.
const (
	MetricSignalsCrossed = "signals_crossed"
	MetricQueries        = "queries"
	MetricSamples        = "samples"
	MetricStep           = "step"
)

// OrderMinSignals is how many signals must cross for their order to be a finding.
const OrderMinSignals = 2

// Onset is the first instant a signal crossed its threshold in the window.
type Onset struct {
	Result, Metric, What string
	Labels               map[string]string
	At                   time.Time
	Value, Threshold     float64
	Op, Unit             string
}

// Build is the timeline of onsets (earliest first) over the window from..to: one record per signal, and
// the queries and samples the run cost Prometheus at the profiles' step.
func Build(onsets []Onset, from, to time.Time, queries, samples int, step time.Duration) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass, Start: from, End: to}
	for _, o := range onsets {
		labels := map[string]string{"result": o.Result, "metric": o.Metric, "what": o.What, "op": o.Op, "unit": o.Unit}
		for k, v := range o.Labels {
			labels["series_"+k] = v
		}
		res.Records = append(res.Records, result.Record{ID: onsetID(o), Labels: labels,
			Values: map[string]float64{"value": o.Value, "threshold": o.Threshold}, Times: map[string]time.Time{"onset": o.At}})
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: MetricSignalsCrossed, Unit: "count", Value: float64(len(res.Records))},
		result.Metric{Name: MetricQueries, Unit: "count", Value: float64(queries)}, result.Metric{Name: MetricSamples, Unit: "count", Value: float64(samples)},
		result.Metric{Name: MetricStep, Unit: "seconds", Value: step.Seconds()})
	return res
}

func onsetID(o Onset) string {
	if l := result.FormatLabels(o.Labels); l != "" {
		return o.What + " (" + l + ")"
	}
	return o.What
}

// Rules is KS-PROM-ORDER: when two or more signals crossed their thresholds, which went first and how long
// before each of the others ("API p99 rose at 14:58:10, 40 s after etcd WAL fsync p99").
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-PROM-ORDER", Title: "Signals went bad in this order", Severity: result.SeverityInfo,
		When:    rule.Condition{Metric: rule.Metric{Result: Name, Name: MetricSignalsCrossed}, Op: ">=", Value: OrderMinSignals, Unit: "count"},
		Source:  "kubeslow: each signal's onset is the first profile point past the threshold of the rule that reads it",
		Summary: "{{.order}}: the first to cross is the likelier cause, the later ones its consequences",
		Remediation: "Start with the finding of the first signal named; the later ones often clear with it (a slow disk makes etcd's " +
			"fsyncs slow, then the API's writes).",
		Match: order,
	}}
}

// order is KS-PROM-ORDER's one hit: the signals in the order they crossed, each with its onset.
func order(r *result.Report, rl rule.Rule) []rule.Hit {
	res := r.Result(Name)
	n := res.Metric(MetricSignalsCrossed, nil)
	if n == nil || !rl.When.Holds(n.Value) || len(res.Records) == 0 {
		return nil
	}
	first := res.Records[0]
	t0 := first.Times["onset"]
	var parts []string
	var ev []result.Evidence
	for i, rec := range res.Records {
		at := rec.Times["onset"]
		ev = append(ev, result.Evidence{Name: rec.Labels["metric"], Value: rec.Values["value"], Unit: rec.Labels["unit"],
			Labels: map[string]string{"signal": rec.ID, "onset": at.Format(time.RFC3339)}, Result: rec.Labels["result"]})
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s crossed %s at %s", rec.ID, result.FormatQuantity(rec.Values["threshold"], rec.Labels["unit"]), at.Format("15:04:05")))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s at %s, %s after", rec.ID, at.Format("15:04:05"), at.Sub(t0).Round(time.Second)))
	}
	return []rule.Hit{{Value: n.Value, Evidence: ev, Vars: map[string]string{"order": strings.Join(parts, "; "), "first": first.ID}}}
}
