package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// The report's plots are drawn in the browser by Apache ECharts (assets/echarts.min.js, embedded in the page).
// This file decides what to plot from a result — which quantities, in which order, against which threshold —
// and writes each plot as a chart spec: data only (numbers, names, units), which the page's script
// (assets/report.js) turns into an ECharts option. No geometry is computed here.
//
// Why ECharts: the plots an engineer draws for these cases are of many kinds — CDFs on a log axis with an SLO
// line, stacked horizontal bars per node, bars with min–max or histogram-bucket whiskers, several time series
// on one shared time axis with change points and load intervals marked — and ECharts draws all of them from a
// declarative option (markLine, markArea, stacks, custom series, linked axes) with tooltips and zoom. uPlot
// (50 KB) is faster for one huge series but draws lines only: bars, stacks and whiskers would be hand-written
// again. ECharts' 1.1 MB minified build keeps a 10,000-pod report well under 5 MB (BenchmarkHTML10kPods,
// hack/bench-report.sh), it is an Apache project under the Apache-2.0 licence, and it is released often.

// chartSpec is one plot. Kind is "bars" (horizontal bars over Cats, one grid per panel, side by side), "cdf"
// (step lines of points x = value, y = fraction ≤ x) or "time" (panels stacked on one shared time axis,
// x = Unix milliseconds).
type chartSpec struct {
	// key pairs the charts of two runs (diff); start is a time chart's origin.
	key    string
	start  time.Time
	ID     string       `json:"id"`
	Kind   string       `json:"kind"`
	Title  string       `json:"title"`
	Note   string       `json:"note,omitempty"`
	Height int          `json:"height"`
	Cats   []string     `json:"cats,omitempty"`
	Log    bool         `json:"log,omitempty"`
	Panels []chartPanel `json:"panels"`
	// Spans are intervals shaded on every panel of a time chart (the load that ran in an observed window).
	Spans []chartSpan `json:"spans,omitempty"`
	// Relative: a time chart's x is milliseconds since its start (two runs on one axis).
	Relative bool `json:"relative,omitempty"`
}

type chartPanel struct {
	// Title is the panel's quantity; Unit its unit (how the script formats values: "seconds" as ms/s/min).
	Title  string        `json:"title"`
	Unit   string        `json:"unit"`
	Series []chartSeries `json:"series"`
	// Lines are reference lines across the value axis (thresholds, the SLO, 1 = as fast as the host) or,
	// on a time chart, instants (change points, onsets).
	Lines []chartLine `json:"lines,omitempty"`
	// HLines are horizontal reference lines (a CDF's p99 level).
	HLines []chartLine `json:"hlines,omitempty"`
	Stack  bool        `json:"stack,omitempty"`
	// Cols is how many panels of a bars chart sit side by side (0: all).
	Cols int `json:"cols,omitempty"`
}

type chartSeries struct {
	Name string `json:"name"`
	// Values are a bars series' values, one per category (null: none).
	Values []*num `json:"values,omitempty"`
	// Lo and Hi are whiskers per category (min–max over repeats, or an estimate's histogram bucket).
	Lo []*num `json:"lo,omitempty"`
	Hi []*num `json:"hi,omitempty"`
	// Whisker says what the whiskers are.
	Whisker string `json:"whisker,omitempty"`
	// Points are a cdf or time series' points.
	Points [][2]num `json:"points,omitempty"`
	Bold   bool     `json:"bold,omitempty"`
	// Before marks the first run's series in a diff's plot (drawn faded or dashed, in its run's colour).
	Before bool `json:"before,omitempty"`
}

type chartLine struct {
	V     num    `json:"v"`
	Label string `json:"label"`
}

type chartSpan struct {
	Name  string `json:"name"`
	Start num    `json:"start"`
	End   num    `json:"end"`
}

// num is a number written with 5 significant digits (plots need no more; the JSON report has them all).
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(nil, int64(f), 10), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 5, 64), nil
}

func numPtr(v float64) *num { n := num(v); return &n }

