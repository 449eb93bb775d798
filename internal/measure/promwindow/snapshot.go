package promwindow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/internal/source/promql"
)

// The live measurements analyse "after minus before" of two scrapes. Over a past window the same delta is
// increase() over the window at its end, summed by the labels the analysis groups by; it is handed to the
// analysis as an "after" snapshot whose "before" is empty (so the delta is the increase itself).

// window is the whole window as a PromQL range.
func (s *Source) window() string { return promql.PromDuration(s.Window.Duration()) }

// selector builds family{matchers} with the role's job matcher.
func selector(family, jobSel string, extra ...string) string {
	ms := []string{}
	if jobSel != "" {
		ms = append(ms, jobSel)
	}
	for _, e := range extra {
		if e != "" {
			ms = append(ms, e)
		}
	}
	return family + "{" + strings.Join(ms, ",") + "}"
}

func by(labels []string) string { return "by (" + strings.Join(labels, ", ") + ")" }

// bornLookback is how far before the window a series must have a sample to count as existing at its start
// (Prometheus's own staleness look-back).
const bornLookback = "5m"

// increase is a counter series' increase over the window. increase() needs two samples in the window, so a
// series born inside it (a counter that appears with its first event: the first 409 on a resource, a
// replica's first SERVFAIL) would lose the value of its first scrape, or vanish when scraped once; the live
// analyses count such a series from zero. So: increase() for the series that existed in the 5 minutes before
// the window, and the highest value in the window for those born in it — but only on targets that were
// already scraped before the window (their role's signature series existed then): a target first scraped
// inside the window (a new Prometheus, a new pod) brings counters that started before it (etcd's first
// leader election), which are not the window's.
func (s *Source) increase(sel, jobSel string) string {
	w := s.window()
	plain := fmt.Sprintf("increase(%s[%s])", sel, w)
	target := ""
	for _, r := range Roles {
		if js, ok := s.Selector(r.Name); ok && js == jobSel {
			target = fmt.Sprintf("count_over_time(%s[%s] offset %s)", withMatcher(r.Signature, jobSel), bornLookback, w)
			break
		}
	}
	if target == "" {
		return plain
	}
	before := fmt.Sprintf("count_over_time(%s[%s] offset %s)", sel, bornLookback, w)
	return fmt.Sprintf("((max_over_time(%s[%s]) unless %s) and on (job, instance) %s) or %s", sel, w, before, target, plain)
}

// counter adds family (a counter) to fams: its increase over the window, summed by labels.
func (s *Source) counter(ctx context.Context, fams map[string]*dto.MetricFamily, family, jobSel string, labels []string, extra ...string) error {
	q := fmt.Sprintf("sum %s (%s)", by(labels), s.increase(selector(family, jobSel, extra...), jobSel))
	return s.scalarFamily(ctx, fams, family, dto.MetricType_COUNTER, q)
}

// gauge adds family (a gauge) to fams: its highest value in the window, by labels.
func (s *Source) gauge(ctx context.Context, fams map[string]*dto.MetricFamily, family, jobSel string, labels []string) error {
	q := fmt.Sprintf("max %s (max_over_time(%s[%s]))", by(labels), selector(family, jobSel), s.window())
	return s.scalarFamily(ctx, fams, family, dto.MetricType_GAUGE, q)
}

// scalarFamily adds the answer of q to fams as a counter or gauge family (nothing when the answer is empty).
func (s *Source) scalarFamily(ctx context.Context, fams map[string]*dto.MetricFamily, family string, typ dto.MetricType, q string) error {
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil || len(v) == 0 {
		return err
	}
	f := &dto.MetricFamily{Name: proto.String(family), Type: typ.Enum()}
	for _, smp := range v {
		m := &dto.Metric{Label: pairs(smp.Metric)}
		if typ == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: proto.Float64(float64(smp.Value))}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(float64(smp.Value))}
		}
		f.Metric = append(f.Metric, m)
	}
	fams[family] = f
	return nil
}

