package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Diff compares two runs (before and after a change): findings that appeared or went away, per rule and
// per item (a rule that fired in both runs on different nodes, paths or resources), results whose
// status changed, and metrics that moved by more than a tolerance. Latency-like metrics (unit seconds) that
// grew and throughput-like ones (per second) that shrank are regressions; other moves are reported as
// changes without a judgement.
type Diff struct {
	// NewFindings and FixedFindings are rules that fired in only one of the runs.
	NewFindings   []result.Finding
	FixedFindings []result.Finding
	// Items are the items that appeared or went away under rules that fired in both runs.
	Items   []ItemChange
	Status  []StatusChange
	Metrics []MetricChange
}

// ItemChange is an item of a rule that fired in both runs, listed in only one of them.
type ItemChange struct {
	ID, Key string
	Unit    string
	// Value is the item's number in the run that lists it.
	Value float64
	// New is true for an item only the second run lists (a regression), false for one that went away.
	New bool
}

// StatusChange is a result whose status differs between the runs.
type StatusChange struct {
	Result     string
	Before     result.Status
	After      result.Status
	Regression bool
}

// MetricChange is a metric present in both runs that moved beyond the tolerance.
type MetricChange struct {
	Result, Name, Unit string
	Labels             map[string]string
	Before, After      float64
	// Ratio is After/Before (0 when Before is 0).
	Ratio      float64
	Regression bool
}

// DefaultTolerance is the relative move below which a metric is considered unchanged (run-to-run noise).
const DefaultTolerance = 0.2

// Regressions counts what got worse.
func (d *Diff) Regressions() int {
	n := len(d.NewFindings)
	for _, it := range d.Items {
		if it.New {
			n++
		}
	}
	for _, s := range d.Status {
		if s.Regression {
			n++
		}
	}
	for _, m := range d.Metrics {
		if m.Regression {
			n++
		}
	}
	return n
}

// ruleItems are a rule's findings in one run, by item key; complete is false when a finding's list was cut
// (an item missing from it may still have fired).
type ruleItems struct {
	first    result.Finding
	items    map[string]result.Item
	complete bool
}

// itemsOf is a finding's items; a report written before findings listed items (one finding per item)
// yields one item keyed by the nodes its evidence names.
func itemsOf(f result.Finding) []result.Item {
	if len(f.Items) > 0 {
		return f.Items
	}
	var l []string
	for _, e := range f.Evidence {
		if n := e.Labels["node"]; n != "" {
			l = append(l, "node="+n)
		}
	}
	it := result.Item{Key: strings.Join(l, " "), Summary: f.Summary}
	if len(f.Evidence) > 0 {
		it.Value = f.Evidence[0].Value
	}
	return []result.Item{it}
}

func byRule(fs []result.Finding) (map[string]*ruleItems, []string) {
	out := map[string]*ruleItems{}
	var order []string
	for _, f := range fs {
		ri := out[f.ID]
		if ri == nil {
			ri = &ruleItems{first: f, items: map[string]result.Item{}, complete: true}
			out[f.ID] = ri
			order = append(order, f.ID)
		}
		for _, it := range itemsOf(f) {
			ri.items[it.Key] = it
		}
		if f.ItemCount > len(f.Items) {
			ri.complete = false
		}
	}
	return out, order
}

