package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// The HTML report is one self-contained file: inline CSS, plots drawn here as inline SVG, no script and
// nothing fetched at view time. Findings come first, each linking to the results its evidence comes from.

// Plot colours (also what the browser test looks for in the screenshot).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}

const (
	plotWidth = 760
	labelW    = 230
	barH      = 14
	maxRows   = 40
)

type htmlFinding struct {
	result.Finding
	Anchors []string
}

type htmlResult struct {
	result.Result
	Anchor string
	Plots  []template.HTML
	Rest   []result.Metric
	Note   string
}

type htmlPage struct {
	R        *result.Report
	Findings []htmlFinding
	Results  []htmlResult
	Count    struct{ Fired, Clear, NotEvaluated int }
	NotEval  []result.RuleEvaluation
	Duration time.Duration
}

// WriteHTML renders the report as a self-contained HTML page with SVG plots.
func WriteHTML(w io.Writer, r *result.Report) error {
	p := htmlPage{R: r, Duration: r.End.Sub(r.Start).Round(time.Millisecond)}
	for _, f := range SortedFindings(r.Findings) {
		hf := htmlFinding{Finding: f}
		for _, n := range f.Results {
			hf.Anchors = append(hf.Anchors, anchor(n))
		}
		p.Findings = append(p.Findings, hf)
	}
	for _, e := range r.Rules {
		switch e.Status {
		case result.RuleFired:
			p.Count.Fired++
		case result.RuleClear:
			p.Count.Clear++
		case result.RuleNotEvaluated:
			p.Count.NotEvaluated++
			p.NotEval = append(p.NotEval, e)
		}
	}
	for _, res := range r.Results {
		hr := htmlResult{Result: res, Anchor: anchor(res.Name)}
		rows, rest := QuantileRows(res.Metrics)
		hr.Rest = rest
		for _, g := range groupByUnit(rows) {
			if len(g) > maxRows {
				hr.Note = fmt.Sprintf("%d distributions; the first %d are plotted, all are in the JSON report", len(g), maxRows)
				g = g[:maxRows]
			}
			hr.Plots = append(hr.Plots, quantilePlot(g))
		}
		if svg, ok := cdfPlot(res.Records, "sli_seconds"); ok {
			hr.Plots = append(hr.Plots, svg)
		}
		if svg, ok := stackedByNode(res.Records); ok {
			hr.Plots = append(hr.Plots, svg)
		}
		for _, s := range res.Series {
			if svg, ok := seriesPlot(s); ok {
				hr.Plots = append(hr.Plots, svg)
			}
		}
		p.Results = append(p.Results, hr)
	}
	return pageTmpl.Execute(w, p)
}

func anchor(name string) string {
	return "r-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
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

// svgBuilder writes one SVG element.
type svgBuilder struct{ b strings.Builder }

func (s *svgBuilder) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svgBuilder) text(x, y float64, anchor, class, t string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, html.EscapeString(t))
}

func (s *svgBuilder) html(title string, w, h float64) template.HTML {
	// The content is built from escaped text and numbers only.
	return template.HTML(fmt.Sprintf(`<figure><figcaption>%s</figcaption><svg class="plot" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">%s</svg></figure>`,
		html.EscapeString(title), w, h, w, h, html.EscapeString(title), s.b.String())) // #nosec G203 -- escaped above
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

// axis draws a horizontal value axis with 5 ticks at y, from x0 to x1 for 0..maxV.
func (s *svgBuilder) axis(x0, x1, y, maxV float64, unit string) {
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y, x1, y)
	for i := 0; i <= 5; i++ {
		x := x0 + (x1-x0)*float64(i)/5
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x, y, x, 8.0)
		s.text(x, y+14, "middle", "tick", result.FormatValue(maxV*float64(i)/5))
	}
	s.text(x1, y+28, "end", "tick", unit)
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
	top := 24.0
	for i, q := range quantileCols {
		s.f(`<rect x="%.0f" y="4" width="10" height="10" fill="%s"/>`, x0+float64(i)*70, palette[i])
		s.text(x0+float64(i)*70+14, 13, "start", "tick", q)
	}
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
	s.axis(x0, x1, h+4, maxV, rows[0].Unit)
	return s.html("percentiles ("+rows[0].Unit+")", plotWidth, h+40)
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// cdfPlot draws the empirical CDF of a per-record value.
func cdfPlot(recs []result.Record, key string) (template.HTML, bool) {
	var v []float64
	for _, r := range recs {
		if x, ok := r.Values[key]; ok {
			v = append(v, x)
		}
	}
	if len(v) < 2 {
		return "", false
	}
	sort.Float64s(v)
	var s svgBuilder
	x0, x1, y0, y1 := 60.0, float64(plotWidth-20), 10.0, 230.0
	maxV := niceMax(v[len(v)-1])
	pts := make([]string, 0, len(v)+1)
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", x0, y1))
	step := max(1, len(v)/1000) // at most ~1000 points
	for i := 0; i < len(v); i += step {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x0+(x1-x0)*v[i]/maxV, y1-(y1-y0)*float64(i+1)/float64(len(v))))
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", x0+(x1-x0)*v[len(v)-1]/maxV, y0))
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		y := y1 - (y1-y0)*q
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x0, y, x1, y)
		s.text(x0-4, y+4, "end", "tick", fmt.Sprintf("%g", q))
	}
	s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), palette[0])
	s.axis(x0, x1, y1, maxV, "seconds")
	return s.html(fmt.Sprintf("CDF of %s over %d records", key, len(v)), plotWidth, y1+40), true
}

