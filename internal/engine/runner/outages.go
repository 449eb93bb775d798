package runner

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/internal/measure/cpusage"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The rules of internal/engine/check the starvation order reads (the runner does not import the catalogue).
const (
	ruleCPSaturated    = "KS-CP-SATURATED"
	ruleCPSaturatedAPI = "KS-CP-SATURATED-API"
	ruleAPILatency     = "KS-API-LATENCY"
)

// Starvation is a control-plane component runnable but waiting for a CPU most of its time in the window, as the
// node agent read its threads' run-queue wait (/proc/<pid>/task/*/schedstat): at least StarvedWaitShare of its
// runnable time and StarvedWaitRate seconds per second. Under a heavy neighbour etcd's threads waited 1.48 s/s
// (99%) and kube-apiserver's 1.02 s/s (85%); the healthy 2-core kubeadm lab reads 0.16-0.23 s/s, and a process
// stopped by a signal or blocked on its disk is not runnable and accrues none.
const (
	StarvedWaitShare = 0.5
	StarvedWaitRate  = 0.5
)

// PressureLookback is how far before its window a starvation reaches when the starved component's node was
// under CPU pressure at the window's start too (PSI "some" avg60 >= StarvedWaitShare, read by the node agent
// as it started): the minute that average covers. On a starved node the node agent itself starts late (CI's
// run of 2026-11-29: its pod took 30 s to answer, and the apiserver's outages all came before its window).
const PressureLookback = time.Minute

// starved is a component's run-queue wait over the window, when it was starved, and its node's CPU pressure
// at the window's start (before: -1 where unread).
type starved struct {
	component, node string
	rate, share     float64
	before          float64
	ev              []result.Evidence
}

func (s starved) String() string {
	out := fmt.Sprintf("%s's threads waited %.2f s/s for a CPU (%.0f%% of their runnable time, node agent on %s)", s.component, s.rate, s.share*100, s.node)
	if s.reachesBack() {
		out += fmt.Sprintf(", and tasks on %s waited for a CPU %.0f%% of the minute before that window (PSI avg60 at its start)", s.node, s.before*100)
	}
	return out
}

func (s starved) reachesBack() bool { return s.before >= StarvedWaitShare }

// starvedComponents are kube-apiserver and etcd where the node agent saw them starved, worst first, and the
// span of the measurement that read them.
func starvedComponents(rep *result.Report) ([]starved, time.Time, time.Time) {
	r := rep.Result(cpusage.Name)
	if r == nil || !r.Status.Measured() {
		return nil, time.Time{}, time.Time{}
	}
	var out []starved
	for _, m := range r.Metrics {
		if m.Name != cpusage.MetricComponentSchedWait || (m.Labels["component"] != cpusage.APIServer && m.Labels["component"] != cpusage.Etcd) {
			continue
		}
		sh := r.Metric(cpusage.MetricComponentWaitShare, map[string]string{"component": m.Labels["component"], "node": m.Labels["node"]})
		if sh == nil || m.Value < StarvedWaitRate || sh.Value < StarvedWaitShare {
			continue
		}
		ev := []result.Evidence{{Name: m.Name, Value: m.Value, Unit: m.Unit, Labels: m.Labels, Result: r.Name},
			{Name: sh.Name, Value: sh.Value, Unit: sh.Unit, Labels: sh.Labels, Result: r.Name}}
		s := starved{component: m.Labels["component"], node: m.Labels["node"], rate: m.Value, share: sh.Value, before: -1, ev: ev}
		if b := r.Metric(cpusage.MetricCPUPressureBefore, map[string]string{"instance": s.node}); b != nil {
			s.before = b.Value
			if s.reachesBack() {
				s.ev = append(s.ev, result.Evidence{Name: b.Name, Value: b.Value, Unit: b.Unit, Labels: b.Labels, Result: r.Name})
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rate > out[j].rate })
	start := r.Start
	if !start.IsZero() && slices.ContainsFunc(out, starved.reachesBack) {
		start = start.Add(-PressureLookback)
	}
	return out, start, r.End
}

// starvationFirst orders CPU starvation before the outages and latency it makes: where the node tier saw
// kube-apiserver or etcd starved in a window that met an outage and KS-CP-SATURATED (or -API) fired, the
// stall of etcd (KS-ETCD-STALL), the API's latency (KS-API-LATENCY) and, when kube-apiserver itself was starved,
// its unreachability (KS-APISERVER-UNREACHABLE) are its symptoms: lowered to info under it, which keeps its
// severity and says why it came first. A stall with no such wait (a process stopped by a signal, blocked on its
// disk) stays the cause. It returns the saturation finding that leads (nil: none).
func starvationFirst(rep *result.Report, ws []availability.Window) *result.Finding {
	comps, start, end := starvedComponents(rep)
	if len(comps) == 0 {
		return nil
	}
	met := false
	for _, w := range ws {
		met = met || overlaps(start, end, w)
	}
	if !met {
		return nil
	}
	var sat *result.Finding
	for _, id := range []string{ruleCPSaturated, ruleCPSaturatedAPI} {
		for i := range rep.Findings {
			if f := &rep.Findings[i]; sat == nil && f.ID == id && f.ExplainedBy == "" {
				sat = f
			}
		}
	}
	if sat == nil {
		return nil
	}
	apiStarved := false
	var why []string
	for _, c := range comps {
		apiStarved = apiStarved || c.component == cpusage.APIServer
		why = append(why, c.String())
	}
	symptoms := map[string]bool{availability.RuleEtcdStall: true, ruleAPILatency: true, availability.RuleUnreachable: apiStarved}
	var folded []string
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if !symptoms[f.ID] || (f.ExplainedBy != "" && !symptoms[f.ExplainedBy]) {
			continue // a symptom of another cause (etcd's disk) stays under it
		}
		if f.ExplainedBy != "" { // a symptom of a symptom: the starvation replaces the nearer cause's clause
			if i := strings.Index(f.Summary, " — a symptom of "+f.ExplainedBy+" "); i >= 0 {
				f.Summary = f.Summary[:i]
			}
		}
		f.ExplainedBy, f.Severity = sat.ID, result.SeverityInfo
		f.Summary += fmt.Sprintf(" — a symptom of %s: %s during it: starvation came first; fix that first and measure again", sat.ID, strings.Join(why, "; "))
		folded = append(folded, f.ID)
	}
	if len(folded) == 0 {
		return nil
	}
	sat.Summary += fmt.Sprintf("; %s during %s: starvation came first (threshold: waiting for a CPU >= %.0f%% of its runnable time and >= %.1f s per second, "+
		"source: the node agent's run-queue wait, a component runnable but waiting most of its time is starved)",
		strings.Join(why, "; "), strings.Join(folded, ", "), StarvedWaitShare*100, StarvedWaitRate)
	have := map[string]bool{}
	for _, e := range sat.Evidence {
		have[e.Name+" "+result.FormatLabels(e.Labels)] = true
	}
	for _, c := range comps {
		for _, e := range c.ev {
			if !have[e.Name+" "+result.FormatLabels(e.Labels)] {
				sat.Evidence = append(sat.Evidence, e)
			}
		}
	}
	return sat
}