func ms(t time.Time) num { return num(t.UnixMilli()) }

const (
	// maxRows is the most categories of a bars chart (the rest are counted in its note).
	maxRows = 40
	// maxSeriesPerPanel: series of one name beyond this many go to a panel of their own.
	maxSeriesPerPanel = 6
	// maxPanels is the most panels of one time chart.
	maxPanels = 6
	// maxPoints is the most points of a drawn series: beyond it each of maxPoints/2 buckets keeps its
	// minimum and maximum, in time order, so spikes survive.
	maxPoints = 2000
	// cdfPoints is the most steps of a CDF line.
	cdfPoints = 400
)

// barsHeight is a bars chart's height for n categories and k series per category.
func barsHeight(rows, k, panelRows int) int {
	per := 26
	if k > 1 {
		per = 12*k + 12
	}
	return panelRows*(rows*per+50) + 50
}

// resultCharts are the plots of one result.
func resultCharts(rep *result.Report, res result.Result) []chartSpec {
	var out []chartSpec
	if c, ok := pathMatrixChart(res.Metrics); ok {
		out = append(out, c)
	}
	if c, ok := ratioChart(res.Metrics); ok {
		out = append(out, c)
	}
	out = append(out, quantileCharts(res.Metrics)...)
	out = append(out, spreadCharts(res.Metrics)...)
	if c, ok := cdfChart(rep, res); ok {
		out = append(out, c)
	}
	if c, ok := nodeStackChart(res.Records); ok {
		out = append(out, c)
	}
	if c, ok := recordBarsChart(res.Records); ok {
		out = append(out, c)
	}
	if c, ok := onsetChart(res); ok {
		out = append(out, c)
	}
	out = append(out, timeCharts(res)...)
	return out
}

// bounds finds the histogram bucket of an estimated metric, by name, unit and labels.
func bounds(ms []result.Metric, name, unit string, labels map[string]string) *result.Bounds {
	l := result.FormatLabels(labels)
	for _, m := range ms {
		if m.Bounds != nil && m.Name == name && m.Unit == unit && result.FormatLabels(m.Labels) == l {
			return m.Bounds
		}
	}
	return nil
}

// quantileCharts draw each result's distributions (p50, p90, p99, max), one chart per unit; a quantile that
// is an estimate within a histogram bucket gets the bucket's edges as a whisker.
func quantileCharts(ms []result.Metric) []chartSpec {
	rows, _ := QuantileRows(ms)
	var out []chartSpec
	for _, g := range groupByUnit(rows) {
		note := ""
		if len(g) > maxRows {
			note = fmt.Sprintf("%d distributions; the first %d are plotted, all are in the tables and the JSON report. ", len(g), maxRows)
			g = g[:maxRows]
		}
		p := chartPanel{Title: unitTitle(g[0].Unit), Unit: g[0].Unit}
		cats := make([]string, len(g))
		estimates := 0
		for i, r := range g {
			cats[i] = r.Name
			if l := result.FormatLabels(r.Labels); l != "" {
				cats[i] += " " + l
			}
		}
		for j, col := range quantileCols {
			s := chartSeries{Name: col, Values: make([]*num, len(g))}
			if !anyValue(g, j) {
				continue
			}
			var lo, hi []*num
			for i, r := range g {
				if r.Values[j] == nil {
					continue
				}
				s.Values[i] = numPtr(*r.Values[j])
				if b := bounds(ms, r.Name+"_"+col, r.Unit, r.Labels); b != nil {
					if lo == nil {
						lo, hi = make([]*num, len(g)), make([]*num, len(g))
					}
					lo[i], hi[i] = numPtr(b.Lower), numPtr(b.Upper)
					estimates++
				}
			}
			if lo != nil {
				s.Lo, s.Hi, s.Whisker = lo, hi, "estimate, within histogram bucket"
			}
			p.Series = append(p.Series, s)
		}
		if estimates > 0 {
			note += fmt.Sprintf("%d of these values are estimates interpolated within a histogram bucket: the whisker spans the bucket, where the true value lies.", estimates)
		}
		out = append(out, chartSpec{key: "quantiles:" + g[0].Unit, Kind: "bars", Title: "percentiles (" + unitTitle(g[0].Unit) + ")", Note: note, Cats: cats,
			Panels: []chartPanel{p}, Height: barsHeight(len(g), len(p.Series), 1)})
	}
	return out
}

