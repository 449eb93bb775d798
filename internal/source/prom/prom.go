// Package prom reads Prometheus text-format metrics with the ecosystem's own parser (expfmt) and analyses
// them over a window: counter and histogram deltas between two scrapes (not lifetime totals), sums by label,
// and histogram quantiles as Prometheus's histogram_quantile computes them, with the bucket each was estimated in.
package prom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Snapshot is one scrape.
type Snapshot struct {
	At       time.Time
	Families map[string]*dto.MetricFamily
	// BadLines counts the lines Parse skipped; FirstBad says where the first was and why.
	BadLines int
	FirstBad string
}

// Keep drops every family but families (a node's /metrics or /metrics/cadvisor is thousands of series; an
// analysis keeps what it reads).
func (s *Snapshot) Keep(families ...string) {
	for name := range s.Families {
		if !slices.Contains(families, name) {
			delete(s.Families, name)
		}
	}
}

// Parse reads the text exposition format. A line the parser rejects (a bad value, broken labels, a sample
// of the wrong type) is skipped and counted in BadLines, and the rest is read: one bad exporter line loses
// that line, not the scrape. Anything that is not the text format (garbage, protobuf, HTML, truncated
// input), with no sample read or more lines rejected than samples read, is a clear error, never a panic;
// an empty input is an error too (there is nothing to analyse).
func Parse(r io.Reader, at time.Time) (*Snapshot, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	orig := make([]int, len(lines)) // line numbers in b of the lines left
	for i := range orig {
		orig[i] = i + 1
	}
	var bad []string
	for {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(bytes.Join(lines, nil)))
		var pe expfmt.ParseError
		switch {
		case err == nil:
			samples := 0
			for _, f := range fams {
				samples += len(f.GetMetric())
			}
			if len(bad) > 0 && (samples == 0 || len(bad) > samples) {
				return nil, fmt.Errorf("parsing metrics (Prometheus text format expected): %d lines rejected, %d samples read; first: %s", len(bad), samples, bad[0])
			}
			if len(fams) == 0 {
				return nil, errors.New("no metrics in the response")
			}
			s := &Snapshot{At: at, Families: fams, BadLines: len(bad)}
			if len(bad) > 0 {
				s.FirstBad = bad[0]
			}
			return s, nil
		case errors.As(err, &pe) && pe.Line >= 1 && pe.Line <= len(lines) && len(bad) < maxBadLines:
			bad = append(bad, fmt.Sprintf("line %d: %s", orig[pe.Line-1], pe.Msg))
			lines = slices.Delete(lines, pe.Line-1, pe.Line)
			orig = slices.Delete(orig, pe.Line-1, pe.Line)
		default:
			if len(bad) > 0 {
				return nil, fmt.Errorf("parsing metrics (Prometheus text format expected): %w (after %d lines rejected, first: %s)", err, len(bad), bad[0])
			}
			return nil, fmt.Errorf("parsing metrics (Prometheus text format expected): %w", err)
		}
	}
}

// maxBadLines bounds the lines Parse skips (each skip parses the rest again): more is not a scrape with a
// bad line but something else.
const maxBadLines = 20

// Labels of one series.
type Labels map[string]string

func labelsOf(m *dto.Metric) Labels {
	l := Labels{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// key identifies a series by all its labels.
// Key is a canonical string of the labels (sorted), for maps.
func (l Labels) Key() string { return l.key() }

func (l Labels) key() string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + "\xff")
	}
	return b.String()
}

// Subset returns the labels named by keys.
func (l Labels) Subset(keys []string) Labels {
	out := Labels{}
	for _, k := range keys {
		out[k] = l[k]
	}
	return out
}

// Series is one counter/gauge value or one histogram, with its labels.
type Series struct {
	Labels Labels
	Value  float64
	Hist   *Histogram
	// Summary is a summary's sample sum and count (its quantiles are the client's own sliding window, not the
	// scrape window's, so a delta keeps only sum and count).
	Summary *Summary
}

// Summary is a summary's sample sum and count.
type Summary struct {
	Sum, Count float64
}

// Histogram is cumulative bucket counts (by upper bound, +Inf last), a sum and a count.
type Histogram struct {
	Bounds []float64
	Counts []float64
	Sum    float64
	Count  float64
}

