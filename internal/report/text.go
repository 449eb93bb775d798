// Package report renders a result.Report for people and tools: text, a self-contained HTML page, JUnit XML, and
// the comparison of two runs (diff). The JSON form and the value formatting are pkg/result's.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// WriteText renders the report for a terminal: findings first (worst first), then each result with its
// metrics.
func WriteText(w io.Writer, r *result.Report) error {
	ew := &errWriter{w: w}
	ew.printf("kubeslow %s  run %s  cluster %s (%s)", r.Tool.Version, r.RunID, r.Cluster.Name, r.Cluster.Server)
	if r.Cluster.Version != "" {
		ew.printf("  %s", r.Cluster.Version)
	}
	ew.printf("\nnodes: %d (%d ready", r.Cluster.Nodes.Total, r.Cluster.Nodes.Ready)
	if r.Cluster.Nodes.Simulated > 0 {
		ew.printf(", %d simulated", r.Cluster.Nodes.Simulated)
	}
	ew.printf(")  duration %s\n\n", r.End.Sub(r.Start).Round(1e6))

	if len(r.Findings) == 0 {
		ew.printf("FINDINGS: none\n\n")
	} else {
		tree := CausalOrder(r.Findings)
		causes, lone := 0, 0
		for _, n := range tree {
			if n.Finding.NoCause != "" {
				lone++
			} else {
				causes++
			}
		}
		ew.printf("FINDINGS (%d): %d cause(s) first, each with its symptoms under it", len(r.Findings), causes)
		if lone > 0 {
			ew.printf("; then %d symptom(s) with no cause found", lone)
		}
		ew.printf("\n")
		var write func(n CauseNode, indent string) error
		write = func(n CauseNode, indent string) error {
			if err := writeTextFinding(ew, n.Finding, indent); err != nil {
				return err
			}
			for _, s := range n.Symptoms {
				if err := write(s, indent+"    "); err != nil {
					return err
				}
			}
			return nil
		}
		for _, n := range tree {
			if err := write(n, "  "); err != nil {
				return err
			}
		}
		ew.printf("\n")
	}

	gaps := r.FoldedGaps()
	if len(r.Rules) > 0 {
		counts := map[result.RuleStatus]int{}
		for _, e := range r.Rules {
			counts[e.Status]++
		}
		ew.printf("RULES: %d fired, %d clear, %d not evaluated", counts[result.RuleFired], counts[result.RuleClear], counts[result.RuleNotEvaluated])
		if counts[result.RuleNotEvaluated] > 0 {
			ew.printf(" (each under the source that starved it, below)")
		}
		ew.printf("\n\n")
	}

	// What could not be measured, once per source: the reason and the fix said once, what it held back under it.
	gapOf := map[string]string{}
	if len(gaps) > 0 {
		ew.printf("COULD NOT MEASURE (%d source(s)): not read on this run, so not judged (missing is never healthy)\n", len(gaps))
		for _, g := range gaps {
			writeTextGap(ew, g)
			for _, m := range g.Measurements {
				if _, ok := gapOf[m]; !ok {
					gapOf[m] = g.Title
				}
			}
		}
		ew.printf("\n")
	}

	ew.printf("RESULTS: %s\n", r.Tally())
	tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
	for _, res := range r.Results {
		reason := res.Reason
		if g, ok := gapOf[res.Name]; ok && !res.Status.Measured() {
			reason = "see could not measure: " + g
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", res.Name, res.Status, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		if len(res.Metrics) == 0 {
			continue
		}
		ew.printf("\n%s\n", res.Name)
		if res.Observed {
			ew.printf("  %s\n", ObservationWindow(res))
		}
		rows, rest := QuantileRows(res.Metrics)
		if len(rows) > 0 {
			tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "  \t%s\tunit\t\n", strings.Join(quantileCols, "\t"))
			for _, q := range rows {
				cells := make([]string, len(quantileCols))
				for i, v := range q.Values {
					cells[i] = "-"
					if v != nil {
						cells[i] = result.FormatValue(*v)
						if b := q.Bounds[i]; b != nil {
							cells[i] += " " + BoundsNote(*b, q.Unit)
						}
					}
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", q.Name, strings.Join(cells, "\t"), q.Unit, result.FormatLabels(q.Labels))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
		for _, m := range rest {
			v := result.FormatValue(m.Value)
			if m.Bounds != nil {
				v += " " + BoundsNote(*m.Bounds, m.Unit)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Name, v, m.Unit, result.FormatLabels(m.Labels))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return ew.err
}

// writeTextGap writes one source that could not be read: its reason, what it held back, its fix.
func writeTextGap(ew *errWriter, g result.Gap) {
	if d := g.Detail(); d == "" {
		ew.printf("  %s\n", g.Title)
	} else {
		ew.printf("  %s: %s\n", g.Title, d)
	}
	if len(g.Measurements) > 0 {
		ew.printf("      measurements: %s\n", strings.Join(g.Measurements, ", "))
	}
	if len(g.Signals) > 0 {
		ew.printf("      signals: %s\n", strings.Join(g.Signals, "; "))
	}
	if len(g.Rules) > 0 {
		ew.printf("      rules not evaluated: %s\n", strings.Join(g.Rules, ", "))
	}
	if g.Fix != "" {
		ew.printf("      fix: %s\n", g.Fix)
	}
}

// writeTextFinding writes one finding at indent; a symptom (one another finding explains) is marked so.
func writeTextFinding(ew *errWriter, f result.Finding, indent string) error {
	mark := ""
	if f.ExplainedBy != "" {
		mark = "└ symptom of " + f.ExplainedBy + ": "
	}
	in := indent + "    "
	ew.printf("%s%s[%s] %s %s\n%s%s\n", indent, mark, strings.ToUpper(string(f.Severity)), f.ID, f.Title, in, f.Summary)
	if f.NoCause != "" {
		ew.printf("%scause: %s\n", in, f.NoCause)
	}
	if len(f.Items) > 1 {
		ew.printf("%s%s:\n", in, ItemsHeading(f))
		tw := tabwriter.NewWriter(ew, 2, 4, 2, ' ', 0)
		for _, it := range f.Items[:min(len(f.Items), textItems)] {
			fmt.Fprintf(tw, "%s  %s\t%s\n", in, ItemName(it), result.FormatQuantity(it.Value, f.Threshold.Unit))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if more := f.ItemCount - min(len(f.Items), textItems); more > 0 {
			ew.printf("%s  ... and %d more (-o json lists %d)\n", in, more, len(f.Items))
		}
	}
	for _, sa := range f.SeenAlso {
		ew.printf("%sseen also by %s (%s): %s\n", in, sa.ID, strings.Join(sa.Results, ", "), sa.Summary)
	}
	ew.printf("%sthreshold: %s %s %s (%s)\n", in, f.Threshold.Op, result.FormatValue(f.Threshold.Value), f.Threshold.Unit, f.Threshold.Source)
	ew.printf("%sfix: %s\n", in, f.Remediation)
	return nil
}

// CauseNode is a finding with the findings it explains (its symptoms), each with its own.
type CauseNode struct {
	Finding  result.Finding
	Symptoms []CauseNode
}

// CausalOrder arranges findings by cause: the findings no other finding of the report explains, causes first
// (worst first) and then the symptoms no cause was found for, each with the findings it explains under it,
// recursively (etcd's disk, the apiserver's latency under it, slow pod creates under that).
func CausalOrder(fs []result.Finding) []CauseNode {
	sorted := SortedFindings(fs)
	ids := map[string]bool{}
	for _, f := range sorted {
		ids[f.ID] = true
	}
	placed := map[string]bool{}
	var node func(f result.Finding) CauseNode
	node = func(f result.Finding) CauseNode {
		placed[f.ID] = true
		n := CauseNode{Finding: f}
		for _, s := range sorted {
			if s.ExplainedBy == f.ID && !placed[s.ID] {
				n.Symptoms = append(n.Symptoms, node(s))
			}
		}
		return n
	}
	var causes, lone []CauseNode
	for _, f := range sorted {
		if placed[f.ID] || (f.ExplainedBy != "" && ids[f.ExplainedBy] && f.ExplainedBy != f.ID) {
			continue
		}
		if n := node(f); f.NoCause != "" {
			lone = append(lone, n)
		} else {
			causes = append(causes, n)
		}
	}
	// A finding whose cause chain loops (never made by rule.Evaluate) is not lost.
	for _, f := range sorted {
		if !placed[f.ID] {
			causes = append(causes, node(f))
		}
	}
	return append(causes, lone...)
}

// BoundsNote says that a value is a quantile estimated within a histogram bucket, and which:
// "(estimate, bucket 0.04–0.05 s)"; for an open bucket, the side the true value lies on.
func BoundsNote(b result.Bounds, unit string) string {
	suffix := result.UnitSuffix(unit)
	switch b.Unbounded {
	case "upper":
		return fmt.Sprintf("(estimate: at least %s%s, in the +Inf bucket)", result.FormatValue(b.Lower), suffix)
	case "lower":
		return fmt.Sprintf("(estimate: at most %s%s, in the lowest bucket)", result.FormatValue(b.Upper), suffix)
	}
	return fmt.Sprintf("(estimate, bucket %s–%s%s)", result.FormatValue(b.Lower), result.FormatValue(b.Upper), suffix)
}

// quantileCols are the summary columns of a quantile table, in order.
var quantileCols = []string{"p50", "p90", "p99", "max"}

// QuantileRow is one distribution: the metrics <Name>_p50, _p90, _p99 and _max with the same unit and labels.
type QuantileRow struct {
	Name   string
	Unit   string
	Labels map[string]string
	// Values follow quantileCols; nil where the metric is absent.
	Values []*float64
	// Bounds follow quantileCols: the histogram bucket a value was estimated in, nil for an exact value.
	Bounds []*result.Bounds
}

// QuantileRows groups a result's percentile metrics into rows (first-seen order) so a distribution reads
// as one line; metrics that are not part of a group of at least two quantiles are returned in rest.
func QuantileRows(ms []result.Metric) (rows []QuantileRow, rest []result.Metric) {
	idx := map[string]int{}
	var members [][]int
	for i, m := range ms {
		base, col := splitQuantile(m.Name)
		if col < 0 {
			continue
		}
		key := base + "\x00" + m.Unit + "\x00" + result.FormatLabels(m.Labels)
		j, ok := idx[key]
		if !ok {
			j = len(rows)
			idx[key] = j
			rows = append(rows, QuantileRow{Name: base, Unit: m.Unit, Labels: m.Labels, Values: make([]*float64, len(quantileCols)),
				Bounds: make([]*result.Bounds, len(quantileCols))})
			members = append(members, nil)
		}
		v := m.Value
		rows[j].Values[col] = &v
		rows[j].Bounds[col] = m.Bounds
		members[j] = append(members[j], i)
	}
	grouped := map[int]bool{}
	kept := rows[:0]
	for j, r := range rows {
		if len(members[j]) < 2 {
			continue
		}
		kept = append(kept, r)
		for _, i := range members[j] {
			grouped[i] = true
		}
	}
	for i, m := range ms {
		if !grouped[i] {
			rest = append(rest, m)
		}
	}
	return kept, rest
}

func splitQuantile(name string) (string, int) {
	for i, c := range quantileCols {
		if base, ok := strings.CutSuffix(name, "_"+c); ok && base != "" {
			return base, i
		}
	}
	return "", -1
}

// textItems is how many of a finding's items the text report lists.
const textItems = 10

// ItemsHeading introduces a finding's items: "3 items, worst first" (with the count of all of them when the
// list was cut).
func ItemsHeading(f result.Finding) string {
	if f.ItemCount > len(f.Items) {
		return fmt.Sprintf("%d items, worst first (the first %d listed)", f.ItemCount, len(f.Items))
	}
	return fmt.Sprintf("%d items, worst first", max(f.ItemCount, len(f.Items)))
}

// ItemName is an item's key, or "(all)" for a rule over one global number.
func ItemName(it result.Item) string {
	if it.Key == "" {
		return "(all)"
	}
	return it.Key
}

// SortedFindings returns findings worst first, then by ID.
func SortedFindings(fs []result.Finding) []result.Finding {
	out := append([]result.Finding(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].Severity.Rank(), out[j].Severity.Rank(); a != b {
			return a > b
		}
		return out[i].ID < out[j].ID
	})
	return out
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// ObservationWindow states an observation's window and the load kubeslow ran in it.
func ObservationWindow(res result.Result) string {
	w := fmt.Sprintf("observed %s to %s UTC (%s)", res.Start.UTC().Format("15:04:05"), res.End.UTC().Format("15:04:05"), res.End.Sub(res.Start).Round(time.Second))
	if len(res.Load) == 0 {
		return w + ", no kubeslow load in the window"
	}
	var l []string
	for _, s := range res.Load {
		l = append(l, fmt.Sprintf("%s %s to %s", s.Name, s.Start.UTC().Format("15:04:05"), s.End.UTC().Format("15:04:05")))
	}
	return w + ", under the load of " + strings.Join(l, ", ")
}
