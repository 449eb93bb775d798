package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/availability"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// markOutages marks what the control plane's outages (controlplane.availability's windows: etcd not
// answering the apiserver, the apiserver unreachable) interrupted, so that kubeslow's missing or disturbed
// data are not read as the cluster's slowness:
//   - each result that ran through an outage says so in its reason (an Error or Skip keeps its status: it
//     could not measure, and now says why);
//   - each finding resting on such a result, when the outage's own rule fired (KS-ETCD-STALL,
//     KS-APISERVER-UNREACHABLE), is lowered to info and explained by it: one cause, one finding.
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
	fired := map[string]*result.Finding{}
	for i := range rep.Findings {
		fired[rep.Findings[i].ID] = &rep.Findings[i]
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.ExplainedBy != "" || f.ID == availability.RuleEtcdStall || f.ID == availability.RuleUnreachable {
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
				f.ExplainedBy, f.Severity = id, result.SeverityInfo
				f.Summary += fmt.Sprintf(" — measured through %s (%s): %s", id, w.Describe(), "a consequence of that outage more than a cause of its own; fix "+id+" first and measure again")
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
