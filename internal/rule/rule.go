// Package rule is what a rule is and how it is evaluated: rules as data (stable id, title, severity, the
// threshold on a typed metric and its source, evidence template, remediation, case), evaluated over a
// report's results. A rule whose inputs were not measured is "not evaluated", never "clear". A rule that
// fires on several items (nodes, paths, resources, clients) is one finding with the worst item first.
//
// It is a leaf (it imports only the report schema): each measurement package declares its own rules with it
// (a Rules function beside its metric names), and internal/engine/check collects them from the registries and
// holds the rules that combine several measurements.
package rule

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// Metric names one metric of one measurement's result: Result is the measurement's Name, Name one of the
// metric-name constants its package exports.
type Metric struct {
	Result string
	Name   string
}

func (m Metric) String() string { return m.Result + " " + m.Name }

// In returns m's first sample in the report whose labels include all of labels, or nil.
func (m Metric) In(r *result.Report, labels map[string]string) *result.Metric {
	res := r.Result(m.Result)
	if res == nil {
		return nil
	}
	return res.Metric(m.Name, labels)
}

// Samples returns every sample of m in the report.
func (m Metric) Samples(r *result.Report) []result.Metric {
	res := r.Result(m.Result)
	if res == nil {
		return nil
	}
	var out []result.Metric
	for _, x := range res.Metrics {
		if x.Name == m.Name {
			out = append(out, x)
		}
	}
	return out
}

// Evidence is a sample of m as a finding's evidence.
func (m Metric) Evidence(x result.Metric) result.Evidence { return EvidenceOf(x, m.Result) }

// Condition is a threshold on a metric: the metric, the comparison that makes it true, the line, its unit.
type Condition struct {
	Metric Metric
	// Op is ">", ">=", "<" or "<=".
	Op    string
	Value float64
	Unit  string
}

// Holds applies the condition to a value of its metric.
func (c Condition) Holds(v float64) bool { return Compare(v, c.Op, c.Value) }

func (c Condition) String() string {
	return fmt.Sprintf("%s %s %s %s", c.Metric.Name, c.Op, result.FormatValue(c.Value), c.Unit)
}

// Rule is one named cause. Its threshold is declared once, in When (and Also): the reference, the findings
// and the evaluation all read it from there.
//
// A simple rule is When, Source, Summary and Remediation: it fires on every sample of When.Metric that
// crosses the threshold (each label set one item) and meets every Also condition. A rule that needs more
// (several metrics at once, cluster facts, grouping) sets Match, which must read its thresholds from When
// and Also.
type Rule struct {
	ID       string
	Title    string
	Severity result.Severity
	Cases    []string
	// When is the threshold that makes the finding.
	When Condition
	// Source says where the threshold comes from (an SLO, a project's documentation, a kernel default, a
	// case).
	Source string
	// Also are further conditions an item must meet; without a Match, each is read from the sample of its
	// metric with the item's labels.
	Also []Condition
	// Reads are further metrics a Match reads (for its summary, its evidence, a grouping); the tests check
	// that a measurement produces them, as they do for the conditions' metrics.
	Reads []Metric
	// Needs are results the rule reads besides those its metrics name; if any input was not measured, the
	// rule is not evaluated.
	Needs []string
	// Summary is a text/template over a Hit's Vars (and .threshold), e.g. "etcd WAL fsync p99 {{.value}} >
	// {{.threshold}}". Without a Match, the vars are value, labels, each label, and each Also metric's
	// value by its metric name.
	Summary     string
	Remediation string
	// Match finds the rule's hits in the report (pure); nil means Crossing.
	Match func(r *result.Report, rule Rule) []Hit
	// ExplainedBy names rules whose cause, when they fire in the same report, is this finding's cause too
	// (a starved control plane delays every phase of a pod's start-up). The finding is kept, as evidence,
	// but lowered to info and says which finding to fix first, so that one cause is not reported as two.
	ExplainedBy []string
	// SameCause names rules that read this rule's cause from another source (the apiserver's 409 counters
	// and the audit log's 409s of one client). When this rule and one of them fire in the same report, this
	// finding is folded into that one's (Finding.SeenAlso keeps its summary and evidence), so that one cause is
	// one finding whatever the number of sources that see it.
	SameCause []string
	// Alternatives are the same rule (its ID, its cause) over other sources, e.g. KS-NET-MTU over `bench mtu`'s
	// DF probe, over `bench net`'s node facts and over the node agent's: where the rule's own inputs were not
	// measured or it did not fire, the first alternative that fires makes the finding; the rule is clear when
	// one of them was evaluated and none fired, and not evaluated only when none could be. One ID stays one
	// rule for the catalogue, the causes' links and the report. measure.RulesOf makes them from the rules of
	// several measurements that share an ID.
	Alternatives []Rule
}