// stackedByNode draws, per node, the mean of each *_seconds phase value of its records as stacked bars.
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
	// Pod start-up phases in the order they happen; other keys alphabetically after them.
	order := map[string]int{"schedule_seconds": 1, "sandbox_seconds": 2, "start_seconds": 3, "observe_seconds": 4}
	sort.Slice(phases, func(i, j int) bool {
		oi, oj := order[phases[i]], order[phases[j]]
		if oi == 0 {
			oi = 100
		}
		if oj == 0 {
			oj = 100
		}
		if oi != oj {
			return oi < oj
		}
		return phases[i] < phases[j]
	})
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
	x0, x1, top := float64(labelW), float64(plotWidth-20), 24.0
	for i, k := range phases {
		s.f(`<rect x="%.0f" y="4" width="10" height="10" fill="%s"/>`, x0+float64(i)*110, palette[i%len(palette)])
		s.text(x0+float64(i)*110+14, 13, "start", "tick", strings.TrimSuffix(k, "_seconds"))
	}
	for i, n := range names {
		y := top + float64(i)*(barH+6)
		s.text(x0-6, y+barH-3, "end", "label", fmt.Sprintf("%s (%d)", truncate(n, 30), nodes[n].n))
		x := x0
		for j, k := range phases {
			v := nodes[n].sum[k] / float64(nodes[n].n)
			w := (x1 - x0) * v / maxV
			s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s %s: mean %s s</title></rect>`,
				x, y, w, barH, palette[j%len(palette)], html.EscapeString(n), strings.TrimSuffix(k, "_seconds"), result.FormatValue(v))
			x += w
		}
	}
	h := top + float64(len(names))*(barH+6)
	s.axis(x0, x1, h+2, maxV, "seconds (mean per pod)")
	return s.html("phases per node"+note, plotWidth, h+40), true
}

// seriesPlot draws a time series with its marks (change points) as dashed vertical lines.
func seriesPlot(sr result.Series) (template.HTML, bool) {
	if len(sr.Points) < 2 {
		return "", false
	}
	t0, t1 := sr.Points[0].T, sr.Points[0].T
	maxV := 0.0
	for _, p := range sr.Points {
		if p.T.Before(t0) {
			t0 = p.T
		}
		if p.T.After(t1) {
			t1 = p.T
		}
		maxV = math.Max(maxV, p.V)
	}
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		return "", false
	}
	maxV = niceMax(maxV)
	var s svgBuilder
	x0, x1, y0, y1 := 60.0, float64(plotWidth-20), 10.0, 200.0
	xOf := func(t time.Time) float64 { return x0 + (x1-x0)*t.Sub(t0).Seconds()/span }
	for i := 0; i <= 4; i++ {
		y := y1 - (y1-y0)*float64(i)/4
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="grid"/>`, x0, y, x1, y)
		s.text(x0-4, y+4, "end", "tick", result.FormatValue(maxV*float64(i)/4))
	}
	pts := make([]string, 0, len(sr.Points))
	for _, p := range sr.Points {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.T), y1-(y1-y0)*p.V/maxV))
	}
	s.f(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(pts, " "), palette[0])
	for _, m := range sr.Marks {
		x := xOf(m.T)
		s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="mark" stroke="%s"/>`, x, y0, x, y1, palette[2])
		s.text(x+3, y0+10, "start", "tick", m.Label)
	}
	s.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="axis"/>`, x0, y1, x1, y1)
	s.text(x0, y1+14, "start", "tick", "0 s")
	s.text(x1, y1+14, "end", "tick", fmt.Sprintf("%s s", result.FormatValue(span)))
	title := sr.Name + " (" + sr.Unit + ")"
	if l := result.FormatLabels(sr.Labels); l != "" {
		title += " " + l
	}
	return s.html(title, plotWidth, y1+24), true
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"value":    result.FormatValue,
	"quantity": result.FormatQuantity,
	"labels":   result.FormatLabels,
	"items":    ItemsHeading,
	"item":     ItemName,
	"upper":    func(s result.Severity) string { return strings.ToUpper(string(s)) },
	"anchor":   anchor,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kubeslow report {{.R.RunID}} — {{.R.Cluster.Name}}</title>
