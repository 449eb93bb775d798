package availability

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Metric names.
const (
	MetricProbes                = "probes"
	MetricEtcdUnavailable       = "etcd_unavailable_seconds"
	MetricEtcdLongest           = "etcd_unavailable_longest_seconds"
	MetricUnreachable           = "apiserver_unreachable_seconds"
	MetricUnreachableLongest    = "apiserver_unreachable_longest_seconds"
	MetricNotReady              = "not_ready_seconds"
	MetricOutages               = "outages"
	windowRecordPrefix          = "outage "
	timeLayout                  = "15:04:05"
	labelCause, labelChecks     = "cause", "failing_checks"
	valueSeconds, valueProbes   = "seconds", "probes"
	timeStart, timeEnd          = "start", "end"
	seriesName, seriesUnitReady = "readyz_ok", "ratio"
)

// Window is one outage: consecutive failed probes of one cause, from the first failed probe to the first
// probe after its last failed one (or that probe's answer, when it was the last).
type Window struct {
	Cause      string
	Failing    []string
	Start, End time.Time
	Probes     int
}

// Seconds is the window's length.
func (w Window) Seconds() float64 { return w.End.Sub(w.Start).Seconds() }

// Windows groups the probes (in time order) into outages, per target: the apiserver's own probe's windows
// (unreachable, not ready) and etcd's (its checks failing) are apart, so an apiserver outage inside an etcd
// stall is named as well as the stall (and an etcd window runs through the probes whose etcd state was
// unseen when etcd failed on both sides of them).
func Windows(ps []Probe) []Window {
	byTarget := map[string][]Probe{}
	var targets []string
	for _, p := range ps {
		if _, ok := byTarget[p.Target]; !ok {
			targets = append(targets, p.Target)
		}
		byTarget[p.Target] = append(byTarget[p.Target], p)
	}
	var out []Window
	for _, t := range targets {
		out = append(out, windowsOf(byTarget[t])...)
	}
	slices.SortStableFunc(out, func(a, b Window) int { return a.Start.Compare(b.Start) })
	return out
}

func windowsOf(ps []Probe) []Window {
	var out []Window
	var cur *Window
	last := -1 // the window's last failed probe
	closeAt := func() {
		if last+1 < len(ps) {
			cur.End = ps[last+1].T
		} else {
			// Still failing at the last probe: the window lasts at least to that probe's answer.
			cur.End = ps[last].T.Add(max(ps[last].Latency, time.Millisecond))
		}
		out = append(out, *cur)
		cur = nil
	}
	for i, p := range ps {
		cause := p.Cause
		if p.OK || cause == CauseForbidden {
			cause = ""
		}
		if cause == CauseUnknown {
			continue
		}
		if cur != nil && cur.Cause != cause {
			closeAt()
		}
		if cause == "" {
			continue
		}
		if cur == nil {
			cur = &Window{Cause: cause, Start: p.T}
		}
		cur.Probes++
		last = i
		for _, c := range p.Failing {
			if !slices.Contains(cur.Failing, c) {
				cur.Failing = append(cur.Failing, c)
			}
		}
	}
	if cur != nil {
		closeAt()
	}
	return out
}

