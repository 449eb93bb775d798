package promwindow

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/internal/measure/promwindow/timeline"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/promql"
	"github.com/kubeslow/kubeslow/internal/stats"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// profile is one signal over the window: a range query whose series become result.Series named like the metric
// the rule reads, and the rule's threshold, whose first crossing is the signal's onset.
type profile struct {
	Result, Metric, Unit string
	// Rule is the ID of the rule reading the metric: its threshold makes the onset. Without one, Op and
	// Threshold say it.
	Rule      string
	Op        string
	Threshold float64
	// What names the signal in the timeline ("etcd WAL fsync p99").
	What  string
	Query string
	// Top keeps the series with the highest peaks (0: 1).
	Top int
}

// Onset is the first instant a signal crossed its threshold in the window.
type Onset = timeline.Onset

// rate is the rate() window of profile points.
func (s *Source) rate() string { return promql.PromDuration(s.Window.Rate) }

// addProfile runs p's range query and adds its series (with their onset marks) to res.
func (s *Source) addProfile(ctx context.Context, res *result.Result, p profile) error {
	if p.Rule != "" {
		c := s.ruleCondition(p.Rule)
		p.Op, p.Threshold = c.Op, c.Value
	}
	m, err := s.Client.Range(ctx, p.Query, s.Window.Range())
	if err != nil {
		return err
	}
	// The query is recorded once per profile (not on the series: their labels are the plots' legends).
	res.Records = append(res.Records, result.Record{ID: "profile " + p.Metric, Labels: map[string]string{"query": p.Query,
		"step": s.Window.Step.String(), "rate": s.Window.Rate.String()}})
	top := p.Top
	if top <= 0 {
		top = 1
	}
	peak := func(ss *model.SampleStream) float64 {
		mx := math.Inf(-1)
		for _, v := range ss.Values {
			if f := float64(v.Value); !math.IsNaN(f) && f > mx {
				mx = f
			}
		}
		return mx
	}
	sort.SliceStable(m, func(i, j int) bool { return peak(m[i]) > peak(m[j]) })
	for i, ss := range m {
		if i == top {
			break
		}
		series := result.Series{Name: p.Metric, Unit: p.Unit, Labels: labelsOf(ss.Metric)}
		var onset *Onset
		for _, v := range ss.Values {
			f := float64(v.Value)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue // no requests in that step: no percentile
			}
			t := v.Timestamp.Time().UTC()
			series.Points = append(series.Points, result.Point{T: t, V: f})
			if onset == nil && rule.Compare(f, p.Op, p.Threshold) {
				onset = &Onset{Result: p.Result, Metric: p.Metric, What: p.What, Labels: labelsOf(ss.Metric), At: t, Value: f,
					Threshold: p.Threshold, Op: p.Op, Unit: p.Unit}
			}
		}
		if len(series.Points) == 0 {
			continue
		}
		series.Marks = append(series.Marks, changeMarks(series.Points, p.Unit)...)
		if onset != nil {
			series.Marks = append(series.Marks, result.Mark{T: onset.At,
				Label: fmt.Sprintf("%s %s %s at %s", p.What, p.Op, result.FormatQuantity(p.Threshold, p.Unit), onset.At.Format("15:04:05"))})
			s.mu.Lock()
			s.onsets = append(s.onsets, *onset)
			s.mu.Unlock()
		}
		res.Series = append(res.Series, series)
	}
	return nil
}

// ChangeMinSegment is the fewest profile points a level lasts for its start to be marked as a change.
const ChangeMinSegment = 5

// changeMarks marks where the profile's level changes (stats.Changes: PELT, normal mean and variance, MBIC),
// with the means before and after (the method detects a change of mean or variance): a signal that degrades without crossing a threshold still shows when.
func changeMarks(points []result.Point, unit string) []result.Mark {
	x := make([]float64, len(points))
	for i, p := range points {
		x[i] = p.V
	}
	cps := stats.Changes(x, stats.ChangeOptions{MinSegment: ChangeMinSegment})
	segs := stats.Segments(x, cps)
	var out []result.Mark
	for i := 1; i < len(segs); i++ {
		out = append(out, result.Mark{T: points[segs[i].Start].T, Label: fmt.Sprintf("change: mean %s -> %s",
			result.FormatQuantity(segs[i-1].Mean, unit), result.FormatQuantity(segs[i].Mean, unit))})
	}
	return out
}

// Onsets returns the onsets found so far, earliest first.
func (s *Source) Onsets() []Onset {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Onset(nil), s.onsets...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// ruleCondition is the threshold of the rule with the given ID among the source's Rules; an unknown ID is a
// programming error (every profile is run by the tests).
func (s *Source) ruleCondition(id string) rule.Condition {
	for _, r := range s.Rules {
		if r.ID == id {
			return r.When
		}
	}
	panic("promwindow: no rule " + id)
}