// histogram adds family (a classic histogram) to fams: the increase of every bucket over the window, summed by
// labels and le. withSum also reads _sum (the analyses that use a histogram's sum need it).
func (s *Source) histogram(ctx context.Context, fams map[string]*dto.MetricFamily, family, jobSel string, labels []string, withSum bool, extra ...string) error {
	q := fmt.Sprintf("sum %s (%s)", by(append(append([]string(nil), labels...), "le")), s.increase(selector(family+"_bucket", jobSel, extra...), jobSel))
	v, err := s.Client.Instant(ctx, q, s.Window.To)
	if err != nil || len(v) == 0 {
		return err
	}
	sums := map[string]float64{}
	if withSum {
		sq := fmt.Sprintf("sum %s (%s)", by(labels), s.increase(selector(family+"_sum", jobSel, extra...), jobSel))
		sv, err := s.Client.Instant(ctx, sq, s.Window.To)
		if err != nil {
			return err
		}
		for _, smp := range sv {
			sums[smp.Metric.String()] = float64(smp.Value)
		}
	}
	fams[family] = histogramFamily(family, v, sums)
	return nil
}

// MaxSplit bounds the values of a label one split query is divided into (and so the queries it may add).
const MaxSplit = 200

// histogramSplit is histogram, split when the answer has more than the client's MaxSeries series: by each
// value of splits[0] in the window (label values of the bucket series, from the index), each part split again
// by splits[1:] when it is still too large. The extra queries are granted to the run's budget (at most
// MaxSplit per split).
func (s *Source) histogramSplit(ctx context.Context, fams map[string]*dto.MetricFamily, family, jobSel string, labels []string, splits []string, extra ...string) error {
	err := s.histogram(ctx, fams, family, jobSel, labels, false, extra...)
	if err == nil || len(splits) == 0 || !errors.Is(err, promql.ErrTooManySeries) {
		return err
	}
	vals, lerr := s.Client.LabelValuesUpTo(ctx, splits[0], selector(family+"_bucket", jobSel, extra...), s.Window.From, s.Window.To, MaxSplit)
	if lerr != nil {
		return fmt.Errorf("%w (splitting it by %s: %v)", err, splits[0], lerr)
	}
	s.Client.Grant(len(vals) + 1)
	for _, v := range vals {
		part := map[string]*dto.MetricFamily{}
		if err := s.histogramSplit(ctx, part, family, jobSel, labels, splits[1:], append(append([]string(nil), extra...), fmt.Sprintf("%s=%q", splits[0], v))...); err != nil {
			return err
		}
		mergeFamily(fams, part, family)
	}
	return nil
}

// histogramFamily assembles per-bucket samples (with an le label) into one dto histogram per label set.
func histogramFamily(family string, v model.Vector, sums map[string]float64) *dto.MetricFamily {
	type bucket struct{ le, count float64 }
	groups := map[string][]bucket{}
	metrics := map[string]model.Metric{}
	for _, smp := range v {
		le, err := strconv.ParseFloat(string(smp.Metric["le"]), 64)
		if err != nil {
			continue
		}
		m := smp.Metric.Clone()
		delete(m, "le")
		k := m.String()
		metrics[k] = m
		groups[k] = append(groups[k], bucket{le, float64(smp.Value)})
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := &dto.MetricFamily{Name: proto.String(family), Type: dto.MetricType_HISTOGRAM.Enum()}
	for _, k := range keys {
		bs := groups[k]
		sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
		h := &dto.Histogram{SampleSum: proto.Float64(sums[k])}
		count := 0.0
		// increase() extrapolates each bucket on its own, so cumulative counts can dip by a rounding error:
		// keep them monotonic, as histogram_quantile does.
		prev := 0.0
		for _, b := range bs {
			c := math.Max(b.count, prev)
			prev = c
			if math.IsInf(b.le, 1) {
				count = c
				continue
			}
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b.le), CumulativeCount: proto.Uint64(uint64(math.Round(c)))})
		}
		h.SampleCount = proto.Uint64(uint64(math.Round(count)))
		f.Metric = append(f.Metric, &dto.Metric{Label: pairs(metrics[k]), Histogram: h})
	}
	return f
}

func pairs(m model.Metric) []*dto.LabelPair {
	names := make([]string, 0, len(m))
	for k := range m {
		if k != model.MetricNameLabel {
			names = append(names, string(k))
		}
	}
	sort.Strings(names)
	out := make([]*dto.LabelPair, len(names))
	for i, n := range names {
		out[i] = &dto.LabelPair{Name: proto.String(n), Value: proto.String(string(m[model.LabelName(n)]))}
	}
	return out
}

// snapshots returns the empty "before" and the window's "after".
func (s *Source) snapshots(fams map[string]*dto.MetricFamily) (*prom.Snapshot, *prom.Snapshot) {
	return &prom.Snapshot{At: s.Window.From, Families: map[string]*dto.MetricFamily{}}, &prom.Snapshot{At: s.Window.To, Families: fams}
}