// Hit is one item a rule fired on: its key, the number compared with the threshold, the numbers it rests on
// and the values the summary names.
type Hit struct {
	// Key names the item (by default the labels of the metric that crossed); empty for a global number.
	Key string
	// Value is the item's number in the unit of the rule's threshold; it orders the items, worst first.
	Value    float64
	Evidence []result.Evidence
	Vars     map[string]string
	// Severity lowers this item below the rule's (e.g. evidence older than the run); "" is the rule's. The
	// finding takes the highest of its items' severities, and lowered items follow the others.
	Severity result.Severity
}

// severity is h's severity under rule.
func (rule Rule) severity(h Hit) result.Severity {
	if h.Severity != "" && h.Severity.Rank() < rule.Severity.Rank() {
		return h.Severity
	}
	return rule.Severity
}

// Threshold is the rule's threshold as reports carry it.
func (rule Rule) Threshold() result.Threshold {
	return result.Threshold{Op: rule.When.Op, Value: rule.When.Value, Unit: rule.When.Unit, Source: rule.Source}
}

// Inputs are the results the rule reads, in order: its conditions' and then its Needs.
func (rule Rule) Inputs() []string {
	var in []string
	add := func(n string) {
		if n != "" && !contains(in, n) {
			in = append(in, n)
		}
	}
	add(rule.When.Metric.Result)
	for _, m := range rule.Metrics()[1:] {
		add(m.Result)
	}
	for _, n := range rule.Needs {
		add(n)
	}
	return in
}

// Metrics are the metrics the rule reads: its conditions', then Reads.
func (rule Rule) Metrics() []Metric {
	ms := []Metric{rule.When.Metric}
	for _, c := range rule.Also {
		ms = append(ms, c.Metric)
	}
	return append(ms, rule.Reads...)
}

// AlsoOn returns the rule's Also condition on metric m; a rule's Match asking for a condition it does not
// declare is a programming error (every rule is run by the tests).
func (rule Rule) AlsoOn(m Metric) Condition {
	for _, c := range rule.Also {
		if c.Metric == m {
			return c
		}
	}
	panic(fmt.Sprintf("rule: rule %s has no condition on %s", rule.ID, m))
}

// Crossing returns a hit for every sample of When.Metric that crosses the threshold and meets every Also
// condition on the sample of its metric with the same labels. It is the evaluation of a rule without Match
// and where a Match may start.
func (rule Rule) Crossing(r *result.Report) []Hit {
	res := r.Result(rule.When.Metric.Result)
	if res == nil {
		return nil
	}
	// Each Also metric's samples by their labels, built once: looking each crossing's up by a scan of its
	// result made a rule over 5,000 nodes cost seconds (BenchmarkKubelet5000).
	also := make([]map[string]*result.Metric, len(rule.Also))
	for i, c := range rule.Also {
		also[i] = map[string]*result.Metric{}
		if ar := r.Result(c.Metric.Result); ar != nil {
			for j := range ar.Metrics {
				am := &ar.Metrics[j]
				if am.Name != c.Metric.Name {
					continue
				}
				if k := result.FormatLabels(am.Labels); also[i][k] == nil {
					also[i][k] = am
				}
			}
		}
	}
	var hits []Hit
	for _, m := range res.Metrics {
		if m.Name != rule.When.Metric.Name || !rule.When.Holds(m.Value) {
			continue
		}
		h := Hit{Key: result.FormatLabels(m.Labels), Value: m.Value, Evidence: []result.Evidence{EvidenceOf(m, res.Name)},
			Vars: map[string]string{"value": result.FormatQuantity(m.Value, rule.When.Unit), "labels": result.FormatLabels(m.Labels)}}
		for k, v := range m.Labels {
			h.Vars[k] = v
		}
		ok := true
		for i, c := range rule.Also {
			// The sample with the same labels; else the first whose labels include them.
			am := also[i][h.Vars["labels"]]
			if ar := r.Result(c.Metric.Result); am == nil && ar != nil {
				am = ar.Metric(c.Metric.Name, m.Labels)
			}
			if am == nil || !c.Holds(am.Value) {
				ok = false
				break
			}
			h.Evidence = append(h.Evidence, EvidenceOf(*am, c.Metric.Result))
			h.Vars[c.Metric.Name] = result.FormatQuantity(am.Value, c.Unit)
		}
		if ok {
			hits = append(hits, h)
		}
	}
	return hits
}

