package report

import (
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// The HTML report is one self-contained file: inline CSS, plots drawn here as inline SVG, no script and
// nothing fetched at view time. Findings come first, each linking to the results its evidence comes from.

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
		_, hr.Rest = QuantileRows(res.Metrics)
		hr.Plots, hr.Note = resultPlots(res)
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
