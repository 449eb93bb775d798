package runner

import (
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Gaps folds what r could not measure into one gap per source (result.FoldGaps with measure.GapSource), each
// rule not evaluated under the result or metric that starved it, found as the rule engine finds it: the first of
// its inputs not measured, else the first metric it reads that its result lists as absent.
func Gaps(r *result.Report, rules []rule.Rule) []result.Gap {
	return result.FoldGaps(r, measure.GapSource, Starved(r, rules))
}

// Starved names, by rule ID, what left each rule of r not evaluated.
func Starved(r *result.Report, rules []rule.Rule) map[string]result.Starved {
	notEval := map[string]bool{}
	for _, e := range r.Rules {
		if e.Status == result.RuleNotEvaluated {
			notEval[e.ID] = true
		}
	}
	out := map[string]result.Starved{}
	for _, rl := range rules {
		if !notEval[rl.ID] {
			continue
		}
		if s, ok := starvedBy(r, rl); ok {
			out[rl.ID] = s
		}
	}
	return out
}

func starvedBy(r *result.Report, rl rule.Rule) (result.Starved, bool) {
	for _, n := range rl.Inputs() {
		if res := r.Result(n); res == nil || !res.Status.Measured() {
			return result.Starved{Result: n}, true
		}
	}
	for _, m := range rl.Metrics() {
		res := r.Result(m.Result)
		if res == nil {
			continue
		}
		for _, a := range res.Absent {
			if a.Metric == m.Name {
				return result.Starved{Result: m.Result, Metric: m.Name}, true
			}
		}
	}
	return result.Starved{}, false
}

// skipNote says a skip's reason in a progress line once per source (measure.GapSource): the first skip of a
// source gives its reason, the next ones name the source said above.
type skipNote map[string]bool

func (s skipNote) say(r result.Result) string {
	if r.Status != result.StatusSkip {
		return r.Reason
	}
	e := result.GapEntry{Result: r.Name, Status: r.Status, Reason: r.Reason}
	if len(r.OutOfReach) > 0 {
		e.OutOfReach = &r.OutOfReach[0]
	}
	k := measure.GapSource(e)
	if strings.HasPrefix(k.Source, "reason:") || strings.HasPrefix(k.Source, "signal:") {
		return r.Reason // not a source of kubeslow's own: its reason as it is
	}
	said := r.Reason
	switch {
	case k.Via != nil && s[k.Via.Source]:
		said = strings.Replace(k.Reason, ", below)", ", said above)", 1)
	case k.Via == nil && s[k.Source]:
		said = "(" + k.Title + ": said above)"
	}
	s[k.Source] = true
	if k.Via != nil {
		s[k.Via.Source] = true
	}
	return said
}