// Series returns every series of a family (nil if absent).
func (s *Snapshot) Series(name string) []Series {
	f := s.Families[name]
	if f == nil {
		return nil
	}
	var out []Series
	for _, m := range f.GetMetric() {
		se := Series{Labels: labelsOf(m)}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			se.Value = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			se.Value = m.GetGauge().GetValue()
		case dto.MetricType_UNTYPED:
			se.Value = m.GetUntyped().GetValue()
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			hist := &Histogram{Sum: h.GetSampleSum(), Count: float64(h.GetSampleCount())}
			for _, b := range h.GetBucket() {
				hist.Bounds = append(hist.Bounds, b.GetUpperBound())
				hist.Counts = append(hist.Counts, float64(b.GetCumulativeCount()))
			}
			if len(hist.Bounds) == 0 || !math.IsInf(hist.Bounds[len(hist.Bounds)-1], 1) {
				hist.Bounds = append(hist.Bounds, math.Inf(1))
				hist.Counts = append(hist.Counts, hist.Count)
			}
			se.Hist = hist
		case dto.MetricType_SUMMARY:
			se.Summary = &Summary{Sum: m.GetSummary().GetSampleSum(), Count: float64(m.GetSummary().GetSampleCount())}
		default:
			continue
		}
		out = append(out, se)
	}
	return out
}

// Delta returns after-minus-before for every series of a counter or histogram family. A series whose value
// went down was reset (the process restarted), so its after-value is the delta, as Prometheus's rate() does.
func Delta(before, after *Snapshot, name string) []Series {
	prev := map[string]Series{}
	for _, s := range before.Series(name) {
		prev[s.Labels.key()] = s
	}
	var out []Series
	for _, s := range after.Series(name) {
		p, ok := prev[s.Labels.key()]
		d := Series{Labels: s.Labels}
		switch {
		case s.Hist != nil:
			d.Hist = s.Hist
			if ok && p.Hist != nil && p.Hist.Count <= s.Hist.Count && sameBounds(p.Hist, s.Hist) {
				d.Hist = s.Hist.minus(p.Hist)
			}
		case s.Summary != nil:
			d.Summary = s.Summary
			if ok && p.Summary != nil && p.Summary.Count <= s.Summary.Count && p.Summary.Sum <= s.Summary.Sum {
				d.Summary = &Summary{Sum: s.Summary.Sum - p.Summary.Sum, Count: s.Summary.Count - p.Summary.Count}
			}
		default:
			d.Value = s.Value
			if ok && p.Value <= s.Value {
				d.Value = s.Value - p.Value
			}
		}
		out = append(out, d)
	}
	return out
}

func sameBounds(a, b *Histogram) bool {
	if len(a.Bounds) != len(b.Bounds) {
		return false
	}
	for i := range a.Bounds {
		if a.Bounds[i] != b.Bounds[i] {
			return false
		}
	}
	return true
}

func (h *Histogram) minus(p *Histogram) *Histogram {
	out := &Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Sum: h.Sum - p.Sum, Count: h.Count - p.Count}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i] - p.Counts[i]
	}
	return out
}

// Add merges o into h (same bounds).
func (h *Histogram) Add(o *Histogram) {
	if len(h.Counts) == 0 {
		h.Bounds = o.Bounds
		h.Counts = make([]float64, len(o.Counts))
	}
	if !sameBounds(h, o) {
		return
	}
	for i := range o.Counts {
		h.Counts[i] += o.Counts[i]
	}
	h.Sum += o.Sum
	h.Count += o.Count
}

// Quantile is QuantileEstimate's value.
func (h *Histogram) Quantile(q float64) (v float64, ok bool) {
	e, ok := h.QuantileEstimate(q)
	return e.Value, ok
}

// Estimate is a quantile estimated from a histogram's buckets: Value as Prometheus's histogram_quantile
// computes it, and Bounds the bucket it was interpolated in (the true quantile lies within them).
type Estimate struct {
	Value  float64
	Bounds result.Bounds
}

// Metric is a metric holding the estimate: its value, and the bucket it lies in as the metric's Bounds.
func (e Estimate) Metric(name, unit string, labels map[string]string) result.Metric {
	b := e.Bounds
	return result.Metric{Name: name, Unit: unit, Value: e.Value, Labels: labels, Bounds: &b}
}

// precisionTolerance is the relative difference between successive cumulative counts that is taken for a
// floating-point rounding error and ignored, as histogram_quantile does (Prometheus's smallDeltaTolerance).
const precisionTolerance = 1e-12

