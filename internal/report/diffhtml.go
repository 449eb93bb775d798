package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/kubeslow/kubeslow/pkg/result"
)

type diffResult struct {
	Name, Anchor string
	Charts       []htmlChart
}

type diffPage struct {
	A, B      *result.Report
	D         *Diff
	Results   []diffResult
	Library   string
	LibJS     template.JS
	PageJS    template.JS
	ChartJSON template.JS
}

// WriteDiffHTML renders the comparison of run a (before) with run b (after) as one self-contained page: what
// regressed and what was fixed, as in the text form, then each plot of the results both runs have with the
// first run's data drawn under the second's, so that the change shows in the plot and not only in the numbers.
func WriteDiffHTML(w io.Writer, a, b *result.Report, d *Diff) error {
	p := diffPage{A: a, B: b, D: d, Library: "Apache ECharts " + strings.TrimSpace(echartsVersion),
		LibJS: template.JS(echartsJS), PageJS: template.JS(reportJS)} // #nosec G203 -- our embedded files
	specs := []chartSpec{}
	for _, rb := range b.Results {
		ra := a.Result(rb.Name)
		if ra == nil {
			continue
		}
		dr := diffResult{Name: rb.Name, Anchor: anchor(rb.Name)}
		for _, c := range diffCharts(a, b, *ra, rb) {
			c.ID = fmt.Sprintf("chart-%d", len(specs))
			specs = append(specs, c)
			dr.Charts = append(dr.Charts, htmlChart{ID: c.ID, Title: c.Title, Note: c.Note})
		}
		if len(dr.Charts) > 0 {
			p.Results = append(p.Results, dr)
		}
	}
	js, err := json.Marshal(specs)
	if err != nil {
		return err
	}
	p.ChartJSON = template.JS(js) // #nosec G203 -- JSON from json.Marshal
	return diffTmpl.ExecuteTemplate(w, "diff", p)
}

// diffTmpl is the diff's page, with the report's style and scripts.
var diffTmpl = template.Must(template.Must(pageTmpl.Clone()).New("diff").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubeslow diff {{.A.RunID}} → {{.B.RunID}}</title>
{{template "style"}}</head><body>
<header><div class="in"><b>kubeslow diff</b>
<span>before: run {{.A.RunID}} · {{.A.Cluster.Name}} · {{.A.Start.UTC.Format "2006-01-02 15:04:05 UTC"}}</span>
<span>after: run {{.B.RunID}} · {{.B.Cluster.Name}} · {{.B.Start.UTC.Format "2006-01-02 15:04:05 UTC"}}</span></div></header>
<main>
<h2>{{.D.Regressions}} regression{{if ne .D.Regressions 1}}s{{end}}</h2>
{{if .D.NewFindings}}<h3>New findings</h3>{{range .D.NewFindings}}<div class="cause {{.Severity}}"><div class="head"><span class="pill {{.Severity}}">{{upper .Severity}}</span><span class="title">{{.Title}}</span><span class="id">{{.ID}}</span></div><div class="sentence">{{.Summary}}</div></div>{{end}}{{end}}
{{if .D.FixedFindings}}<h3>Gone</h3><ul>{{range .D.FixedFindings}}<li>{{.ID}} {{.Title}}</li>{{end}}</ul>{{end}}
{{if .D.Items}}<h3>Items of rules that fired in both runs</h3><table><tr><th>rule</th><th>item</th><th>value</th><th></th></tr>
{{range .D.Items}}<tr><td>{{.ID}}</td><td>{{.Key}}</td><td class="n">{{quantity .Value .Unit}}</td><td>{{if .New}}new (worse){{else}}gone{{end}}</td></tr>{{end}}</table>{{end}}
{{if .D.Status}}<h3>Status</h3><ul>{{range .D.Status}}<li>{{.Result}}: {{.Before}} → {{.After}}{{if .Regression}} (worse){{end}}</li>{{end}}</ul>{{end}}
{{if .D.Metrics}}<h3>Metrics that moved more than the tolerance</h3><table><tr><th>result</th><th>metric</th><th>labels</th><th>before</th><th>after</th><th>unit</th><th>ratio</th><th></th></tr>
{{range .D.Metrics}}<tr><td>{{.Result}}</td><td>{{.Name}}</td><td>{{labels .Labels}}</td><td class="n">{{value .Before}}</td><td class="n">{{value .After}}</td><td>{{.Unit}}</td><td class="n">{{if .Before}}x{{printf "%.2f" .Ratio}}{{else}}from 0{{end}}</td><td>{{if .Regression}}<b class="Fail">worse</b>{{end}}</td></tr>{{end}}</table>{{end}}
<h2>The plots of both runs</h2>
<p class="lead">Each plot of the second run with the first run's data drawn with it, in the same colours: bars faded, lines dashed.</p>
{{range .Results}}<section class="res" id="{{.Anchor}}"><h3>{{.Name}}</h3>
{{range .Charts}}<figure><figcaption>{{.Title}}{{if .Note}} <span class="muted">— {{.Note}}</span>{{end}}</figcaption><div class="chart" id="{{.ID}}"></div></figure>{{end}}
</section>{{end}}
<footer>plots drawn by {{.Library}} (Apache-2.0), embedded: this page fetches nothing.</footer>
</main>
{{template "scripts" .}}
</body></html>
`))
