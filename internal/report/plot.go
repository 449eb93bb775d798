package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// The plots of the HTML report, drawn as inline SVG: every plot carries its own style (so it renders the same
// on any page), a legend where it has more than one colour, units on its axes and a title.

// Plot colours (also what the browser test looks for in the screenshots).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}

const (
	plotWidth = 760
	labelW    = 230
	barH      = 14
	maxRows   = 40
	// maxSeriesPerPlot: series of one name beyond this many get plots of their own.
	maxSeriesPerPlot = 6
)

// plotStyle is inside every SVG.
const plotStyle = `<style>text{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;font-size:11px;fill:#333}.tick{font-size:10px;fill:#555}` +
	`.title{font-size:11px;fill:#222;font-weight:bold}.axis{stroke:#333;stroke-width:1}.grid{stroke:#e5e5e5;stroke-width:1}` +
	`.mark{stroke-dasharray:4 3;stroke-width:1.5}.ref{stroke:#333;stroke-dasharray:2 2;stroke-width:1}</style>`

// resultPlots are the plots of one result, and a note when some of its data was left out of them.
func resultPlots(res result.Result) (plots []template.HTML, note string) {
	rows, _ := QuantileRows(res.Metrics)
	for _, g := range groupByUnit(rows) {
		if len(g) > maxRows {
			note = fmt.Sprintf("%d distributions; the first %d are plotted, all are in the JSON report", len(g), maxRows)
			g = g[:maxRows]
		}
		plots = append(plots, quantilePlot(g))
	}
	plots = append(plots, spreadPlots(res.Metrics)...)
	if svg, ok := ratioPlot(res.Metrics); ok {
		plots = append(plots, svg)
	}
	if svg, ok := phaseCDFPlot(res.Records); ok {
		plots = append(plots, svg)
	}
	if svg, ok := stackedByNode(res.Records); ok {
		plots = append(plots, svg)
	}
	for _, g := range groupSeries(res.Series) {
		if svg, ok := seriesPlot(g); ok {
			plots = append(plots, svg)
		}
	}
	return plots, note
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

// svgBuilder writes one SVG element: bg (the axes' grid, drawn first: under the data) and b.
type svgBuilder struct{ bg, b strings.Builder }

func (s *svgBuilder) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svgBuilder) text(x, y float64, anchor, class, t string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, html.EscapeString(t))
}

// vtext is text turned to read upwards (a vertical axis title) centred at x, y.
func (s *svgBuilder) vtext(x, y float64, t string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="middle" class="tick" transform="rotate(-90 %.1f %.1f)">%s</text>`, x, y, x, y, html.EscapeString(t))
}

// legend draws colour keys left to right from x at y, wrapping at plotWidth; it returns the y below it.
func (s *svgBuilder) legend(x, y float64, names []string, colours []string) float64 {
	cx := x
	for i, n := range names {
		w := 24 + 6.5*float64(len([]rune(n)))
		if cx+w > plotWidth-10 && cx > x {
			cx, y = x, y+16
		}
		s.f(`<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`, cx, y-9, colours[i%len(colours)])
		s.text(cx+14, y, "start", "tick", n)
		cx += w
	}
	return y + 10
}

func (s *svgBuilder) html(title string, w, h float64) template.HTML {
	// The content is built from escaped text and numbers only.
	return template.HTML(fmt.Sprintf(`<figure><figcaption>%s</figcaption><svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">%s%s</svg></figure>`,
		html.EscapeString(title), w, h, w, h, html.EscapeString(title), plotStyle, s.bg.String()+s.b.String())) // #nosec G203 -- escaped above
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// axis draws a horizontal value axis with 5 ticks at y, from x0 to x1 for 0..maxV, the grid up to top, and
// the axis title under it.
func (s *svgBuilder) axis(x0, x1, y, top, maxV float64, title string) {
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y, x1, y)
	for i := 0; i <= 5; i++ {
		x := x0 + (x1-x0)*float64(i)/5
		fmt.Fprintf(&s.bg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x, y, x, top)
		s.text(x, y+14, "middle", "tick", result.FormatValue(maxV*float64(i)/5))
	}
	s.text((x0+x1)/2, y+30, "middle", "tick", title)
}

