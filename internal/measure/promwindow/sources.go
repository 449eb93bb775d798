package promwindow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Names of the Prometheus-only results.
const (
	SourcesName  = "prometheus.sources"
	TimelineName = "prometheus.timeline"
)

// Sources is the discovery as a result: which exporters (jobs) the server has for the window and which it
// lacks, one record per role.
type Sources struct{ src *Source }

// Name implements measure.Measurement.
func (*Sources) Name() string { return SourcesName }

// Description implements measure.Measurement.
func (s *Sources) Description() string {
	return fmt.Sprintf("which exporters %s scraped in %s (job per role, found by a series only that role exposes)", s.src.Client.URL(), s.src.Window)
}

// Run implements measure.Measurement.
func (s *Sources) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	if err := s.src.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	res := result.Result{Name: SourcesName, Status: result.StatusPass, Start: s.src.Window.From, End: s.src.Window.To}
	var found, missing []string
	for _, r := range Roles {
		t := s.src.Target(r.Name)
		rec := result.Record{ID: r.Name, Labels: map[string]string{"signature": r.Signature, "what": r.What}, Values: map[string]float64{"series": float64(t.Series)}}
		if t.Override != "" {
			rec.Labels["override"] = t.Override
		}
		if t.Job == "" {
			rec.Labels["status"] = "absent"
			missing = append(missing, r.Name)
		} else {
			rec.Labels["status"], rec.Labels["job"] = "found", t.Job
			found = append(found, fmt.Sprintf("%s (job %q, %d series)", r.Name, t.Job, t.Series))
		}
		if len(t.Others) > 0 {
			rec.Labels["other_jobs"] = strings.Join(t.Others, ",") // not read: the same targets scraped twice would double every sum
		}
		res.Records = append(res.Records, rec)
	}
	res.Metrics = append(res.Metrics, result.Metric{Name: "roles_found", Unit: "count", Value: float64(len(found))},
		result.Metric{Name: "roles_absent", Unit: "count", Value: float64(len(missing))})
	res.Reason = "found: " + strings.Join(found, ", ")
	if len(found) == 0 {
		res.Reason = "found nothing"
	}
	if len(missing) > 0 {
		res.Reason += "; absent: " + strings.Join(missing, ", ")
	}
	if len(found) == 0 {
		return res, fmt.Errorf("%s has none of the series kubeslow reads in %s (is it the cluster's Prometheus, and the window right?)", s.src.Client.URL(), s.src.Window)
	}
	return res, nil
}

// Timeline orders the signals that crossed their thresholds in the window: which went bad first, and how
// long before the others.
type Timeline struct{ src *Source }

// Name implements measure.Measurement.
func (*Timeline) Name() string { return TimelineName }

// Description implements measure.Measurement.
func (*Timeline) Description() string {
	return "when each signal crossed its rule's threshold in the window, in order; queries and samples this run cost"
}

// Run implements measure.Measurement: it reads the onsets the other measurements found (so it runs last).
func (t *Timeline) Run(context.Context, *measure.Env) (result.Result, error) {
	res := result.Result{Name: TimelineName, Status: result.StatusPass, Start: t.src.Window.From, End: t.src.Window.To}
	for _, o := range t.src.Onsets() {
		labels := map[string]string{"result": o.Result, "metric": o.Metric, "what": o.What, "op": o.Op, "unit": o.Unit}
		for k, v := range o.Labels {
			labels["series_"+k] = v
		}
		res.Records = append(res.Records, result.Record{ID: onsetID(o), Labels: labels,
			Values: map[string]float64{"value": o.Value, "threshold": o.Threshold}, Times: map[string]time.Time{"onset": o.At}})
	}
	q, n := t.src.Client.Cost()
	res.Metrics = append(res.Metrics, result.Metric{Name: "signals_crossed", Unit: "count", Value: float64(len(res.Records))},
		result.Metric{Name: "queries", Unit: "count", Value: float64(q)}, result.Metric{Name: "samples", Unit: "count", Value: float64(n)},
		result.Metric{Name: "step", Unit: "seconds", Value: t.src.Window.Step.Seconds()})
	return res, nil
}

func onsetID(o Onset) string {
	if l := result.FormatLabels(o.Labels); l != "" {
		return o.What + " (" + l + ")"
	}
	return o.What
}

// OrderMinSignals is how many signals must cross for their order to be a finding.
const OrderMinSignals = 2

// Diagnose implements measure.Diagnoser: when two or more signals crossed their thresholds, it says which went
// first and how long before each of the others ("API p99 rose at 14:58:10, 40 s after etcd WAL fsync p99").
func (*Timeline) Diagnose(res result.Result) []result.Finding {
	if len(res.Records) < OrderMinSignals {
		return nil
	}
	first := res.Records[0]
	t0 := first.Times["onset"]
	var parts []string
	var ev []result.Evidence
	for i, r := range res.Records {
		at := r.Times["onset"]
		ev = append(ev, result.Evidence{Name: r.Labels["metric"], Value: r.Values["value"], Unit: r.Labels["unit"],
			Labels: map[string]string{"signal": r.ID, "onset": at.Format(time.RFC3339)}, Result: r.Labels["result"]})
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s crossed %s at %s", r.ID, result.FormatQuantity(r.Values["threshold"], r.Labels["unit"]), at.Format("15:04:05")))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s at %s, %s after", r.ID, at.Format("15:04:05"), at.Sub(t0).Round(time.Second)))
	}
	return []result.Finding{{
		ID: "KS-PROM-ORDER", Severity: result.SeverityInfo, Title: "Signals went bad in this order",
		Summary:  strings.Join(parts, "; ") + ": the first to cross is the likelier cause, the later ones its consequences",
		Evidence: ev,
		Threshold: result.Threshold{Op: ">=", Value: OrderMinSignals, Unit: "signals",
			Source: "kubeslow: each signal's onset is the first profile point past the threshold of the rule that reads it"},
		Remediation: "Start with the finding of the first signal (" + first.ID + "); the later ones often clear with it.",
		Results:     []string{TimelineName},
	}}
}

// Registry is the measurements of a Prometheus-backed run, sharing one source: discovery first, the timeline
// last.
func Registry(s *Source) *measure.Registry {
	return measure.NewRegistry(&Sources{src: s}, NewAPI(s), NewEtcd(s), NewControlPlane(s), NewKubelet(s), NewThrottling(s), NewAgent(s), NewDNS(s), NewNodes(s), &Timeline{src: s})
}