// QuantileEstimate is Prometheus's histogram_quantile over classic buckets (promql/quantile.go's
// bucketQuantile), with the bucket the value was found in:
//   - buckets are sorted by upper bound, buckets with the same bound merged, counts differing from the last kept one by a
//     relative 1e-12 or less made equal to it and any decrease removed (the monotonic envelope);
//   - rank = q × total; the first bucket whose cumulative count reaches it holds the quantile, and the value
//     is interpolated linearly inside it: lower + (upper - lower) × (rank - below) / (in bucket);
//   - the first bucket's lower edge is 0, unless its upper edge is <= 0: then that edge is returned
//     (Bounds.Unbounded "lower": the true value is at most it);
//   - in the +Inf bucket the highest finite bound is returned (Bounds.Unbounded "upper": the true value is at
//     least it).
//
// ok is false where histogram_quantile gives NaN or ±Inf: no observations, fewer than two buckets, no +Inf
// bucket, q outside [0, 1] or NaN, and q = 0 on an empty first bucket (0/0).
func (h *Histogram) QuantileEstimate(q float64) (Estimate, bool) {
	if h == nil || len(h.Counts) != len(h.Bounds) || len(h.Counts) == 0 || math.IsNaN(q) || q < 0 || q > 1 {
		return Estimate{}, false
	}
	type bucket struct{ upper, count float64 }
	bs := make([]bucket, len(h.Bounds))
	for i := range h.Bounds {
		bs[i] = bucket{h.Bounds[i], h.Counts[i]}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].upper < bs[j].upper })
	if !math.IsInf(bs[len(bs)-1].upper, 1) {
		return Estimate{}, false
	}
	// Merge buckets with the same bound.
	n := 0
	for _, b := range bs[1:] {
		if b.upper == bs[n].upper {
			bs[n].count += b.count
			continue
		}
		n++
		bs[n] = b
	}
	bs = bs[:n+1]
	// Differences within the tolerance are rounding errors and any decrease is removed: each count is
	// compared with the last one kept.
	prev := bs[0].count
	for i := 1; i < len(bs); i++ {
		cur := bs[i].count
		switch {
		case cur == prev:
		case almostEqual(prev, cur, precisionTolerance) || cur < prev:
			bs[i].count = prev
		default:
			prev = cur
		}
	}
	if len(bs) < 2 {
		return Estimate{}, false
	}
	total := bs[len(bs)-1].count
	if total <= 0 || math.IsNaN(total) {
		return Estimate{}, false
	}
	rank := q * total
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].count >= rank })
	if b == len(bs)-1 {
		v := bs[len(bs)-2].upper
		return Estimate{Value: v, Bounds: result.Bounds{Lower: v, Upper: v, Unbounded: "upper"}}, true
	}
	if b == 0 && bs[0].upper <= 0 {
		v := bs[0].upper
		return Estimate{Value: v, Bounds: result.Bounds{Lower: v, Upper: v, Unbounded: "lower"}}, true
	}
	lower, upper, count := 0.0, bs[b].upper, bs[b].count
	if b > 0 {
		lower = bs[b-1].upper
		count -= bs[b-1].count
		rank -= bs[b-1].count
	}
	if count <= 0 {
		return Estimate{}, false // q = 0 on an empty first bucket: histogram_quantile's 0/0
	}
	return Estimate{Value: lower + (upper-lower)*(rank/count), Bounds: result.Bounds{Lower: lower, Upper: upper}}, true
}

// almostEqual says whether a and b differ by at most a relative epsilon (Prometheus's util/almost.Equal).
func almostEqual(a, b, epsilon float64) bool {
	const minNormal = 2.2250738585072014e-308 // the smallest normal float64
	if a == b {
		return true
	}
	absSum, diff := math.Abs(a)+math.Abs(b), math.Abs(a-b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// GroupCounters sums counter deltas by the given labels, keeping series for which keep returns true.
func GroupCounters(series []Series, by []string, keep func(Labels) bool) map[string]*Group {
	out := map[string]*Group{}
	for _, s := range series {
		if keep != nil && !keep(s.Labels) {
			continue
		}
		sub := s.Labels.Subset(by)
		k := sub.key()
		g := out[k]
		if g == nil {
			g = &Group{Labels: sub}
			out[k] = g
		}
		g.Value += s.Value
		if s.Hist != nil {
			if g.Hist == nil {
				g.Hist = &Histogram{}
			}
			g.Hist.Add(s.Hist)
		}
	}
	return out
}

// Group is a sum over series sharing some labels.
type Group struct {
	Labels Labels
	Value  float64
	Hist   *Histogram
}

// Sorted returns groups in a stable order (by their labels).
func Sorted(groups map[string]*Group) []*Group {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*Group, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// Gauge returns the first value of a gauge family matching labels, and whether it exists.
func (s *Snapshot) Gauge(name string, match Labels) (float64, bool) {
	for _, se := range s.Series(name) {
		ok := true
		for k, v := range match {
			if se.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return se.Value, true
		}
	}
	return 0, false
}