// quantilePlot draws p50/p90/p99/max of each distribution as grouped horizontal bars.
func quantilePlot(rows []QuantileRow) template.HTML {
	var s svgBuilder
	maxV := 0.0
	for _, r := range rows {
		for _, v := range r.Values {
			if v != nil {
				maxV = math.Max(maxV, *v)
			}
		}
	}
	maxV = niceMax(maxV)
	n := len(quantileCols)
	rowH := float64(n*barH/2 + 10)
	x0, x1 := float64(labelW), float64(plotWidth-20)
	top := s.legend(x0, 14, quantileCols, palette) + 6
	for i, r := range rows {
		y := top + float64(i)*rowH
		label := r.Name
		if l := result.FormatLabels(r.Labels); l != "" {
			label += " " + l
		}
		s.text(x0-6, y+rowH/2, "end", "label", truncate(label, 38))
		for j, v := range r.Values {
			if v == nil {
				continue
			}
			w := (x1 - x0) * *v / maxV
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s %s = %s %s</title></rect>`,
				x0, y+float64(j*barH/2), math.Max(w, 0.5), barH/2, palette[j], html.EscapeString(label), quantileCols[j], result.FormatValue(*v), html.EscapeString(r.Unit))
		}
	}
	h := top + float64(len(rows))*rowH
	s.axis(x0, x1, h+4, top-4, maxV, rows[0].Unit)
	return s.html("percentiles ("+rows[0].Unit+")", plotWidth, h+44)
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
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

// phaseCDFPlot draws the empirical CDF of every *_seconds value of the records (the pod start-up SLI and each
// of its phases), one step line per value, on a logarithmic time axis when they span more than two decades
// (a 50 ms phase and a 5 s SLI on one plot).
func phaseCDFPlot(recs []result.Record) (template.HTML, bool) {
	vals := map[string][]float64{}
	for _, r := range recs {
		for k, x := range r.Values {
			if strings.HasSuffix(k, "_seconds") && !math.IsNaN(x) && x >= 0 {
				vals[k] = append(vals[k], x)
			}
		}
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
	if len(keys) == 0 || len(vals["sli_seconds"]) < 2 {
		return "", false
	}
	sortPhases(keys)
	var s svgBuilder
	x0, x1 := 70.0, float64(plotWidth-20)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = strings.TrimSuffix(k, "_seconds")
		if k == "sli_seconds" {
			names[i] = "start-up SLI (total)"
		}
	}
	y0 := s.legend(x0, 14, names, palette) + 8
	y1 := y0 + 220
	logX := hi/lo > 100
	var xOf func(v float64) float64
	var ticks []float64
	if logX {
		a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		xOf = func(v float64) float64 {
			v = math.Max(v, math.Pow(10, a))
			return x0 + (x1-x0)*(math.Log10(v)-a)/(b-a)
		}
		for e := a; e <= b; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		maxV := niceMax(hi)
		xOf = func(v float64) float64 { return x0 + (x1-x0)*v/maxV }
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, maxV*float64(i)/5)
		}
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.9, 0.99, 1} {
		y := y1 - (y1-y0)*q
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x0, y, x1, y)
		if q != 0.99 { // too close to 1 for a label of its own
			s.text(x0-4, y+4, "end", "tick", fmt.Sprintf("%g", q))
		}
	}
	for _, t := range ticks {
		x := xOf(t)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x, y0, x, y1)
		s.text(x, y1+14, "middle", "tick", fmtSeconds(t))
	}
	for i, k := range keys {
		v := vals[k]
		// A step line, thinned to about one step per pixel column for thousands of pods.
		step := max(1, len(v)/int(x1-x0))
		pts := []string{fmt.Sprintf("%.1f,%.1f", xOf(v[0]), y1)}
		prevY := y1
		for j := 0; j < len(v); j += step {
			x, y := xOf(v[j]), y1-(y1-y0)*float64(j+1)/float64(len(v))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x, prevY, x, y))
			prevY = y
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", xOf(v[len(v)-1]), prevY, xOf(v[len(v)-1]), y0))
		width := 1.5
		if k == "sli_seconds" {
			width = 2.5
		}
		s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"><title>%s: %d pods, p50 %s s, p99 %s s</title></polyline>`,
			strings.Join(pts, " "), palette[i%len(palette)], width, html.EscapeString(names[i]), len(v),
			result.FormatValue(percentileSorted(v, 0.5)), result.FormatValue(percentileSorted(v, 0.99)))
	}
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y1, x1, y1)
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y0, x0, y1)
	xt := "seconds"
	if logX {
		xt = "seconds (log scale)"
	}
	s.text((x0+x1)/2, y1+30, "middle", "tick", xt)
	s.vtext(16, (y0+y1)/2, "fraction of pods ≤ x")
	return s.html(fmt.Sprintf("pod start-up CDF per phase over %d pods", len(vals["sli_seconds"])), plotWidth, y1+40), true
}