// Evaluate runs every rule over the report and returns the findings (one per rule that fired) and each
// rule's evaluation.
func Evaluate(r *result.Report, rules []Rule) ([]result.Finding, []result.RuleEvaluation) {
	var findings []result.Finding
	var evals []result.RuleEvaluation
	for _, rule := range rules {
		f, ev := rule.evaluate(r)
		for _, alt := range rule.Alternatives {
			if ev.Status == result.RuleFired {
				break
			}
			af, aev := alt.evaluate(r)
			switch {
			case aev.Status == result.RuleFired:
				f, ev = af, aev
			case aev.Status == result.RuleClear:
				ev = aev
			case ev.Status == result.RuleNotEvaluated:
				ev.Reason += "; " + aev.Reason
			}
		}
		evals = append(evals, ev)
		if f != nil {
			findings = append(findings, *f)
		}
	}
	explain(findings, rules, evals)
	findings = fold(findings, evals, rules)
	return findings, evals
}

// evaluate evaluates one rule (not its Alternatives) over r: its evaluation, and its finding when it fired.
func (rule Rule) evaluate(r *result.Report) (*result.Finding, result.RuleEvaluation) {
	if missing := missingInputs(r, rule.Inputs()); missing != "" {
		return nil, result.RuleEvaluation{ID: rule.ID, Status: result.RuleNotEvaluated, Reason: missing}
	}
	// A metric its source lacks leaves the rule unable to say "clear"; it may still fire on what is there
	// (a rule with alternative evidence: a starved apiserver's latency is absent, its unanswered scrapes
	// are not).
	absent := absentMetrics(r, rule.Metrics())
	hits := rule.hits(r)
	switch {
	case len(hits) == 0 && absent != "":
		return nil, result.RuleEvaluation{ID: rule.ID, Status: result.RuleNotEvaluated, Reason: absent}
	case len(hits) == 0:
		return nil, result.RuleEvaluation{ID: rule.ID, Status: result.RuleClear}
	}
	f := rule.finding(hits)
	return &f, result.RuleEvaluation{ID: rule.ID, Status: result.RuleFired}
}

// fold folds each finding of a rule whose SameCause rule fired too into that rule's finding, and says so in
// its evaluation.
func fold(findings []result.Finding, evals []result.RuleEvaluation, rules []Rule) []result.Finding {
	at := map[string]int{}
	for i, f := range findings {
		at[f.ID] = i
	}
	folded := map[string]bool{}
	for _, rl := range rules {
		i, ok := at[rl.ID]
		if !ok {
			continue
		}
		for _, id := range rl.SameCause {
			j, ok := at[id]
			if !ok || id == rl.ID || folded[id] {
				continue
			}
			f, into := findings[i], &findings[j]
			into.SeenAlso = append(into.SeenAlso, result.SeenAlso{ID: f.ID, Title: f.Title, Summary: f.Summary, Evidence: f.Evidence, Results: f.Results})
			for _, r := range f.Results {
				if !contains(into.Results, r) {
					into.Results = append(into.Results, r)
				}
			}
			folded[rl.ID] = true
			for k := range evals {
				if evals[k].ID == rl.ID {
					evals[k].Reason = fmt.Sprintf("the same cause as %s, seen from another source: folded into that finding", id)
				}
			}
			break
		}
	}
	if len(folded) == 0 {
		return findings
	}
	// A symptom of a folded finding is a symptom of the finding it was folded into.
	into := map[string]string{}
	for _, rl := range rules {
		if folded[rl.ID] {
			for _, id := range rl.SameCause {
				if _, ok := at[id]; ok && !folded[id] {
					into[rl.ID] = id
					break
				}
			}
		}
	}
	for i := range findings {
		if to, ok := into[findings[i].ExplainedBy]; ok {
			findings[i].ExplainedBy = to
		}
	}
	out := findings[:0]
	for _, f := range findings {
		if !folded[f.ID] {
			out = append(out, f)
		}
	}
	return out
}