// compareFindings pairs the findings of two runs per rule, then per item.
func compareFindings(d *Diff, a, b []result.Finding) {
	before, beforeOrder := byRule(a)
	after, afterOrder := byRule(b)
	for _, id := range afterOrder {
		ra, rb := before[id], after[id]
		if ra == nil {
			d.NewFindings = append(d.NewFindings, rb.first)
			continue
		}
		unit := rb.first.Threshold.Unit
		for _, k := range slices.Sorted(maps.Keys(rb.items)) {
			if _, ok := ra.items[k]; !ok && ra.complete {
				d.Items = append(d.Items, ItemChange{ID: id, Key: k, Unit: unit, Value: rb.items[k].Value, New: true})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(ra.items)) {
			if _, ok := rb.items[k]; !ok && rb.complete {
				d.Items = append(d.Items, ItemChange{ID: id, Key: k, Unit: unit, Value: ra.items[k].Value})
			}
		}
	}
	for _, id := range beforeOrder {
		if after[id] == nil {
			d.FixedFindings = append(d.FixedFindings, before[id].first)
		}
	}
	sort.Slice(d.FixedFindings, func(i, j int) bool { return d.FixedFindings[i].ID < d.FixedFindings[j].ID })
}

var statusRank = map[result.Status]int{result.StatusPass: 0, result.StatusSkip: 0, result.StatusWarn: 1, result.StatusFail: 2, result.StatusError: 2}

// Compare diffs run a (before) against run b (after).
func Compare(a, b *result.Report, tolerance float64) *Diff {
	d := &Diff{}
	compareFindings(d, a.Findings, b.Findings)

	type mkey struct{ res, name, labels string }
	am := map[mkey]result.Metric{}
	for _, r := range a.Results {
		for _, m := range r.Metrics {
			am[mkey{r.Name, m.Name, result.FormatLabels(m.Labels)}] = m
		}
	}
	for _, rb := range b.Results {
		ra := a.Result(rb.Name)
		if ra == nil {
			continue
		}
		if ra.Status != rb.Status {
			d.Status = append(d.Status, StatusChange{Result: rb.Name, Before: ra.Status, After: rb.Status,
				Regression: statusRank[rb.Status] > statusRank[ra.Status]})
		}
		for _, m := range rb.Metrics {
			old, ok := am[mkey{rb.Name, m.Name, result.FormatLabels(m.Labels)}]
			if !ok || old.Unit != m.Unit || old.Value == m.Value {
				continue
			}
			ratio := 0.0
			if old.Value != 0 {
				ratio = m.Value / old.Value
			}
			if old.Value != 0 && math.Abs(ratio-1) <= tolerance {
				continue
			}
			c := MetricChange{Result: rb.Name, Name: m.Name, Unit: m.Unit, Labels: m.Labels, Before: old.Value, After: m.Value, Ratio: ratio}
			switch {
			case m.Unit == "seconds":
				c.Regression = m.Value > old.Value
			case strings.HasSuffix(m.Unit, "per_second"):
				c.Regression = m.Value < old.Value
			}
			d.Metrics = append(d.Metrics, c)
		}
	}
	sort.SliceStable(d.Metrics, func(i, j int) bool {
		if d.Metrics[i].Regression != d.Metrics[j].Regression {
			return d.Metrics[i].Regression
		}
		return d.Metrics[i].Result < d.Metrics[j].Result
	})
	return d
}

// WriteDiffText renders a diff for a terminal.
func WriteDiffText(w io.Writer, d *Diff) error {
	ew := &errWriter{w: w}
	ew.printf("REGRESSIONS: %d\n\n", d.Regressions())
	if len(d.NewFindings) > 0 {
		ew.printf("NEW FINDINGS (%d)\n", len(d.NewFindings))
		for _, f := range SortedFindings(d.NewFindings) {
			ew.printf("  [%s] %s %s: %s\n", strings.ToUpper(string(f.Severity)), f.ID, f.Title, f.Summary)
		}
		ew.printf("\n")
	}
	if len(d.FixedFindings) > 0 {
		ew.printf("GONE (%d)\n", len(d.FixedFindings))
		for _, f := range d.FixedFindings {
			ew.printf("  %s %s\n", f.ID, f.Title)
		}
		ew.printf("\n")
	}
	if len(d.Items) > 0 {
		ew.printf("ITEMS of rules that fired in both runs\n")
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
		for _, it := range d.Items {
			state := "gone"
			if it.New {
				state = "new  (worse)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", it.ID, ItemName(result.Item{Key: it.Key}), result.FormatQuantity(it.Value, it.Unit), state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		ew.printf("\n")
	}
	if len(d.Status) > 0 {
		ew.printf("STATUS\n")
		for _, s := range d.Status {
			mark := ""
			if s.Regression {
				mark = "  (worse)"
			}
			ew.printf("  %s: %s -> %s%s\n", s.Result, s.Before, s.After, mark)
		}
		ew.printf("\n")
	}
	if len(d.Metrics) > 0 {
		ew.printf("METRICS (moved more than the tolerance)\n")
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
		for _, m := range d.Metrics {
			mark := ""
			if m.Regression {
				mark = "worse"
			}
			ratio := "from 0"
			if m.Before != 0 {
				ratio = fmt.Sprintf("x%.2f", m.Ratio)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s -> %s %s\t%s\t%s\n", m.Result, m.Name, result.FormatLabels(m.Labels), result.FormatValue(m.Before), result.FormatValue(m.After), m.Unit, ratio, mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return ew.err
}