func percentileSorted(v []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// fmtSeconds is a tick label for a time in seconds: 1 ms, 250 ms, 1.5 s, 2 min.
func fmtSeconds(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return result.FormatValue(v*1000) + " ms"
	case v < 120:
		return result.FormatValue(v) + " s"
	case v < 7200:
		return result.FormatValue(v/60) + " min"
	}
	return result.FormatValue(v/3600) + " h"
}

// stackedByNode draws, per node, the mean of each phase's *_seconds value of its records as stacked bars,
// the slowest nodes first.
func stackedByNode(recs []result.Record) (template.HTML, bool) {
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
		a := nodes[node]
		if a == nil {
			a = &acc{sum: map[string]float64{}}
			nodes[node] = a
		}
		a.n++
		for k, v := range r.Values {
			// The SLI is their sum; the image pull is inside the start phase.
			if strings.HasSuffix(k, "_seconds") && k != "sli_seconds" && k != "pull_seconds" {
				a.sum[k] += v
				keys[k] = true
			}
		}
	}
	if len(nodes) == 0 || len(keys) < 2 {
		return "", false
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
	// Slowest nodes first, at most maxRows of them.
	sort.SliceStable(names, func(i, j int) bool { return total(names[i]) > total(names[j]) })
	note := ""
	if len(names) > maxRows {
		note = fmt.Sprintf(" (the %d slowest of %d nodes)", maxRows, len(names))
		names = names[:maxRows]
	}
	maxV := niceMax(total(names[0]))
	var s svgBuilder
	x0, x1 := float64(labelW), float64(plotWidth-60)
	legend := make([]string, len(phases))
	for i, k := range phases {
		legend[i] = strings.TrimSuffix(k, "_seconds")
	}
	top := s.legend(x0, 14, legend, palette) + 6
	s.text(x0-6, top-4, "end", "tick", "node (pods)")
	for i, n := range names {
		y := top + float64(i)*(barH+6)
		s.text(x0-6, y+barH-3, "end", "label", fmt.Sprintf("%s (%d)", truncate(n, 30), nodes[n].n))
		x := x0
		for j, k := range phases {
			v := nodes[n].sum[k] / float64(nodes[n].n)
			w := (x1 - x0) * v / maxV
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s %s: mean %s s</title></rect>`,
				x, y, w, barH, palette[j%len(palette)], html.EscapeString(n), legend[j], result.FormatValue(v))
			x += w
		}
		s.text(x+4, y+barH-3, "start", "tick", result.FormatValue(total(n))+" s")
	}
	h := top + float64(len(names))*(barH+6)
	s.axis(x0, x1, h+2, top-4, maxV, "seconds, mean per pod, by phase")
	return s.html("pod start-up phases per node, slowest first"+note, plotWidth, h+42), true
}

// spreadPlots draw, for every metric X that has X_min and X_max with the same labels (a median over repeats
// and its spread: bench net's paths, lab net's), horizontal bars of the median with a whisker from min to max,
// one plot per metric and value of the "conn" label, one bar per item (the other labels).
func spreadPlots(ms []result.Metric) []template.HTML {
	type item struct {
		label         string
		med, lo, hi   float64
		hasLo, hasHi  bool
		order         int
		name, unit, c string
	}
	key := func(name string, l map[string]string) string { return name + "\x00" + result.FormatLabels(l) }
	byKey := map[string]*item{}
	var all []*item
	for i, m := range ms {
		base, kind := m.Name, "med"
		switch {
		case strings.HasSuffix(m.Name, "_min"):
			base, kind = strings.TrimSuffix(m.Name, "_min"), "lo"
		case strings.HasSuffix(m.Name, "_max"):
			base, kind = strings.TrimSuffix(m.Name, "_max"), "hi"
		case strings.HasSuffix(m.Name, "_median"):
			base = strings.TrimSuffix(m.Name, "_median")
		}
		k := key(base, m.Labels)
		it := byKey[k]
		if it == nil {
			rest := map[string]string{}
			for lk, lv := range m.Labels {
				if lk != "conn" {
					rest[lk] = lv
				}
			}
			label := rest["path"]
			if label == "" || len(rest) > 1 {
				label = result.FormatLabels(rest)
			}
			it = &item{label: label, order: i, name: base, unit: m.Unit, c: m.Labels["conn"]}
			byKey[k] = it
			all = append(all, it)
		}
		switch kind {
		case "lo":
			it.lo, it.hasLo = m.Value, true
		case "hi":
			it.hi, it.hasHi = m.Value, true
		default:
			it.med = m.Value
		}
	}
	groups := map[string][]*item{}
	var order []string
	for _, it := range all {
		if !it.hasLo || !it.hasHi || it.label == "" {
			continue
		}
		g := it.name + "\x00" + it.c
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], it)
	}
	var out []template.HTML
	for _, g := range order {
		items := groups[g]
		maxV := 0.0
		for _, it := range items {
			maxV = math.Max(maxV, math.Max(it.hi, it.med))
		}
		maxV = niceMax(maxV)
		var s svgBuilder
		x0, x1 := float64(labelW), float64(plotWidth-70)
		top := s.legend(x0, 14, []string{"median", "min–max over the repeats"}, []string{palette[0], "#333"}) + 6
		for i, it := range items {
			y := top + float64(i)*(barH+6)
			s.text(x0-6, y+barH-3, "end", "label", truncate(it.label, 38))
			xOf := func(v float64) float64 { return x0 + (x1-x0)*v/maxV }
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: median %s, min %s, max %s %s</title></rect>`,
				x0, y, math.Max(xOf(it.med)-x0, 0.5), barH, palette[0], html.EscapeString(it.label), result.FormatValue(it.med), result.FormatValue(it.lo), result.FormatValue(it.hi), html.EscapeString(it.unit))
			ym := y + barH/2.0
			s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-width="1.5"/>`, xOf(it.lo), ym, xOf(it.hi), ym)
			for _, v := range []float64{it.lo, it.hi} {
				s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333" stroke-width="1.5"/>`, xOf(v), y+2, xOf(v), y+barH-2)
			}
			s.text(math.Max(xOf(it.hi), xOf(it.med))+4, y+barH-3, "start", "tick", result.FormatValue(it.med))
		}
		h := top + float64(len(items))*(barH+6)
		s.axis(x0, x1, h+2, top-4, maxV, strings.ReplaceAll(items[0].unit, "_", " "))
		title := items[0].name
		if items[0].c != "" {
			title += " (conn=" + items[0].c + ")"
		}
		out = append(out, s.html(title+": median and spread", plotWidth, h+42))
	}
	return out
}

