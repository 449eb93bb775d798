package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// The HTML report is one self-contained file that works offline: inline CSS, the chart library and the page's
// script inline, the plots' data as JSON in the page, nothing fetched at view time. It answers "why is it
// slow?" on its first screen: the causes, ranked, each with its key number against its threshold and the fix,
// its symptoms and evidence folded under it, and what could not be measured; then each measurement with its
// plots and tables.

// The chart library: Apache ECharts, pinned and fetched by hack/fetch-chartlib.sh (why ECharts: charts.go).
//
//go:embed assets/echarts.min.js
var echartsJS string

//go:embed assets/ECHARTS-VERSION
var echartsVersion string

//go:embed assets/report.js
var reportJS string

type htmlCause struct {
	result.Finding
	Rank     int
	Key      string // the key number, with its unit
	Symptoms []result.Finding
}

type htmlChart struct {
	ID, Title, Note string
}

type htmlQuantile struct {
	QuantileRow
	Cells []htmlValue
}

type htmlValue struct {
	Text string
	// Bucket is set for an estimate: "within bucket [a, b]".
	Bucket string
}

type htmlMetric struct {
	result.Metric
	Value htmlValue
}

type htmlResult struct {
	result.Result
	Anchor string
	Window string
	Charts []htmlChart
	// Gap is the title of the gap a result not measured is folded under ("": none), said there once.
	Gap       string
	Quantiles []htmlQuantile
	Rest      []htmlMetric
}

// htmlGap is one source that could not be read, with the measurements it held back linked to their sections.
type htmlGap struct {
	result.Gap
	Measured []htmlLink
}

type htmlLink struct{ Name, Anchor string }

type htmlPage struct {
	R         *result.Report
	Tally     result.Tally
	Causes    []htmlCause
	Gaps      []htmlGap
	Count     struct{ Fired, Clear, NotEvaluated int }
	NotEval   []result.RuleEvaluation
	Results   []htmlResult
	Duration  time.Duration
	Library   string
	LibJS     template.JS
	PageJS    template.JS
	ChartJSON template.JS
}

// causes ranks the findings by cause (CausalOrder): the causes, worst first, then the symptoms no cause was
// found for, each with every finding it explains (directly or down its chain) under it.
func causes(fs []result.Finding) []htmlCause {
	var out []htmlCause
	var flat func(ns []CauseNode) []result.Finding
	flat = func(ns []CauseNode) []result.Finding {
		var l []result.Finding
		for _, n := range ns {
			l = append(l, n.Finding)
			l = append(l, flat(n.Symptoms)...)
		}
		return l
	}
	for _, n := range CausalOrder(fs) {
		out = append(out, htmlCause{Finding: n.Finding, Rank: len(out) + 1, Key: keyNumber(n.Finding), Symptoms: flat(n.Symptoms)})
	}
	return out
}

// keyNumber is the number a finding's threshold was crossed by: its worst item's, else its first evidence.
func keyNumber(f result.Finding) string {
	switch {
	case len(f.Items) > 0:
		return result.FormatQuantity(f.Items[0].Value, f.Threshold.Unit)
	case len(f.Evidence) > 0:
		return result.FormatQuantity(f.Evidence[0].Value, f.Evidence[0].Unit)
	}
	return ""
}

// valueOf formats a metric's value, saying when it is an estimate within a histogram bucket.
func valueOf(m result.Metric) htmlValue {
	if m.Bounds == nil {
		return htmlValue{Text: result.FormatValue(m.Value)}
	}
	return htmlValue{Text: "≈" + result.FormatValue(m.Value),
		Bucket: fmt.Sprintf("estimate, within bucket [%s, %s]", result.FormatValue(m.Bounds.Lower), result.FormatValue(m.Bounds.Upper))}
}

// WriteHTML renders the report as one self-contained HTML page.
func WriteHTML(w io.Writer, r *result.Report) error {
	p := htmlPage{R: r, Tally: r.Tally(), Duration: r.End.Sub(r.Start).Round(time.Millisecond), Causes: causes(r.Findings),
		Library: "Apache ECharts " + strings.TrimSpace(echartsVersion), LibJS: template.JS(echartsJS), PageJS: template.JS(reportJS)} // #nosec G203 -- our embedded files
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
	var specs []chartSpec
	for _, res := range r.Results {
		hr := htmlResult{Result: res, Anchor: anchor(res.Name)}
		if res.Observed {
			hr.Window = ObservationWindow(res)
		}
		rows, rest := QuantileRows(res.Metrics)
		for _, q := range rows {
			hq := htmlQuantile{QuantileRow: q}
			for j, v := range q.Values {
				if v == nil {
					hq.Cells = append(hq.Cells, htmlValue{Text: "–"})
					continue
				}
				hq.Cells = append(hq.Cells, valueOf(result.Metric{Value: *v, Bounds: bounds(res.Metrics, q.Name+"_"+quantileCols[j], q.Unit, q.Labels)}))
			}
			hr.Quantiles = append(hr.Quantiles, hq)
		}
		for _, m := range rest {
			hr.Rest = append(hr.Rest, htmlMetric{Metric: m, Value: valueOf(m)})
		}
		for _, c := range resultCharts(r, res) {
			c.ID = fmt.Sprintf("chart-%d", len(specs))
			specs = append(specs, c)
			hr.Charts = append(hr.Charts, htmlChart{ID: c.ID, Title: c.Title, Note: c.Note})
		}
		p.Results = append(p.Results, hr)
	}
	for _, g := range r.FoldedGaps() {
		hg := htmlGap{Gap: g}
		for i := range p.Results {
			if hr := &p.Results[i]; hr.Gap == "" && !hr.Status.Measured() && slices.Contains(g.Measurements, hr.Name) {
				hr.Gap = g.Title
			}
		}
		for _, m := range g.Measurements {
			l := htmlLink{Name: m}
			if r.Result(m) != nil {
				l.Anchor = anchor(m)
			}
			hg.Measured = append(hg.Measured, l)
		}
		p.Gaps = append(p.Gaps, hg)
	}
	if specs == nil {
		specs = []chartSpec{}
	}
	js, err := json.Marshal(specs) // escapes <, > and &: safe inside the script element
	if err != nil {
		return err
	}
	p.ChartJSON = template.JS(js) // #nosec G203 -- JSON from json.Marshal
	return pageTmpl.ExecuteTemplate(w, "report", p)
}

func anchor(name string) string {
	return "r-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"value":    result.FormatValue,
	"quantity": result.FormatQuantity,
	"labels":   result.FormatLabels,
	"items":    ItemsHeading,
	"item":     ItemName,
	"upper":    func(s result.Severity) string { return strings.ToUpper(string(s)) },
	"anchor":   anchor,
	"cols":     func() []string { return quantileCols },
	"lower":    func(s result.Status) string { return strings.ToLower(string(s)) },
}).Parse(`{{define "report"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubeslow report {{.R.RunID}} — {{.R.Cluster.Name}}</title>
{{template "style"}}</head><body>
<header><div class="in"><b>kubeslow report</b>
<span>cluster {{.R.Cluster.Name}} ({{.R.Cluster.Server}}){{if .R.Cluster.Version}} {{.R.Cluster.Version}}{{end}} · nodes {{.R.Cluster.Nodes.Total}} ({{.R.Cluster.Nodes.Ready}} ready{{if .R.Cluster.Nodes.Simulated}}, {{.R.Cluster.Nodes.Simulated}} simulated{{end}})</span>
<span>run {{.R.RunID}} · {{.R.Start.UTC.Format "2006-01-02 15:04:05 UTC"}}, {{.Duration}} · {{.Tally}}</span></div></header>
<main>
<h2 id="findings">Why is it slow?</h2>
{{if not .Causes}}<div class="none">Nothing measured crossed a threshold: no finding. {{if .Gaps}}Some things could not be measured (below): that is not a pass.{{end}}</div>
{{else}}<p class="lead">{{len .Causes}} cause{{if gt (len .Causes) 1}}s{{end}}, worst first (symptoms with no cause found last); each one's symptoms and evidence are folded under it.</p>{{end}}
{{range .Causes}}<div class="cause {{.Severity}}" id="{{.ID}}">
<div class="head"><span class="rank">{{.Rank}}.</span><span class="pill {{.Severity}}">{{upper .Severity}}</span><span class="title">{{.Title}}</span>
<span class="id">{{.ID}}{{if .Cases}} · case {{range $i, $c := .Cases}}{{if $i}}, {{end}}{{$c}}{{end}}{{end}}</span></div>
<div class="body"><div class="key"><span class="v">{{.Key}}</span><span class="t">threshold {{.Threshold.Op}} {{quantity .Threshold.Value .Threshold.Unit}}<br>{{.Threshold.Source}}</span></div>
<div class="sentence">{{.Summary}}{{if .NoCause}}<div class="muted">Cause: {{.NoCause}}</div>{{end}}{{range .SeenAlso}}<div class="muted">Seen also by {{.ID}}{{if .Results}} ({{range $i, $r := .Results}}{{if $i}}, {{end}}{{$r}}{{end}}){{end}}: {{.Summary}}</div>{{end}}</div>
<div class="fix"><b>Fix:</b> {{.Remediation}}</div></div>
<details><summary>{{if .Symptoms}}{{len .Symptoms}} symptom{{if gt (len .Symptoms) 1}}s{{end}} it explains · {{end}}evidence{{if gt (len .Items) 1}} · {{items .Finding}}{{end}}</summary>
{{range .Symptoms}}<div class="sym" id="{{.ID}}"><b>{{.Title}}</b> <span class="id">{{.ID}} · explained by {{.ExplainedBy}}</span><br>{{.Summary}}<br>
<span class="muted">evidence: {{range $i, $e := .Evidence}}{{if $i}}; {{end}}{{if $e.Result}}<a href="#{{anchor $e.Result}}">{{$e.Name}}</a>{{else}}{{$e.Name}}{{end}} = {{value $e.Value}} {{$e.Unit}} {{labels $e.Labels}}{{end}} · threshold {{.Threshold.Op}} {{quantity .Threshold.Value .Threshold.Unit}} ({{.Threshold.Source}})</span></div>{{end}}
<div class="muted">evidence: {{range $i, $e := .Evidence}}{{if $i}}; {{end}}{{if $e.Result}}<a href="#{{anchor $e.Result}}">{{$e.Name}}</a>{{else}}{{$e.Name}}{{end}} = {{value $e.Value}} {{$e.Unit}} {{labels $e.Labels}}{{end}}</div>
{{if gt (len .Items) 1}}{{$u := .Threshold.Unit}}<table><tr><th>{{items .Finding}}</th><th>value</th><th></th></tr>{{range .Items}}<tr><td>{{item .}}</td><td class="n">{{quantity .Value $u}}</td><td>{{.Summary}}</td></tr>{{end}}</table>{{end}}
</details></div>{{end}}
{{if .Gaps}}<div class="unmeasured" id="unmeasured"><h2>Could not measure ({{len .Gaps}})</h2><ul>
{{range .Gaps}}<li class="gap" data-source="{{.Source}}"><b>{{.Title}}</b>{{with .Detail}}: {{.}}{{end}}{{if .Fix}} <b>Fix:</b> {{.Fix}}{{end}}
<div class="held">{{if .Measured}}not measured: {{range $i, $m := .Measured}}{{if $i}}, {{end}}{{if $m.Anchor}}<a href="#{{$m.Anchor}}">{{$m.Name}}</a>{{else}}{{$m.Name}}{{end}}{{end}}{{end}}
{{if .Signals}}{{if .Measured}} · {{end}}not read: {{range $i, $s := .Signals}}{{if $i}}; {{end}}{{$s}}{{end}}{{end}}
{{if .Rules}}{{if or .Measured .Signals}} · {{end}}rules not evaluated: {{range $i, $r := .Rules}}{{if $i}}, {{end}}{{$r}}{{end}}{{end}}</div></li>{{end}}</ul></div>{{end}}
<h2 id="rules">Rules</h2>
<p class="lead">{{.Count.Fired}} fired, {{.Count.Clear}} clear, {{.Count.NotEvaluated}} not evaluated (their inputs were not measured: not a pass).</p>
<h2 id="results">Measurements</h2>
<div class="grid">{{range .Results}}<div><a href="#{{.Anchor}}">{{.Name}}</a> <span class="status {{.Status}}">{{.Status}}</span></div>{{end}}</div>
{{range .Results}}<section class="res" id="{{.Anchor}}"><h3>{{.Name}} <span class="status {{.Status}}">{{.Status}}</span></h3>
{{if .Gap}}<p class="lead">Not measured: <a href="#unmeasured">{{.Gap}}</a> (could not measure, above).</p>{{else if .Reason}}<p class="lead">{{.Reason}}</p>{{end}}{{if .Window}}<p class="muted">{{.Window}}</p>{{end}}
{{range .Charts}}<figure><figcaption>{{.Title}}{{if .Note}} <span class="muted">— {{.Note}}</span>{{end}}</figcaption><div class="chart" id="{{.ID}}"></div></figure>{{end}}
{{if .Quantiles}}{{if gt (len .Quantiles) 12}}<details><summary>all {{len .Quantiles}} distributions</summary>{{end}}<table><tr><th>distribution</th>{{range cols}}<th>{{.}}</th>{{end}}<th>unit</th><th>labels</th></tr>
{{range .Quantiles}}<tr><td>{{.Name}}</td>{{range .Cells}}<td class="n">{{if .Bucket}}<span class="est" title="{{.Bucket}}">{{.Text}}</span>{{else}}{{.Text}}{{end}}</td>{{end}}<td>{{.Unit}}</td><td>{{labels .Labels}}</td></tr>{{end}}</table>{{if gt (len .Quantiles) 12}}</details>{{end}}{{end}}
{{if .Rest}}{{if gt (len .Rest) 12}}<details><summary>all {{len .Rest}} metrics</summary>{{end}}<table><tr><th>metric</th><th>value</th><th>unit</th><th>labels</th></tr>
{{range .Rest}}<tr><td>{{.Name}}</td><td class="n">{{if .Value.Bucket}}<span class="est" title="{{.Value.Bucket}}">{{.Value.Text}}</span> <span class="muted">({{.Value.Bucket}})</span>{{else}}{{.Value.Text}}{{end}}</td><td>{{.Unit}}</td><td>{{labels .Labels}}</td></tr>{{end}}</table>{{if gt (len .Rest) 12}}</details>{{end}}{{end}}
{{if .Records}}<p class="muted">{{len .Records}} per-item records in the JSON report.</p>{{end}}
</section>{{end}}
<footer>{{.R.Tool.Name}} {{.R.Tool.Version}} · plots drawn by {{.Library}} (Apache-2.0), embedded: this page fetches nothing. Values marked ≈ are estimates within a histogram bucket (hover for the bucket).</footer>
</main>
{{template "scripts" .}}
</body></html>
{{end}}
{{define "style"}}<style>
*{box-sizing:border-box}
body{font-family:"DejaVu Sans","Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2328;background:#f6f7f9;font-size:14px;line-height:1.45}
main{max-width:1200px;margin:0 auto;padding:10px 24px 40px}
header{background:#1f2d3d;color:#e8edf3;padding:8px 24px}
header .in{max-width:1200px;margin:0 auto;display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header b{font-size:17px;color:#fff}header span{font-size:12.5px;color:#b9c4d0}
h2{font-size:19px;margin:18px 0 8px}h3{font-size:16px;margin:0 0 6px}
a{color:#1f5fa8;text-decoration:none}a:hover{text-decoration:underline}
.lead{color:#57606a;margin:0 0 8px}
.cause{background:#fff;border:1px solid #d8dee4;border-left:7px solid #999;border-radius:6px;margin:0 0 10px;padding:10px 14px}
.cause.critical,.pill.critical{border-left-color:#8e0019}.cause.error{border-left-color:#d1242f}.cause.warning{border-left-color:#e36209}.cause.info{border-left-color:#4e79a7}
.head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.rank{font-weight:bold;color:#57606a}.title{font-size:16.5px;font-weight:bold}
.pill{font-size:11px;font-weight:bold;padding:1px 7px;border-radius:10px;color:#fff;background:#6e7781}
.pill.critical{background:#8e0019}.pill.error{background:#d1242f}.pill.warning{background:#e36209}.pill.info{background:#4e79a7}
.id{color:#57606a;font-size:12.5px}
.body{display:grid;grid-template-columns:210px 1fr;gap:6px 18px;margin-top:6px}
.key{grid-row:span 2}.key .v{font-size:26px;font-weight:bold;display:block;line-height:1.15;color:#b42318}
.key .t{font-size:12.5px;color:#57606a}
.sentence{font-size:14.5px}.fix{align-self:start;background:#eef6ee;border-radius:4px;padding:4px 8px}.fix b{color:#1a7f37}
details{margin-top:6px}summary{cursor:pointer;color:#1f5fa8;font-size:13px}
.sym{border-left:3px solid #d8dee4;margin:6px 0 6px 4px;padding:2px 10px}
.muted{color:#57606a;font-size:12.5px}
.none{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:10px 14px}
.unmeasured{background:#fffbe6;border:1px solid #eed888;border-radius:6px;padding:8px 14px;margin:10px 0}
.unmeasured h2{font-size:15px;margin:0 0 4px}.unmeasured ul{margin:0;padding-left:18px;font-size:13px}
.unmeasured li{margin:0 0 5px}.unmeasured .held{color:#57606a;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0;font-size:12.5px;background:#fff}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eaeef2}
th{background:#f0f3f6;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.Pass{color:#1a7f37}.Fail{color:#d1242f}.Warn{color:#bc4c00}.Skip{color:#6e7781}.Error{color:#d1242f}
.status{font-weight:bold}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:2px 16px;font-size:13px;background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:8px 14px}
section.res{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:12px 16px;margin:14px 0}
figure{margin:12px 0 4px}figcaption{font-size:13px;font-weight:600;color:#333}figcaption .muted{font-weight:normal}
.chart{width:100%;min-height:120px}
.est{border-bottom:1px dotted #57606a;cursor:help}
.solo{padding:8px 16px;background:#fff;min-height:100vh}.solo figure{margin:0}
footer{color:#6e7781;font-size:12px;margin-top:20px}
</style>{{end}}
{{define "scripts"}}<script>{{.LibJS}}</script>
<script type="application/json" id="kubeslow-charts">{{.ChartJSON}}</script>
<script>{{.PageJS}}</script>{{end}}
`))