// Analyze turns the probes into the result: the outage windows as records, the time etcd did not answer
// the apiserver and the time the apiserver was unreachable, a readiness series.
func Analyze(ps []Probe) result.Result {
	r := result.Result{Name: Name, Status: result.StatusPass, Start: ps[0].T, End: ps[len(ps)-1].T.Add(ps[len(ps)-1].Latency)}
	for _, p := range ps {
		r.End = stats.Later(r.End, p.T.Add(p.Latency))
	}
	ws := Windows(ps)
	total := map[string]float64{}
	longest := map[string]float64{}
	var why []string
	for _, w := range ws {
		total[w.Cause] += w.Seconds()
		longest[w.Cause] = max(longest[w.Cause], w.Seconds())
		rec := result.Record{ID: windowRecordPrefix + w.Cause + " " + w.Start.UTC().Format(timeLayout),
			Labels: map[string]string{labelCause: w.Cause},
			Values: map[string]float64{valueSeconds: w.Seconds(), valueProbes: float64(w.Probes)},
			Times:  map[string]time.Time{timeStart: w.Start, timeEnd: w.End}}
		if len(w.Failing) > 0 {
			rec.Labels[labelChecks] = strings.Join(w.Failing, ",")
		}
		r.Records = append(r.Records, rec)
		why = append(why, describe(w))
	}
	forbidden, probes := 0, 0
	ser := result.Series{Name: seriesName, Unit: seriesUnitReady}
	for _, p := range ps {
		if p.Target == TargetEtcd {
			continue // the apiserver's probe of the same tick counts the tick
		}
		probes++
		v := 0.0
		if p.OK {
			v = 1
		}
		if p.Cause == CauseForbidden {
			forbidden++
			continue
		}
		ser.Points = append(ser.Points, result.Point{T: p.T, V: v})
	}
	for _, w := range ws {
		ser.Marks = append(ser.Marks, result.Mark{T: w.Start, Label: w.Cause})
	}
	if forbidden == probes {
		r.Status, r.Reason = result.StatusSkip, "no permission to get /readyz: "+ps[0].Err
		return r
	}
	r.Series = append(r.Series, ser)
	r.Metrics = append(r.Metrics,
		result.Metric{Name: MetricProbes, Unit: "count", Value: float64(probes - forbidden)},
		result.Metric{Name: MetricOutages, Unit: "count", Value: float64(len(ws))},
		result.Metric{Name: MetricEtcdUnavailable, Unit: "seconds", Value: total[CauseEtcd]},
		result.Metric{Name: MetricEtcdLongest, Unit: "seconds", Value: longest[CauseEtcd]},
		result.Metric{Name: MetricUnreachable, Unit: "seconds", Value: total[CauseUnreachable]},
		result.Metric{Name: MetricUnreachableLongest, Unit: "seconds", Value: longest[CauseUnreachable]},
		result.Metric{Name: MetricNotReady, Unit: "seconds", Value: total[CauseNotReady]},
	)
	if len(why) > 0 {
		r.Status, r.Reason = result.StatusWarn, strings.Join(why, "; ")
	}
	return r
}

// checks names the failing checks, the first three and how many more.
func checks(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

func describe(w Window) string {
	span := fmt.Sprintf("for %.1f s (%s to %s UTC, %d probes)", w.Seconds(), w.Start.UTC().Format(timeLayout), w.End.UTC().Format(timeLayout), w.Probes)
	switch w.Cause {
	case CauseEtcd:
		if len(w.Failing) == 0 {
			return "etcd did not answer the apiserver " + span + ": readyz's etcd checks did not answer within the probe's time-out while its other checks did"
		}
		return "etcd did not answer the apiserver " + span + ": readyz's " + checks(w.Failing) + " check failed"
	case CauseUnreachable:
		return "the apiserver was unreachable " + span
	default:
		return "the apiserver was not ready " + span + ": failing " + checks(w.Failing)
	}
}

// Outages reads the outage windows back from the measurement's result (for marking the measurements that
// ran through them).
func Outages(r result.Result) []Window {
	var out []Window
	for _, rec := range r.Records {
		if !strings.HasPrefix(rec.ID, windowRecordPrefix) {
			continue
		}
		w := Window{Cause: rec.Labels[labelCause], Start: rec.Times[timeStart], End: rec.Times[timeEnd], Probes: int(rec.Values[valueProbes])}
		if c := rec.Labels[labelChecks]; c != "" {
			w.Failing = strings.Split(c, ",")
		}
		out = append(out, w)
	}
	return out
}

// Describe says what the window was, for a note on a measurement it interrupted.
func (w Window) Describe() string { return describe(w) }