// explain lowers each finding a fired rule explains (Rule.ExplainedBy) to info, naming its direct cause: the
// first of its causes that fired and is not (through its own causes) explained by it. Causes chain (etcd's
// slow fsync explains the apiserver's latency, which explains slow pod creates): the report nests each
// symptom under its cause. A symptom none of whose causes fired says so (Finding.NoCause), with what was
// clear and what was not evaluated.
func explain(findings []result.Finding, rules []Rule, evals []result.RuleEvaluation) {
	fired := map[string]*result.Finding{}
	for i := range findings {
		fired[findings[i].ID] = &findings[i]
	}
	status := map[string]result.RuleEvaluation{}
	for _, e := range evals {
		status[e.ID] = e
	}
	// reaches says whether following the causes already named from id reaches target.
	reaches := func(id, target string) bool {
		for seen := map[string]bool{}; id != "" && !seen[id]; id = fired[id].ExplainedBy {
			if id == target {
				return true
			}
			seen[id] = true
		}
		return false
	}
	for _, rl := range rules {
		f := fired[rl.ID]
		if f == nil || len(rl.ExplainedBy) == 0 {
			continue
		}
		for _, id := range rl.ExplainedBy {
			by := fired[id]
			if by == nil || id == rl.ID || reaches(id, rl.ID) {
				continue
			}
			f.ExplainedBy = id
			f.Severity = result.SeverityInfo
			f.Summary += fmt.Sprintf(" — a symptom of %s (%s): fix that first and measure again", id, by.Title)
			break
		}
		if f.ExplainedBy != "" {
			continue
		}
		var clear, unknown []string
		for _, id := range rl.ExplainedBy {
			switch e, ok := status[id]; {
			case !ok:
				unknown = append(unknown, id+" (not run)")
			case e.Status == result.RuleClear:
				clear = append(clear, id)
			case e.Status == result.RuleNotEvaluated:
				unknown = append(unknown, id)
			}
		}
		f.NoCause = "no cause found among the measured signals"
		if len(clear) > 0 {
			f.NoCause += "; clear: " + strings.Join(clear, ", ")
		}
		if len(unknown) > 0 {
			f.NoCause += "; not measured: " + strings.Join(unknown, ", ")
		}
	}
}

// hits are the rule's hits, worst first (by the threshold's direction; first found first among equals).
func (rule Rule) hits(r *result.Report) []Hit {
	var hits []Hit
	if rule.Match != nil {
		hits = rule.Match(r, rule)
	} else {
		hits = rule.Crossing(r)
	}
	lower := rule.When.Op == "<" || rule.When.Op == "<="
	sort.SliceStable(hits, func(i, j int) bool {
		if si, sj := rule.severity(hits[i]).Rank(), rule.severity(hits[j]).Rank(); si != sj {
			return si > sj
		}
		if lower {
			return hits[i].Value < hits[j].Value
		}
		return hits[i].Value > hits[j].Value
	})
	return hits
}

// absentMetrics says which metric a rule reads its result lists as absent (a series its source lacks, e.g. a
// Prometheus without node_exporter): such a rule is not evaluated, never clear.
func absentMetrics(r *result.Report, ms []Metric) string {
	for _, m := range ms {
		res := r.Result(m.Result)
		if res == nil {
			continue
		}
		for _, a := range res.Absent {
			if a.Metric == m.Name {
				return fmt.Sprintf("%s %s is absent: series %s (%s)", m.Result, m.Name, a.Series, a.Reason)
			}
		}
	}
	return ""
}

func missingInputs(r *result.Report, needs []string) string {
	for _, n := range needs {
		res := r.Result(n)
		if res == nil {
			return n + " was not run"
		}
		if !res.Status.Measured() {
			return fmt.Sprintf("%s was not measured (%s: %s)", n, res.Status, res.Reason)
		}
	}
	return ""
}