<style>
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:28px}h3{font-size:15px;margin-top:22px}
.meta{color:#555}.finding{border-left:6px solid #999;padding:6px 12px;margin:10px 0;background:#fafafa}
.critical{border-color:#b00020}.error{border-color:#e15759}.warning{border-color:#f28e2b}.info{border-color:#4e79a7}
.sev{font-weight:bold}table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
.Pass{color:#2e7d32}.Fail{color:#b00020}.Warn{color:#e65100}.Skip{color:#777}.Error{color:#b00020}
figure{margin:10px 0}figcaption{font-size:13px;color:#444;margin-bottom:2px}
svg.plot text{font-size:11px;fill:#333}svg.plot .label{font-size:11px}svg.plot .tick{font-size:10px;fill:#555}
svg.plot .axis{stroke:#333}svg.plot .grid{stroke:#e5e5e5}svg.plot .mark{stroke-dasharray:4 3;stroke-width:1.5}
</style></head><body>
<h1>kubeslow report</h1>
<p class="meta">run {{.R.RunID}} · {{.R.Tool.Name}} {{.R.Tool.Version}} · cluster {{.R.Cluster.Name}} ({{.R.Cluster.Server}}) {{.R.Cluster.Version}} ·
nodes {{.R.Cluster.Nodes.Total}} ({{.R.Cluster.Nodes.Ready}} ready{{if .R.Cluster.Nodes.Simulated}}, {{.R.Cluster.Nodes.Simulated}} simulated{{end}}) ·
{{.R.Start.UTC.Format "2006-01-02 15:04:05 UTC"}}, {{.Duration}}</p>
<h2 id="findings">Findings ({{len .Findings}})</h2>
{{if not .Findings}}<p>None: nothing measured crossed a threshold.</p>{{end}}
{{range .Findings}}<div class="finding {{.Severity}}" id="{{.ID}}">
<div><span class="sev">[{{upper .Severity}}]</span> <b>{{.ID}}</b> {{.Title}}{{if .Cases}} · case {{range $i, $c := .Cases}}{{if $i}}, {{end}}{{$c}}{{end}}{{end}}</div>
<div>{{.Summary}}</div>
{{if gt (len .Items) 1}}{{$u := .Threshold.Unit}}<details><summary>{{items .Finding}}</summary><table>{{range .Items}}<tr><td>{{item .}}</td><td>{{quantity .Value $u}}</td><td>{{.Summary}}</td></tr>{{end}}</table></details>{{end}}
<div>evidence: {{range $i, $e := .Evidence}}{{if $i}}; {{end}}{{if $e.Result}}<a href="#{{anchor $e.Result}}">{{$e.Name}}</a>{{else}}{{$e.Name}}{{end}} = {{value $e.Value}} {{$e.Unit}} {{labels $e.Labels}}{{end}}</div>
<div>threshold: {{.Threshold.Op}} {{value .Threshold.Value}} {{.Threshold.Unit}} — {{.Threshold.Source}}</div>
<div>fix: {{.Remediation}}</div>
</div>{{end}}
<h2 id="rules">Rules</h2>
<p>{{.Count.Fired}} fired, {{.Count.Clear}} clear, {{.Count.NotEvaluated}} not evaluated (their inputs were not measured: not a pass).</p>
{{if .NotEval}}<ul>{{range .NotEval}}<li>{{.ID}}: {{.Reason}}</li>{{end}}</ul>{{end}}
<h2 id="results">Results</h2>
<table><tr><th>measurement</th><th>status</th><th>reason</th></tr>
{{range .Results}}<tr><td><a href="#{{.Anchor}}">{{.Name}}</a></td><td class="{{.Status}}">{{.Status}}</td><td>{{.Reason}}</td></tr>{{end}}
</table>
{{range .Results}}<h3 id="{{.Anchor}}">{{.Name}} <span class="{{.Status}}">{{.Status}}</span></h3>
{{if .Reason}}<p>{{.Reason}}</p>{{end}}
{{range .Plots}}{{.}}{{end}}
{{if .Note}}<p class="meta">{{.Note}}</p>{{end}}
{{if .Rest}}<table><tr><th>metric</th><th>value</th><th>unit</th><th>labels</th></tr>
{{range .Rest}}<tr><td>{{.Name}}</td><td>{{value .Value}}</td><td>{{.Unit}}</td><td>{{labels .Labels}}</td></tr>{{end}}</table>{{end}}
{{if .Records}}<p class="meta">{{len .Records}} per-item records in the JSON report.</p>{{end}}
{{end}}
</body></html>
`))
