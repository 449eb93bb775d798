package promwindow

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow/timeline"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Names of the Prometheus-only results.
const (
	SourcesName  = "prometheus.sources"
	TimelineName = timeline.Name
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

// Run implements measure.Measurement: it reads the onsets the other measurements found (so it runs last);
// KS-PROM-ORDER reads its result (internal/measure/promwindow/timeline).
func (t *Timeline) Run(context.Context, *measure.Env) (result.Result, error) {
	q, n := t.src.Client.Cost()
	return timeline.Build(t.src.Onsets(), t.src.Window.From, t.src.Window.To, q, n, t.src.Window.Step), nil
}

// RegistryOf is the measurements of a Prometheus-backed run, sharing one source: discovery first, then the
// hand-written twins of the live measurements (their window deltas take more than a profile: histograms
// summed by the live labels, cAdvisor's quotas), then one Families measurement for every other Spec of `run`
// that declares Prometheus families, and the timeline last.
func RegistryOf(s *Source, specs []measure.Spec) *measure.Registry {
	ms := []measure.Measurement{&Sources{src: s}, NewAPI(s), NewEtcd(s), NewControlPlane(s), NewKubelet(s), NewThrottling(s), NewAgent(s), NewDNS(s), NewNodes(s)}
	twin := map[string]bool{}
	for _, m := range ms {
		twin[m.Name()] = true
	}
	for _, sp := range specs {
		if !sp.Bench && len(sp.Prometheus) > 0 && !twin[sp.Name] {
			ms = append(ms, &Families{src: s, spec: sp})
		}
	}
	return measure.NewRegistry(append(ms, &Timeline{src: s})...)
}
