package promwindow

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// FamiliesTop is how many series (the highest peaks first) of one family a Families measurement keeps.
const FamiliesTop = 20

// Families is a measurement of `run` read from Prometheus through the families its Spec declares
// (measure.Spec.Prometheus), for a measurement with no hand-written twin here: each family's range query over
// the window is a profile (its series, marked where they crossed the rule's threshold), and each series' worst
// step is a sample of the family's metric, the value the rule compares with its threshold. The result has the
// live measurement's name, so its rules read it; a family with no series in the window is listed as absent (its
// rule is not evaluated, never clear), and a role Prometheus does not scrape skips the measurement.
type Families struct {
	src  *Source
	spec measure.Spec
}

// Name implements measure.Measurement: the live measurement's name.
func (f *Families) Name() string { return f.spec.Name }

// Description implements measure.Measurement.
func (f *Families) Description() string {
	what := make([]string, len(f.spec.Prometheus))
	for i, fam := range f.spec.Prometheus {
		what[i] = fam.What
	}
	return fmt.Sprintf("%s from Prometheus over %s: %s (worst step of each series)", f.spec.Name, f.src.Window, strings.Join(what, ", "))
}

// Run implements measure.Measurement.
func (f *Families) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := f.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	res := result.Result{Name: f.spec.Name, Status: result.StatusPass, Start: s.Window.From, End: s.Window.To}
	for _, fam := range f.spec.Prometheus {
		job, ok := s.Selector(fam.Role)
		if !ok {
			return result.Result{}, measure.Skipf("%s", s.absentReason(fam.Role))
		}
		p := profile{Result: f.spec.Name, Metric: fam.Metric, Unit: fam.Unit, What: fam.What, Top: FamiliesTop,
			Query: strings.NewReplacer("$job", job, "$rate", s.rate()).Replace(fam.Query)}
		if fam.Rule != "" {
			c, err := f.condition(fam.Rule)
			if err != nil {
				return result.Result{}, err
			}
			p.Op, p.Threshold = c.Op, c.Value
		}
		n := len(res.Series)
		if err := s.addProfile(ctx, &res, p); err != nil {
			return res, err
		}
		for _, se := range res.Series[n:] {
			peak := math.Inf(-1)
			for _, pt := range se.Points {
				peak = max(peak, pt.V)
			}
			labels := map[string]string{"prometheus": fmt.Sprintf("worst step of %s %s", jobValue(job), s.Window)}
			for k, v := range se.Labels {
				labels[k] = v
			}
			res.Metrics = append(res.Metrics, result.Metric{Name: fam.Metric, Unit: fam.Unit, Value: peak, Labels: labels})
		}
		if len(res.Series) == n {
			res.Absent = append(res.Absent, result.Absence{Metric: fam.Metric, Series: p.Query,
				Reason: fmt.Sprintf("no series in %s for job %s", s.Window, jobValue(job))})
		}
	}
	return res, nil
}

// condition is the threshold of the Spec's rule id; a family naming a rule its Spec does not declare is an
// error of the Spec.
func (f *Families) condition(id string) (rule.Condition, error) {
	if f.spec.Rules != nil {
		for _, r := range f.spec.Rules() {
			if r.ID == id {
				return r.When, nil
			}
		}
	}
	return rule.Condition{}, fmt.Errorf("%s's Prometheus family names rule %s, which its Spec does not declare", f.spec.Name, id)
}