// markOutages marks what the control plane's outages (controlplane.availability's windows: etcd not
// answering the apiserver, the apiserver unreachable) interrupted, so that kubeslow's missing or disturbed
// data are not read as the cluster's slowness:
//   - each result that ran through an outage says so in its reason (an Error or Skip keeps its status: it
//     could not measure, and now says why);
//   - each finding resting on such a result, when the outage's own rule fired (KS-ETCD-STALL,
//     KS-APISERVER-UNREACHABLE), is lowered to info and explained by it: one cause, one finding;
//   - except CPU starvation, which comes first (starvationFirst): where the node agent saw kube-apiserver or
//     etcd waiting for a CPU most of their time, KS-CP-SATURATED keeps its severity and the outages are its
//     symptoms.
func markOutages(rep *result.Report) {
	var ws []availability.Window
	for _, r := range rep.Results {
		if r.Name == availability.Name && r.Status.Measured() {
			ws = availability.Outages(r)
		}
	}
	if len(ws) == 0 {
		return
	}
	through := map[string][]availability.Window{}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Name == availability.Name || strings.HasPrefix(r.Name, result.SelfPrefix) {
			continue
		}
		var notes []string
		for _, w := range ws {
			if overlaps(r.Start, r.End, w) {
				through[r.Name] = append(through[r.Name], w)
				notes = append(notes, w.Describe())
			}
		}
		if len(notes) == 0 {
			continue
		}
		note := "ran through an outage: " + strings.Join(notes, "; ")
		if r.Reason == "" {
			r.Reason = note
		} else {
			r.Reason += " (" + note + ")"
		}
	}
	lead := starvationFirst(rep, ws)
	fired := map[string]*result.Finding{}
	for i := range rep.Findings {
		fired[rep.Findings[i].ID] = &rep.Findings[i]
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.ExplainedBy != "" || f.ID == availability.RuleEtcdStall || f.ID == availability.RuleUnreachable || (lead != nil && f.ID == lead.ID) {
			continue
		}
	results:
		for _, name := range f.Results {
			for _, w := range through[name] {
				id := availability.RuleFor(w.Cause)
				by := fired[id]
				if by == nil {
					continue
				}
				fix := id
				if by.ExplainedBy != "" && lead != nil && by.ExplainedBy == lead.ID {
					fix = lead.ID // the outage was itself starvation's symptom
				}
				f.ExplainedBy, f.Severity = id, result.SeverityInfo
				f.Summary += fmt.Sprintf(" — measured through %s (%s): %s", id, w.Describe(), "a consequence of that outage more than a cause of its own; fix "+fix+" first and measure again")
				break results
			}
		}
	}
}

// overlaps reports whether [start, end] meets the window (a result without times meets none).
func overlaps(start, end time.Time, w availability.Window) bool {
	if start.IsZero() || end.IsZero() {
		return false
	}
	return start.Before(w.End) && w.Start.Before(end)
}