// ratioPlot draws the ratio_to_host metrics of a path matrix: per path a bar for each connection kind, a
// line at 1 (the host) and a dashed one at 0.9 (KS-NET-POD's 10 % tolerance).
func ratioPlot(ms []result.Metric) (template.HTML, bool) {
	var paths, conns []string
	val := map[string]float64{}
	for _, m := range ms {
		if m.Name != "ratio_to_host" || m.Labels["path"] == "" {
			continue
		}
		p, c := m.Labels["path"], m.Labels["conn"]
		if !contains(paths, p) {
			paths = append(paths, p)
		}
		if !contains(conns, c) {
			conns = append(conns, c)
		}
		val[p+"\x00"+c] = m.Value
	}
	if len(paths) == 0 {
		return "", false
	}
	maxV := 1.0
	for _, v := range val {
		maxV = math.Max(maxV, v)
	}
	maxV = niceMax(maxV)
	var s svgBuilder
	x0, x1 := float64(labelW), float64(plotWidth-60)
	legend := make([]string, len(conns))
	for i, c := range conns {
		legend[i] = map[string]string{"keepalive": "HTTP keep-alive", "new": "HTTP new connection per request", "stream": "TCP stream"}[c]
		if legend[i] == "" {
			legend[i] = c
		}
	}
	top := s.legend(x0, 14, legend, palette) + 6
	sub := float64(barH) * 0.8
	rowH := sub*float64(len(conns)) + 8
	xOf := func(v float64) float64 { return x0 + (x1-x0)*v/maxV }
	for i, p := range paths {
		y := top + float64(i)*rowH
		s.text(x0-6, y+rowH/2, "end", "label", truncate(p, 38))
		for j, c := range conns {
			v, ok := val[p+"\x00"+c]
			if !ok {
				continue
			}
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s of host->host</title></rect>`,
				x0, y+float64(j)*sub, math.Max(xOf(v)-x0, 0.5), sub-1, palette[j%len(palette)], html.EscapeString(p), html.EscapeString(legend[j]), result.FormatValue(v))
			s.text(xOf(v)+4, y+float64(j+1)*sub-2, "start", "tick", fmt.Sprintf("%.2f", v))
		}
	}
	h := top + float64(len(paths))*rowH
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, xOf(1), top-4, xOf(1), h)
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="ref"/>`, xOf(0.9), top-4, xOf(0.9), h)
	s.axis(x0, x1, h+2, top-4, maxV, "ratio to host->host (1 = as fast as the host; dashed: 0.9, the finding's threshold)")
	return s.html("path matrix: each path against host->host", plotWidth, h+42), true
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// groupSeries puts series of one name and unit together (one line each, at most maxSeriesPerPlot per plot).
func groupSeries(ss []result.Series) [][]result.Series {
	idx := map[string]int{}
	var out [][]result.Series
	for _, s := range ss {
		k := s.Name + "\x00" + s.Unit
		j, ok := idx[k]
		if !ok || len(out[j]) >= maxSeriesPerPlot {
			j = len(out)
			idx[k] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], s)
	}
	return out
}

// timeStep is a tick step for a span of seconds: about 6 ticks at a round step.
func timeStep(span float64) float64 {
	for _, st := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400} {
		if span/st <= 7 {
			return st
		}
	}
	return 86400
}