// finding is the rule's one finding: the worst hit's summary and evidence, and every hit as an item.
func (rule Rule) finding(hits []Hit) result.Finding {
	worst := hits[0]
	results := rule.Inputs()
	for _, e := range worst.Evidence {
		if e.Result != "" && !contains(results, e.Result) {
			results = append(results, e.Result)
		}
	}
	f := result.Finding{ID: rule.ID, Severity: rule.severity(worst), Title: rule.Title, Summary: rule.summary(worst), Evidence: worst.Evidence,
		Threshold: rule.Threshold(), Remediation: rule.Remediation, Cases: rule.Cases, Results: results, ItemCount: len(hits)}
	for i, h := range hits[:min(len(hits), result.MaxItems)] {
		s := f.Summary
		if i > 0 {
			s = rule.summary(h)
		}
		f.Items = append(f.Items, result.Item{Key: h.Key, Value: h.Value, Summary: s})
	}
	return f
}

func (rule Rule) summary(h Hit) string {
	vars := map[string]string{"threshold": result.FormatQuantity(rule.When.Value, rule.When.Unit)}
	for k, v := range h.Vars {
		vars[k] = v
	}
	t, err := template.New(rule.ID).Option("missingkey=error").Parse(rule.Summary)
	if err != nil {
		return rule.Summary
	}
	var b bytes.Buffer
	if err := t.Execute(&b, vars); err != nil {
		return rule.Summary
	}
	return b.String()
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Compare applies a threshold's operator.
func Compare(v float64, op string, threshold float64) bool {
	switch op {
	case ">":
		return v > threshold
	case ">=":
		return v >= threshold
	case "<":
		return v < threshold
	case "<=":
		return v <= threshold
	}
	return false
}

// EvidenceOf is a metric of result res as a finding's evidence.
func EvidenceOf(m result.Metric, res string) result.Evidence {
	return result.Evidence{Name: m.Name, Value: m.Value, Unit: m.Unit, Labels: m.Labels, Result: res, Bounds: m.Bounds}
}

// Reference renders the rule reference (Markdown), for docs/rules.md.
func Reference(rules []Rule) string {
	sorted := append([]Rule(nil), rules...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	var b strings.Builder
	b.WriteString("# Rule reference\n\nGenerated from the rules of the measurement packages and `internal/engine/check` by `go test ./internal/engine/check -update`; do not edit.\n\n")
	b.WriteString("A rule fires when its condition holds over the results it needs; when one of those was not measured it is\n\"not evaluated\" (listed in the report), never \"clear\". A rule that holds for several items (nodes, paths,\nresources, clients) is one finding: the worst item's summary and evidence, and every item listed, worst first.\n\n")
	for _, r := range sorted {
		fmt.Fprintf(&b, "## %s — %s\n\n", r.ID, r.Title)
		fmt.Fprintf(&b, "- severity: %s", r.Severity)
		if len(r.Cases) > 0 {
			fmt.Fprintf(&b, "; cases: %s", strings.Join(r.Cases, ", "))
		}
		fmt.Fprintf(&b, "\n- needs: %s\n", strings.Join(r.Inputs(), ", "))
		fmt.Fprintf(&b, "- threshold: `%s` of %s", r.When, r.When.Metric.Result)
		for _, c := range r.Also {
			fmt.Fprintf(&b, ", and `%s` of %s", c, c.Metric.Result)
		}
		fmt.Fprintf(&b, " — source: %s\n", r.Source)
		for _, a := range r.Alternatives {
			fmt.Fprintf(&b, "- or, where %s was not measured or did not fire: `%s` of %s", strings.Join(r.Inputs(), ", "), a.When, a.When.Metric.Result)
			for _, c := range a.Also {
				fmt.Fprintf(&b, ", and `%s` of %s", c, c.Metric.Result)
			}
			fmt.Fprintf(&b, " (needs %s)\n", strings.Join(a.Inputs(), ", "))
		}
		if len(r.ExplainedBy) > 0 {
			fmt.Fprintf(&b, "- explained by: %s (when it fires too, this finding is lowered to info and names it)\n", strings.Join(r.ExplainedBy, ", "))
		}
		if len(r.SameCause) > 0 {
			fmt.Fprintf(&b, "- same cause as: %s (when it fires too, this finding is folded into it as another source's view)\n", strings.Join(r.SameCause, ", "))
		}
		fmt.Fprintf(&b, "- finding: %s\n- remediation: %s\n\n", strings.TrimSpace(r.Summary), r.Remediation)
	}
	return b.String()
}

// Percent prints a ratio as a percentage ("80%").
func Percent(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }
