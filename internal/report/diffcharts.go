package report

import (
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// diffCharts overlay the plots of one result in two runs: each plot of the second run with the first run's
// series next to (bars) or under (lines) its own, in the same colour, faded or dashed. Time series are put on
// one axis of the time since each run's start. Plots only one run has are left out (their numbers are in the
// diff's tables).
func diffCharts(ra, rb *result.Report, a, b result.Result) []chartSpec {
	before := map[string]chartSpec{}
	for _, c := range resultCharts(ra, a) {
		before[c.key] = c
	}
	var out []chartSpec
	for _, c := range resultCharts(rb, b) {
		o, ok := before[c.key]
		if !ok || o.Kind != c.Kind {
			continue
		}
		switch c.Kind {
		case "bars":
			out = append(out, diffBars(o, c))
		case "cdf":
			out = append(out, diffLines(o, c, time.Time{}, time.Time{}))
		case "time":
			d := diffLines(o, c, o.start, c.start)
			d.Relative = true
			d.Title = "over time since each run's start (before: dashed)"
			if len(c.Spans) > 0 {
				d.Title += "; shaded: the second run's load"
			}
			for i := range d.Spans {
				d.Spans[i].Start -= ms(c.start)
				d.Spans[i].End -= ms(c.start)
			}
			out = append(out, d)
		}
	}
	return out
}

func beforeName(n string) string { return n + " (before)" }

// panelOf finds the panel of a chart with the given title.
func panelOf(c chartSpec, title string) *chartPanel {
	for i := range c.Panels {
		if c.Panels[i].Title == title {
			return &c.Panels[i]
		}
	}
	return nil
}

func seriesOf(p *chartPanel, name string) *chartSeries {
	if p == nil {
		return nil
	}
	for i := range p.Series {
		if p.Series[i].Name == name {
			return &p.Series[i]
		}
	}
	return nil
}

// diffBars puts the categories of both runs on one axis (the second run's first) and, in each panel, each
// series of the first run before the second's.
func diffBars(o, c chartSpec) chartSpec {
	cats := append([]string(nil), c.Cats...)
	for _, k := range o.Cats {
		if !contains(cats, k) {
			cats = append(cats, k)
		}
	}
	cats = cats[:min(len(cats), 2*maxRows)]
	idx := map[string]int{}
	for i, k := range cats {
		idx[k] = i
	}
	remap := func(from []string, v []*num) []*num {
		if v == nil {
			return nil
		}
		out := make([]*num, len(cats))
		for i, x := range v {
			if j, ok := idx[from[i]]; ok {
				out[j] = x
			}
		}
		return out
	}
	d := c
	d.Cats, d.Panels, d.Title = cats, nil, c.Title+" — before (faded) and after"
	most := 1
	for _, p := range c.Panels {
		np := p
		np.Series = nil
		op := panelOf(o, p.Title)
		for _, s := range p.Series {
			if os := seriesOf(op, s.Name); os != nil {
				b := *os
				b.Name, b.Before = beforeName(s.Name), true
				b.Values, b.Lo, b.Hi = remap(o.Cats, os.Values), remap(o.Cats, os.Lo), remap(o.Cats, os.Hi)
				np.Series = append(np.Series, b)
			}
			s.Values, s.Lo, s.Hi = remap(c.Cats, s.Values), remap(c.Cats, s.Lo), remap(c.Cats, s.Hi)
			np.Series = append(np.Series, s)
		}
		k := len(np.Series)
		if np.Stack {
			k = 2
		}
		most = max(most, k)
		d.Panels = append(d.Panels, np)
	}
	cols := max(1, c.Panels[0].Cols)
	if c.Panels[0].Cols == 0 {
		cols = len(c.Panels)
	}
	d.Height = barsHeight(len(cats), most, (len(d.Panels)+cols-1)/cols) + 16
	return d
}

// diffLines adds to each panel of c the series of the same name of o's panel of the same title, their x
// shifted by the runs' origins (time charts; zero for a CDF).
func diffLines(o, c chartSpec, originO, originC time.Time) chartSpec {
	shift := func(pts [][2]num, origin time.Time) [][2]num {
		if origin.IsZero() {
			return pts
		}
		out := make([][2]num, len(pts))
		for i, p := range pts {
			out[i] = [2]num{p[0] - ms(origin), p[1]}
		}
		return out
	}
	d := c
	d.Panels = nil
	if c.Kind == "cdf" {
		d.Title = c.Title + " — before: dashed"
	}
	for _, p := range c.Panels {
		np := p
		np.Series = nil
		op := panelOf(o, p.Title)
		for _, s := range p.Series {
			if os := seriesOf(op, s.Name); os != nil {
				b := *os
				b.Name, b.Before, b.Points = beforeName(s.Name), true, shift(os.Points, originO)
				np.Series = append(np.Series, b)
			}
			s.Points = shift(s.Points, originC)
			np.Series = append(np.Series, s)
		}
		np.Lines = nil
		for _, l := range p.Lines {
			if !originC.IsZero() {
				l.V -= ms(originC)
			}
			np.Lines = append(np.Lines, l)
		}
		d.Panels = append(d.Panels, np)
	}
	return d
}
