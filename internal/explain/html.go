package explain

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// bar is one step drawn on a pod's time axis (in px).
type bar struct {
	Y, X, W     int
	Name, Title string
	Class       string
}

type htmlPod struct {
	result.PodTimeline
	Bars   []bar
	Height int
	Axis   string
}

type htmlPage struct {
	X         *result.Explanation
	Pods      []htmlPod
	Waterfall *waterfall
}

// waterfall is a rollout's or Job's pods on one time axis, one row each in order of creation, its phases
// (scheduling, sandbox, each init container, start, readiness, endpoints) side by side along it.
type waterfall struct {
	Rows   []wfRow
	Height int
	Axis   string
}

type wfRow struct {
	Y     int
	Label string
	Bars  []bar
}

const (
	chartWidth = 720
	labelWidth = 190
	rowHeight  = 18
)

// chart lays a pod's steps out on one time axis, from its creation to its last known end.
func chart(pt result.PodTimeline) htmlPod {
	hp := htmlPod{PodTimeline: pt}
	end := pt.Created.Add(time.Duration(pt.Seconds * float64(time.Second)))
	for _, s := range pt.Steps {
		if e := s.Start.Add(time.Duration(s.Seconds * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	span := end.Sub(pt.Created).Seconds()
	if span <= 0 {
		span = 1
	}
	px := func(t time.Time) int {
		if t.IsZero() {
			return 0
		}
		return int(float64(chartWidth) * t.Sub(pt.Created).Seconds() / span)
	}
	for i, s := range pt.Steps {
		b := bar{Y: i * rowHeight, Name: s.Name, Class: s.Status}
		if s.Within != "" {
			b.Name = "  " + s.Name
			b.Class += " pull"
		}
		if s.Status == result.StepDone || s.Status == result.StepPending {
			b.X = px(s.Start)
			b.W = max(2, int(float64(chartWidth)*s.Seconds/span))
		}
		b.Title = fmt.Sprintf("%s: %s s (%s, precision %s) — %s", s.Name, result.FormatValue(s.Seconds), s.Status, s.Precision, s.Source)
		if s.Note != "" {
			b.Title += " — " + s.Note
		}
		hp.Bars = append(hp.Bars, b)
	}
	hp.Height = len(pt.Steps)*rowHeight + 4
	hp.Axis = fmt.Sprintf("0 … %s s from creation", result.FormatValue(span))
	return hp
}

// waterfallOf lays pods out on the time axis from the first creation to the last known end (nil for one pod).
func waterfallOf(pods []result.PodTimeline) *waterfall {
	if len(pods) < 2 {
		return nil
	}
	ps := append([]result.PodTimeline(nil), pods...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Created.Before(ps[j].Created) })
	first, last := ps[0].Created, ps[0].Created
	for _, p := range ps {
		if e := p.Created.Add(time.Duration(p.Seconds * float64(time.Second))); e.After(last) {
			last = e
		}
		for _, s := range p.Steps {
			if e := s.Start.Add(time.Duration(s.Seconds * float64(time.Second))); !s.Start.IsZero() && e.After(last) {
				last = e
			}
		}
	}
	span := math.Max(last.Sub(first).Seconds(), 1)
	px := func(sec float64) int { return int(float64(chartWidth) * sec / span) }
	w := &waterfall{Axis: fmt.Sprintf("0 … %s s from the first pod's creation (%s)", result.FormatValue(span), first.UTC().Format(time.RFC3339))}
	for i, p := range ps {
		r := wfRow{Y: i * rowHeight, Label: fmt.Sprintf("%s %s s", p.Name, result.FormatValue(p.Seconds))}
		for _, s := range p.Steps {
			if s.Within != "" || s.Start.IsZero() || (s.Status != result.StepDone && s.Status != result.StepPending) {
				continue
			}
			phase, _, _ := strings.Cut(s.Name, ":")
			r.Bars = append(r.Bars, bar{Y: r.Y, X: px(s.Start.Sub(first).Seconds()), W: max(1, px(s.Seconds)), Name: s.Name, Class: "ph-" + phase,
				Title: fmt.Sprintf("%s %s: %s s (%s)", p.Name, s.Name, result.FormatValue(s.Seconds), s.Status)})
		}
		w.Rows = append(w.Rows, r)
	}
	w.Height = len(ps)*rowHeight + 4
	return w
}

var page = template.Must(template.New("explain").Funcs(template.FuncMap{
	"secs":  secs,
	"fv":    result.FormatValue,
	"qty":   result.FormatQuantity,
	"time":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"lower": strings.ToLower,
	"add":   func(a, b int) int { return a + b },
	"lw":    func() int { return labelWidth },
	"cw":    func() int { return chartWidth + labelWidth + 10 },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kubeslow explain {{.X.Target.Kind}} {{.X.Target.Namespace}}/{{.X.Target.Name}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em}
.v{border-left:4px solid #888;padding:.3em .8em;margin:.8em 0;background:#fafafa}
.v.warning{border-color:#d80}.v.error,.v.critical{border-color:#c00}
.small{color:#555;font-size:.9em}
table{border-collapse:collapse;font-size:.9em}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
rect.done{fill:#4a7fd0}rect.pending{fill:#e0a020}rect.pull{fill:#8fb0e0}rect.unknown,rect.not-measured{fill:#ccc}
rect.ph-scheduling{fill:#9a9a9a}rect.ph-sandbox{fill:#b07cc6}rect.ph-init{fill:#e08a3c}rect.ph-start{fill:#4a7fd0}rect.ph-readiness{fill:#3aa76d}rect.ph-endpoints{fill:#c9b33a}rect.ph-dns{fill:#d04a4a}
text{font-size:12px;font-family:monospace}
</style></head><body>
<h1>kubeslow explain {{.X.Target.Kind}} {{.X.Target.Namespace}}/{{.X.Target.Name}}</h1>
<p class="small">{{.X.Target.Selection}} — {{len .X.Pods}} pod(s), read {{time .X.Read}}{{if .X.Context}}, context {{.X.Context}}{{end}}</p>
<h2>Verdicts, the longest first</h2>
{{range .X.Verdicts}}<div class="v {{.Severity}}"><b>{{.ID}}</b> [{{.Severity}}] {{.Title}}<br>{{.Summary}}
<div class="small">evidence: {{range $i, $e := .Evidence}}{{if $i}}, {{end}}{{$e.Name}}={{qty $e.Value $e.Unit}}{{end}}<br>
threshold: {{.Threshold.Op}} {{qty .Threshold.Value .Threshold.Unit}} — {{.Threshold.Source}}<br>fix: {{.Remediation}}</div></div>
{{else}}<p>Nothing to explain: no step of 1 s or more, and no failure Event.</p>{{end}}
{{if .X.OutOfReach}}<h2>Out of reach</h2><ul>{{range .X.OutOfReach}}<li><b>{{.Signal}}</b>: {{.Why}} <span class="small">fix: {{.Fix}}</span></li>{{end}}</ul>{{end}}
{{with .X.Workload}}<h2>Across {{.Pods}} pod(s): {{.Ready}} Ready, dominant step {{.Dominant}}</h2>
<table><tr><th>step</th><th>pods</th><th>median</th><th>max</th><th>slowest pod</th><th>share</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td>{{.Pods}}</td><td>{{secs .MedianSeconds}}</td><td>{{secs .MaxSeconds}}</td><td>{{.MaxPod}}</td><td>{{fv .Share}}</td></tr>{{end}}</table>
{{with .Job}}<p>Job: created {{time .Created}} → all Running +{{secs .ToRunningSeconds}} → all Ready +{{secs .ToReadySeconds}} {{.Note}}</p>{{end}}{{end}}
{{with .Waterfall}}<h2>Waterfall: the pods on one time axis, in order of creation</h2>
<svg width="{{cw}}" height="{{.Height}}" role="img" aria-label="waterfall of the pods">
{{range .Rows}}<text x="0" y="{{add .Y 13}}">{{.Label}}</text>{{range .Bars}}<rect class="{{.Class}}" x="{{add .X lw}}" y="{{add .Y 3}}" width="{{.W}}" height="12"><title>{{.Title}}</title></rect>{{end}}
{{end}}</svg><div class="small">{{.Axis}}; phases: scheduling (grey), sandbox (violet), init (orange), start (blue), readiness (green), endpoints (yellow), dns (red)</div>{{end}}
{{range .Pods}}<h2>{{.Name}} on {{.Node}}: {{secs .Seconds}}{{if .Ready}} (Ready){{else}} (not Ready){{end}}</h2>
<svg width="{{cw}}" height="{{.Height}}" role="img" aria-label="timeline of {{.Name}}">
{{range .Bars}}<text x="0" y="{{add .Y 13}}">{{.Name}}</text><rect class="{{.Class}}" x="{{add .X lw}}" y="{{add .Y 3}}" width="{{.W}}" height="12"><title>{{.Title}}</title></rect>
{{end}}</svg><div class="small">{{.Axis}}; events: {{.Events.Count}}{{if .Events.Note}} — {{.Events.Note}}{{end}}</div>
<table><tr><th>step</th><th>start</th><th>seconds</th><th>precision</th><th>status</th><th>source</th><th>note</th></tr>
{{range .Steps}}<tr><td>{{.Name}}</td><td>{{if not .Start.IsZero}}{{time .Start}}{{end}}</td><td>{{if .UpperBound}}≤{{end}}{{fv .Seconds}}</td><td>{{.Precision}}</td><td>{{.Status}}</td><td>{{.Source}}</td><td>{{.Note}}{{range .Events}}<br>{{.Reason}} ×{{.Count}}: {{.Message}}{{end}}</td></tr>{{end}}</table>
{{end}}</body></html>
`))

// WriteHTML renders x as one self-contained page: the verdicts, the workload's table, a rollout's or Job's
// waterfall (its pods on one time axis), and per pod a timeline chart (hover a bar for its source) with its
// steps.
func WriteHTML(w io.Writer, x *result.Explanation) error {
	p := htmlPage{X: x, Waterfall: waterfallOf(x.Pods)}
	for _, pt := range x.Pods {
		p.Pods = append(p.Pods, chart(pt))
	}
	return page.Execute(w, p)
}