func anyValue(rows []QuantileRow, col int) bool {
	for _, r := range rows {
		if r.Values[col] != nil {
			return true
		}
	}
	return false
}

func groupByUnit(rows []QuantileRow) [][]QuantileRow {
	idx := map[string]int{}
	var out [][]QuantileRow
	for _, r := range rows {
		j, ok := idx[r.Unit]
		if !ok {
			j = len(out)
			idx[r.Unit] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], r)
	}
	return out
}

// unitTitle is a unit as an axis reads it.
func unitTitle(u string) string { return strings.ReplaceAll(u, "_", " ") }

var connNames = map[string]string{"keepalive": "HTTP keep-alive", "new": "HTTP new connection per request", "stream": "TCP stream", "": "all"}

func connName(c string) string {
	if n, ok := connNames[c]; ok {
		return n
	}
	return c
}

// spreadBase splits a metric name into the median's name and "lo", "hi" or "" (the median itself).
func spreadBase(name string) (string, string) {
	if b, ok := strings.CutSuffix(name, "_min"); ok {
		return b, "lo"
	}
	if b, ok := strings.CutSuffix(name, "_max"); ok {
		return b, "hi"
	}
	return strings.TrimSuffix(name, "_median"), ""
}

// pathMatrixChart draws a path matrix (metrics labelled with a path: bench net's, lab net's): per path, each
// quantity in a panel of its own side by side — throughput next to tail latency — one bar per connection
// kind, with the min–max over the repeats as whiskers where the result has them.
func pathMatrixChart(ms []result.Metric) (chartSpec, bool) {
	type key struct{ name, conn string }
	var paths, names []string
	units := map[string]string{}
	conns := map[string][]string{}
	val := map[key]map[string]*[3]*num{} // [median, lo, hi] per path
	for _, m := range ms {
		p := m.Labels["path"]
		if p == "" || isRatio(m) {
			continue
		}
		base, kind := spreadBase(m.Name)
		if !contains(paths, p) {
			paths = append(paths, p)
		}
		if !contains(names, base) {
			names = append(names, base)
			units[base] = m.Unit
		}
		c := m.Labels["conn"]
		if !contains(conns[base], c) {
			conns[base] = append(conns[base], c)
		}
		k := key{base, c}
		if val[k] == nil {
			val[k] = map[string]*[3]*num{}
		}
		v := val[k][p]
		if v == nil {
			v = &[3]*num{}
			val[k][p] = v
		}
		i := map[string]int{"": 0, "lo": 1, "hi": 2}[kind]
		v[i] = numPtr(m.Value)
	}
	if len(paths) < 2 || len(names) == 0 {
		return chartSpec{}, false
	}
	note := ""
	if len(paths) > maxRows {
		note = fmt.Sprintf("the first %d of %d paths", maxRows, len(paths))
		paths = paths[:maxRows]
	}
	var panels []chartPanel
	maxConns := 1
	for _, n := range names {
		p := chartPanel{Title: n + " (" + unitTitle(units[n]) + ")", Unit: units[n]}
		for _, c := range conns[n] {
			s := chartSeries{Name: connName(c), Values: make([]*num, len(paths))}
			if c == "" {
				s.Name = n // one kind of connection: the quantity names it
			}
			var lo, hi []*num
			for i, path := range paths {
				v := val[key{n, c}][path]
				if v == nil || v[0] == nil {
					continue
				}
				s.Values[i] = v[0]
				if v[1] != nil && v[2] != nil {
					if lo == nil {
						lo, hi = make([]*num, len(paths)), make([]*num, len(paths))
					}
					lo[i], hi[i] = v[1], v[2]
				}
			}
			if lo != nil {
				s.Lo, s.Hi, s.Whisker = lo, hi, "min–max over the repeats"
			}
			p.Series = append(p.Series, s)
		}
		maxConns = max(maxConns, len(p.Series))
		panels = append(panels, p)
	}
	cols := min(len(panels), 2)
	for i := range panels {
		panels[i].Cols = cols
	}
	rowsOfPanels := (len(panels) + cols - 1) / cols
	return chartSpec{key: "paths", Kind: "bars", Title: "path matrix: throughput and tail latency per path, side by side (bars: median over the repeats)", Note: note,
		Cats: paths, Panels: panels, Height: barsHeight(len(paths), maxConns, rowsOfPanels)}, true
}

// ratioOf reads a ratio metric's name: "ratio_to_host" (conn label: keepalive, new) or "stream_ratio_to_loopback"
// (the connection kind in the name) — the baseline it is against, and the connection kind.
func ratioOf(m result.Metric) (baseline, conn string, ok bool) {
	i := strings.Index(m.Name, "ratio_to_")
	if i < 0 || m.Labels["path"] == "" || (i > 0 && m.Name[i-1] != '_') {
		return "", "", false
	}
	conn = m.Labels["conn"]
	if i > 0 {
		conn = m.Name[:i-1]
	}
	return m.Name[i+len("ratio_to_"):], conn, true
}

// isRatio: the metric is a path's ratio to a baseline path (drawn by ratioChart, not in the path matrix).
func isRatio(m result.Metric) bool { _, _, ok := ratioOf(m); return ok }

// ratioChart draws a path matrix's ratios to its baseline path (host->host, loopback): a bar per connection
// kind, a line at 1 (the baseline) and, against the host, one at 0.9 (KS-NET-POD's 10 % tolerance).
func ratioChart(ms []result.Metric) (chartSpec, bool) {
	var paths, conns []string
	base := ""
	val := map[string]float64{}
	for _, m := range ms {
		b, c, ok := ratioOf(m)
		if !ok || (base != "" && b != base) {
			continue
		}
		base = b
		p := m.Labels["path"]
		if !contains(paths, p) {
			paths = append(paths, p)
		}
		if !contains(conns, c) {
			conns = append(conns, c)
		}
		val[p+"\x00"+c] = m.Value
	}
	if len(paths) == 0 {
		return chartSpec{}, false
	}
	paths = paths[:min(len(paths), maxRows)]
	p := chartPanel{Title: "ratio to " + base, Unit: "ratio", Lines: []chartLine{{1, base}}}
	if base == "host" {
		p.Lines = append(p.Lines, chartLine{0.9, "0.9: KS-NET-POD's threshold"})
	}
	for _, c := range conns {
		s := chartSeries{Name: connName(c), Values: make([]*num, len(paths))}
		for i, path := range paths {
			if v, ok := val[path+"\x00"+c]; ok {
				s.Values[i] = numPtr(v)
			}
		}
		p.Series = append(p.Series, s)
	}
	return chartSpec{key: "ratio", Kind: "bars", Title: "path matrix: each path against " + base + " (1 = as fast as " + base + ")", Cats: paths,
		Panels: []chartPanel{p}, Height: barsHeight(len(paths), len(conns), 1) + 16}, true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// spreadCharts draw, for metrics X with X_min and X_max of the same labels and no path (those are the path
// matrix's), the median with a min–max whisker, one chart per metric.
func spreadCharts(ms []result.Metric) []chartSpec {
	type item struct {
		cat        string
		v          [3]*num
		name, unit string
	}
	byKey := map[string]*item{}
	var order []*item
	for _, m := range ms {
		if m.Labels["path"] != "" {
			continue
		}
		base, kind := spreadBase(m.Name)
		k := base + "\x00" + m.Unit + "\x00" + result.FormatLabels(m.Labels)
		it := byKey[k]
		if it == nil {
			it = &item{cat: result.FormatLabels(m.Labels), name: base, unit: m.Unit}
			byKey[k] = it
			order = append(order, it)
		}
		it.v[map[string]int{"": 0, "lo": 1, "hi": 2}[kind]] = numPtr(m.Value)
	}
	groups := map[string][]*item{}
	var names []string
	for _, it := range order {
		if it.v[0] == nil || it.v[1] == nil || it.v[2] == nil {
			continue
		}
		g := it.name + "\x00" + it.unit
		if _, ok := groups[g]; !ok {
			names = append(names, g)
		}
		groups[g] = append(groups[g], it)
	}
	var out []chartSpec
	for _, g := range names {
		items := groups[g]
		items = items[:min(len(items), maxRows)]
		s := chartSeries{Name: "median", Whisker: "min–max over the repeats"}
		cats := make([]string, len(items))
		for i, it := range items {
			cats[i] = it.cat
			if cats[i] == "" {
				cats[i] = it.name
			}
			s.Values, s.Lo, s.Hi = append(s.Values, it.v[0]), append(s.Lo, it.v[1]), append(s.Hi, it.v[2])
		}
		out = append(out, chartSpec{key: "spread:" + g, Kind: "bars", Title: items[0].name + ": median and spread", Cats: cats,
			Panels: []chartPanel{{Title: unitTitle(items[0].unit), Unit: items[0].unit, Series: []chartSeries{s}}}, Height: barsHeight(len(items), 1, 1)})
	}
	return out
}

// phaseOrder is the pod start-up phases in the order they happen; other keys sort after them.
var phaseOrder = map[string]int{"schedule_seconds": 1, "sandbox_seconds": 2, "pull_seconds": 3, "start_seconds": 4, "observe_seconds": 5, "sli_seconds": 6}

func sortPhases(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		oi, oj := phaseOrder[keys[i]], phaseOrder[keys[j]]
		if oi == 0 {
			oi = 100
		}
		if oj == 0 {
			oj = 100
		}
		if oi != oj {
			return oi < oj
		}
		return keys[i] < keys[j]
	})
}

// phaseName is a record value's key as a legend reads it.
func phaseName(k string) string {
	if k == "sli_seconds" {
		return "start-up SLI (total)"
	}
	return strings.TrimSuffix(k, "_seconds")
}

// sloSeconds is the pod start-up SLO the CDF is drawn against: the threshold of a finding on the result's
// SLI when one fired, otherwise SIG Scalability's (p99 ≤ 5 s).
func sloSeconds(rep *result.Report, res string) (float64, string) {
	for _, f := range rep.Findings {
		for _, e := range f.Evidence {
			if e.Result == res && strings.Contains(e.Name, "sli") && f.Threshold.Unit == "seconds" {
				return f.Threshold.Value, fmt.Sprintf("SLO %s s (%s)", result.FormatValue(f.Threshold.Value), f.Threshold.Source)
			}
		}
	}
	return 5, "SLO: p99 ≤ 5 s (SIG Scalability)"
}

// cdfChart draws the empirical CDF of every *_seconds value of the records whose total is sli_seconds (the
// pod start-up SLI and each of its phases), one step line per phase, against the SLO, on a log axis when
// they span more than two decades.
func cdfChart(rep *result.Report, res result.Result) (chartSpec, bool) {
	vals := map[string][]float64{}
	for _, r := range res.Records {
		for k, x := range r.Values {
			if strings.HasSuffix(k, "_seconds") && !math.IsNaN(x) && x >= 0 {
				vals[k] = append(vals[k], x)
			}
		}
	}
	if len(vals["sli_seconds"]) < 2 {
		return chartSpec{}, false
	}
	var keys []string
	lo, hi := math.Inf(1), 0.0
	for k, v := range vals {
		sort.Float64s(v)
		if v[len(v)-1] <= 0 || len(v) < 2 {
			continue // a phase that never took time (no image pull) has no curve
		}
		keys = append(keys, k)
		for _, x := range v {
			if x > 0 {
				lo = math.Min(lo, x)
				break
			}
		}
		hi = math.Max(hi, v[len(v)-1])
	}
	sortPhases(keys)
	slo, sloLabel := sloSeconds(rep, res.Name)
	p := chartPanel{Title: "seconds", Unit: "seconds", Lines: []chartLine{{num(slo), sloLabel}}, HLines: []chartLine{{0.99, "p99"}}}
	for _, k := range keys {
		v := vals[k]
		s := chartSeries{Name: phaseName(k), Bold: k == "sli_seconds"}
		// At most cdfPoints steps: the CDF at evenly spaced ranks, with the last (the max) kept.
		step := max(1, len(v)/cdfPoints)
		for j := 0; j < len(v); j += step {
			s.Points = append(s.Points, [2]num{num(math.Max(v[j], lo)), num(float64(j+1) / float64(len(v)))})
		}
		if (len(v)-1)%step != 0 {
			s.Points = append(s.Points, [2]num{num(v[len(v)-1]), 1})
		}
		p.Series = append(p.Series, s)
	}
	return chartSpec{key: "cdf", Kind: "cdf", Title: fmt.Sprintf("pod start-up: CDF per phase over %d pods, against the SLO (start-up SLI: the bold line)", len(vals["sli_seconds"])),
		Log: hi/lo > 100, Panels: []chartPanel{p}, Height: 360}, true
}

// nodeStackChart draws, per node, the mean of each phase of its records as a stacked bar, the slowest nodes
// first, so that a slow node stands out.
func nodeStackChart(recs []result.Record) (chartSpec, bool) {
	type acc struct {
		n   int
		sum map[string]float64
	}
	nodes := map[string]*acc{}
	keys := map[string]bool{}
	for _, r := range recs {
		node := r.Labels["node"]
		if node == "" {
			continue
		}
		var ks []string
		for k := range r.Values {
			// The SLI is their sum; the image pull is inside the start phase.
			if strings.HasSuffix(k, "_seconds") && k != "sli_seconds" && k != "pull_seconds" {
				ks = append(ks, k)
			}
		}
		if _, ok := r.Values["sli_seconds"]; !ok || len(ks) == 0 {
			continue
		}
		a := nodes[node]
		if a == nil {
			a = &acc{sum: map[string]float64{}}
			nodes[node] = a
		}
		a.n++
		for _, k := range ks {
			a.sum[k] += r.Values[k]
			keys[k] = true
		}
	}
	if len(nodes) == 0 || len(keys) < 2 {
		return chartSpec{}, false
	}
	var phases []string
	for k := range keys {
		phases = append(phases, k)
	}
	sortPhases(phases)
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	total := func(n string) float64 {
		t := 0.0
		for _, k := range phases {
			t += nodes[n].sum[k] / float64(nodes[n].n)
		}
		return t
	}
	sort.SliceStable(names, func(i, j int) bool { return total(names[i]) > total(names[j]) })
	title := "pod start-up phases per node, slowest first (mean per pod)"
	if len(names) > maxRows {
		title = fmt.Sprintf("pod start-up phases of the %d slowest of %d nodes (mean per pod)", maxRows, len(names))
		names = names[:maxRows]
	}
	p := chartPanel{Title: "seconds, mean per pod", Unit: "seconds", Stack: true}
	cats := make([]string, len(names))
	for i, n := range names {
		cats[i] = fmt.Sprintf("%s (%d pods)", n, nodes[n].n)
	}
	for _, k := range phases {
		s := chartSeries{Name: phaseName(k), Values: make([]*num, len(names))}
		for i, n := range names {
			s.Values[i] = numPtr(nodes[n].sum[k] / float64(nodes[n].n))
		}
		p.Series = append(p.Series, s)
	}
	return chartSpec{key: "nodes", Kind: "bars", Title: title, Cats: cats, Panels: []chartPanel{p}, Height: barsHeight(len(names), 1, 1) + 10}, true
}