// seriesPlot draws series of one quantity over time: every sample while there are at most two per pixel
// column (with a dot per sample when they are few), otherwise each column's min and max, so that spikes
// survive any number of points; the marks (change points, fault injections) as dashed vertical lines with
// their labels staggered so that close marks stay readable.
func seriesPlot(group []result.Series) (template.HTML, bool) {
	var t0, t1 time.Time
	minV, maxV := 0.0, 0.0
	n := 0
	for _, sr := range group {
		for _, p := range sr.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if n == 0 || p.T.Before(t0) {
				t0 = p.T
			}
			if n == 0 || p.T.After(t1) {
				t1 = p.T
			}
			minV, maxV = math.Min(minV, p.V), math.Max(maxV, p.V)
			n++
		}
	}
	span := t1.Sub(t0).Seconds()
	if n < 2 || span <= 0 {
		return "", false
	}
	maxV = niceMax(maxV)
	if minV < 0 {
		minV = -niceMax(-minV)
	}
	var s svgBuilder
	x0, x1 := 70.0, float64(plotWidth-20)
	y0 := 14.0
	if len(group) > 1 {
		names := make([]string, len(group))
		for i, sr := range group {
			names[i] = result.FormatLabels(sr.Labels)
		}
		y0 = s.legend(x0, 14, names, palette) + 6
	}
	var marks []result.Mark
	for _, sr := range group {
		marks = append(marks, sr.Marks...)
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].T.Before(marks[j].T) })
	// Mark labels in rows above the plot: a label goes to the first row where it does not overlap.
	type placed struct{ x, end float64 }
	var rows [][]placed
	type lab struct {
		x   float64
		row int
		t   string
	}
	var labs []lab
	xOf := func(t time.Time) float64 { return x0 + (x1-x0)*t.Sub(t0).Seconds()/span }
	for _, m := range marks {
		x := xOf(m.T)
		if x < x0-1 || x > x1+1 {
			continue
		}
		t := truncate(m.Label, 40)
		w := 6.0*float64(len([]rune(t))) + 6
		start := x + 3
		if start+w > plotWidth {
			start = x - 3 - w
		}
		r := 0
		for ; r < len(rows); r++ {
			free := true
			for _, p := range rows[r] {
				if start < p.end && start+w > p.x {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		if r == len(rows) {
			if r >= 4 { // more marks than room: the line stays, its label is in its tooltip
				labs = append(labs, lab{x, -1, m.Label})
				continue
			}
			rows = append(rows, nil)
		}
		rows[r] = append(rows[r], placed{start, start + w})
		labs = append(labs, lab{x, r, m.Label})
	}
	y0 += float64(len(rows)) * 13
	y1 := y0 + 190
	yOf := func(v float64) float64 { return y1 - (y1-y0)*(v-minV)/(maxV-minV) }
	// Round tick values: 5 steps of 0.2, 1 or 10 units of the scale, or 4 of 0.5.
	nt := 4
	if lead := math.Round(maxV / math.Pow(10, math.Floor(math.Log10(maxV)))); minV == 0 && (lead == 1 || lead == 5 || lead == 10) {
		nt = 5
	}
	for i := 0; i <= nt; i++ {
		v := minV + (maxV-minV)*float64(i)/float64(nt)
		y := yOf(v)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x0, y, x1, y)
		s.text(x0-4, y+4, "end", "tick", result.FormatValue(v))
	}
	step := timeStep(span)
	for t := 0.0; t <= span+1e-9; t += step {
		x := x0 + (x1-x0)*t/span
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x, y0, x, y1)
		s.text(x, y1+14, "middle", "tick", fmtSeconds(t))
	}
	cols := int(x1 - x0)
	for i, sr := range group {
		colour := palette[i%len(palette)]
		pts := append([]result.Point(nil), sr.Points...)
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].T.Before(pts[b].T) })
		var line []string
		flush := func() {
			if len(line) > 1 {
				s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-linejoin="round"/>`, strings.Join(line, " "), colour)
			}
			line = line[:0]
		}
		if len(pts) <= 2*cols {
			for _, p := range pts {
				if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
					flush() // a gap: no sample there
					continue
				}
				line = append(line, fmt.Sprintf("%.1f,%.1f", xOf(p.T), yOf(p.V)))
			}
			flush()
			if len(pts) <= 120 {
				for _, p := range pts {
					if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
						s.f(`<circle cx="%.1f" cy="%.1f" r="2" fill="%s"><title>%s: %s %s</title></circle>`, xOf(p.T), yOf(p.V), colour,
							fmtSeconds(p.T.Sub(t0).Seconds()), result.FormatValue(p.V), html.EscapeString(sr.Unit))
					}
				}
			}
		} else {
			// Per pixel column: its min and max, in the order they came.
			col, lo, hi, loFirst, have := -1, 0.0, 0.0, true, false
			emit := func() {
				if !have {
					return
				}
				x := x0 + float64(col) + 0.5
				a, b := lo, hi
				if !loFirst {
					a, b = hi, lo
				}
				line = append(line, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x, yOf(a), x, yOf(b)))
			}
			for _, p := range pts {
				if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
					continue
				}
				c := min(int(xOf(p.T)-x0), cols-1)
				if c != col {
					emit()
					col, lo, hi, have = c, p.V, p.V, true
					continue
				}
				if p.V < lo {
					lo, loFirst = p.V, false
				}
				if p.V > hi {
					hi, loFirst = p.V, true
				}
			}
			emit()
			flush()
		}
	}
	for _, l := range labs {
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="mark" stroke="%s"><title>%s</title></line>`, l.x, y0-2, l.x, y1, palette[2], html.EscapeString(l.t))
		if l.row >= 0 {
			y := y0 - 4 - float64(l.row)*13
			if l.x+3+6.0*float64(len([]rune(truncate(l.t, 40))))+6 > plotWidth {
				s.text(l.x-3, y, "end", "tick", truncate(l.t, 40))
			} else {
				s.text(l.x+3, y, "start", "tick", truncate(l.t, 40))
			}
		}
	}
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y1, x1, y1)
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y0, x0, y1)
	s.text((x0+x1)/2, y1+30, "middle", "tick", fmt.Sprintf("time since %s UTC (%d samples)", t0.UTC().Format("15:04:05"), n))
	unit := strings.ReplaceAll(group[0].Unit, "_", " ")
	s.vtext(14, (y0+y1)/2, unit)
	title := group[0].Name + " (" + group[0].Unit + ")"
	if len(group) == 1 {
		if l := result.FormatLabels(group[0].Labels); l != "" {
			title += " " + l
		}
	}
	return s.html(title, plotWidth, y1+40), true
}