// recordBarsChart draws per-item durations (records with *_seconds values that are not pod start-up phases:
// DNS lag per pod, the members of a DNS job), the slowest items first.
func recordBarsChart(recs []result.Record) (chartSpec, bool) {
	keys := map[string]bool{}
	var items []result.Record
	for _, r := range recs {
		if _, ok := r.Values["sli_seconds"]; ok {
			return chartSpec{}, false // pod start-up: its CDF and per-node plot
		}
		found := false
		for k := range r.Values {
			if strings.HasSuffix(k, "_seconds") {
				keys[k], found = true, true
			}
		}
		if found {
			items = append(items, r)
		}
	}
	if len(items) < 2 {
		return chartSpec{}, false
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	worst := func(r result.Record) float64 {
		w := 0.0
		for _, k := range ks {
			w = math.Max(w, r.Values[k])
		}
		return w
	}
	sort.SliceStable(items, func(i, j int) bool { return worst(items[i]) > worst(items[j]) })
	var what []string
	for _, k := range ks {
		what = append(what, strings.ReplaceAll(strings.TrimSuffix(k, "_seconds"), "_", " "))
	}
	title := fmt.Sprintf("%s per item, slowest first (%d items)", strings.Join(what, ", "), len(items))
	if len(items) > maxRows {
		title = fmt.Sprintf("%s: the %d slowest of %d items", strings.Join(what, ", "), maxRows, len(items))
		items = items[:maxRows]
	}
	cats := make([]string, len(items))
	for i, r := range items {
		cats[i] = r.ID
	}
	p := chartPanel{Title: "seconds", Unit: "seconds"}
	for _, k := range ks {
		s := chartSeries{Name: strings.TrimSuffix(k, "_seconds"), Values: make([]*num, len(items))}
		n := 0
		for i, r := range items {
			if v, ok := r.Values[k]; ok {
				s.Values[i] = numPtr(v)
				n++
			}
		}
		if n > 0 {
			p.Series = append(p.Series, s)
		}
	}
	return chartSpec{key: "records", Kind: "bars", Title: title, Cats: cats, Panels: []chartPanel{p}, Height: barsHeight(len(items), len(p.Series), 1)}, true
}

// onsetChart draws the order in which signals crossed their thresholds in an observed window (records
// with an "onset" time): a bar per signal from the window's start to its onset, earliest first.
func onsetChart(res result.Result) (chartSpec, bool) {
	type onset struct {
		cat string
		at  time.Time
	}
	var os []onset
	t0 := res.Start
	for _, r := range res.Records {
		at, ok := r.Times["onset"]
		if !ok {
			continue
		}
		cat := r.Labels["what"]
		if cat == "" {
			cat = r.ID
		}
		os = append(os, onset{cat, at})
		if t0.IsZero() || at.Before(t0) {
			t0 = at
		}
	}
	if len(os) == 0 {
		return chartSpec{}, false
	}
	sort.SliceStable(os, func(i, j int) bool { return os[i].at.Before(os[j].at) })
	os = os[:min(len(os), maxRows)]
	s := chartSeries{Name: "onset", Values: make([]*num, len(os))}
	cats := make([]string, len(os))
	for i, o := range os {
		cats[i] = fmt.Sprintf("%d. %s (%s)", i+1, o.cat, o.at.UTC().Format("15:04:05"))
		s.Values[i] = numPtr(o.at.Sub(t0).Seconds())
	}
	return chartSpec{key: "onsets", Kind: "bars", Title: "onset order: when each signal crossed its threshold, from the window's start", Cats: cats,
		Panels: []chartPanel{{Title: "seconds after " + t0.UTC().Format("15:04:05") + " UTC", Unit: "seconds", Series: []chartSeries{s}}},
		Height: barsHeight(len(os), 1, 1)}, true
}

// timeCharts draw a result's series on one shared time axis: a panel per quantity (series of one name and
// unit, at most maxSeriesPerPanel each), stacked, with change points and onsets marked on their panel and
// the load that ran in the window shaded on all; at most maxPanels panels per chart.
func timeCharts(res result.Result) []chartSpec {
	idx := map[string]int{}
	var panels []chartPanel
	var t0, t1 time.Time
	for _, s := range res.Series {
		pts := thin(s.Points)
		if len(pts) < 2 {
			continue // one sample is no line
		}
		for _, p := range s.Points {
			if t0.IsZero() || p.T.Before(t0) {
				t0 = p.T
			}
			if p.T.After(t1) {
				t1 = p.T
			}
		}
		k := s.Name + "\x00" + s.Unit
		j, ok := idx[k]
		if !ok || len(panels[j].Series) >= maxSeriesPerPanel {
			j = len(panels)
			idx[k] = j
			panels = append(panels, chartPanel{Title: s.Name + " (" + unitTitle(s.Unit) + ")", Unit: s.Unit})
		}
		name := result.FormatLabels(s.Labels)
		if name == "" {
			name = s.Name
		}
		panels[j].Series = append(panels[j].Series, chartSeries{Name: name, Points: pts})
		for _, m := range s.Marks {
			if !containsLine(panels[j].Lines, m) {
				panels[j].Lines = append(panels[j].Lines, chartLine{ms(m.T), m.Label})
			}
		}
	}
	if len(panels) == 0 {
		return nil
	}
	var spans []chartSpan
	for _, l := range res.Load {
		spans = append(spans, chartSpan{Name: l.Name, Start: ms(l.Start), End: ms(l.End)})
	}
	var out []chartSpec
	for i := 0; i < len(panels); i += maxPanels {
		ps := panels[i:min(len(panels), i+maxPanels)]
		title := fmt.Sprintf("over time, %s to %s UTC", t0.UTC().Format("15:04:05"), t1.UTC().Format("15:04:05"))
		if len(spans) > 0 {
			title += " (shaded: the load kubeslow ran)"
		}
		out = append(out, chartSpec{key: fmt.Sprintf("time:%d", i), start: t0, Kind: "time", Title: title, Panels: ps, Spans: spans, Height: 60 + 162*len(ps)})
	}
	return out
}

func containsLine(ls []chartLine, m result.Mark) bool {
	for _, l := range ls {
		if l.V == ms(m.T) && l.Label == m.Label {
			return true
		}
	}
	return false
}

// thin returns a series' finite points in time order, at most maxPoints: beyond that, each bucket of
// equal time keeps its minimum and maximum in the order they came, so that a one-sample spike survives.
func thin(in []result.Point) [][2]num {
	pts := make([]result.Point, 0, len(in))
	for _, p := range in {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			pts = append(pts, p)
		}
	}
	sort.SliceStable(pts, func(a, b int) bool { return pts[a].T.Before(pts[b].T) })
	if len(pts) <= maxPoints {
		out := make([][2]num, len(pts))
		for i, p := range pts {
			out[i] = [2]num{ms(p.T), num(p.V)}
		}
		return out
	}
	buckets := maxPoints / 2
	t0, span := pts[0].T, pts[len(pts)-1].T.Sub(pts[0].T)
	out := make([][2]num, 0, maxPoints)
	b, lo, hi := -1, 0, 0
	emit := func() {
		if b < 0 {
			return
		}
		first, second := lo, hi
		if hi < lo {
			first, second = hi, lo
		}
		out = append(out, [2]num{ms(pts[first].T), num(pts[first].V)})
		if second != first {
			out = append(out, [2]num{ms(pts[second].T), num(pts[second].V)})
		}
	}
	for i, p := range pts {
		k := 0
		if span > 0 {
			k = min(buckets-1, int(float64(buckets)*float64(p.T.Sub(t0))/float64(span)))
		}
		if k != b {
			emit()
			b, lo, hi = k, i, i
			continue
		}
		if p.V < pts[lo].V {
			lo = i
		}
		if p.V > pts[hi].V {
			hi = i
		}
	}
	emit()
	return out
}
