// Package check is the findings engine: rules as data (stable id, title, severity, threshold and its source,
// evidence template, remediation, case), evaluated over a report's results. Rules may combine signals from
// several measurements. A rule whose inputs were not measured is "not evaluated", never "clear".
package check

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Rule is one named cause.
type Rule struct {
	ID       string
	Title    string
	Severity result.Severity
	Cases    []string
	// Threshold is the line and where it comes from.
	Threshold result.Threshold
	// Needs are the results the rule reads; if any was not measured, the rule is not evaluated.
	Needs []string
	// Summary is a text/template over a Hit's Vars (and .Threshold), e.g. "etcd WAL fsync p99 {{.p99}} > {{.threshold}}".
	Summary     string
	Remediation string
	// Match finds the rule's hits in the report (pure). Each hit becomes one finding.
	Match func(r *result.Report) []Hit
}

// Hit is one occurrence of a rule's condition: the numbers it rests on and the values the summary names.
type Hit struct {
	Evidence []result.Evidence
	Vars     map[string]string
}

// Statuses of a rule after evaluation.
const (
	Fired        = "fired"
	Clear        = "clear"
	NotEvaluated = "not-evaluated"
)

// Evaluate runs every rule over the report and returns the findings and each rule's evaluation.
func Evaluate(r *result.Report, rules []Rule) ([]result.Finding, []result.RuleEvaluation) {
	var findings []result.Finding
	var evals []result.RuleEvaluation
	for _, rule := range rules {
		if missing := missingInputs(r, rule.Needs); missing != "" {
			evals = append(evals, result.RuleEvaluation{ID: rule.ID, Status: NotEvaluated, Reason: missing})
			continue
		}
		hits := rule.Match(r)
		if len(hits) == 0 {
			evals = append(evals, result.RuleEvaluation{ID: rule.ID, Status: Clear})
			continue
		}
		evals = append(evals, result.RuleEvaluation{ID: rule.ID, Status: Fired})
		for _, h := range hits {
			findings = append(findings, rule.finding(h))
		}
	}
	return findings, evals
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

func (rule Rule) finding(h Hit) result.Finding {
	vars := map[string]string{"threshold": report.FormatValue(rule.Threshold.Value) + unitSuffix(rule.Threshold.Unit)}
	for k, v := range h.Vars {
		vars[k] = v
	}
	summary := rule.Summary
	if t, err := template.New(rule.ID).Option("missingkey=error").Parse(rule.Summary); err == nil {
		var b bytes.Buffer
		if err := t.Execute(&b, vars); err == nil {
			summary = b.String()
		}
	}
	results := append([]string(nil), rule.Needs...)
	for _, e := range h.Evidence {
		if e.Result != "" && !contains(results, e.Result) {
			results = append(results, e.Result)
		}
	}
	return result.Finding{ID: rule.ID, Severity: rule.Severity, Title: rule.Title, Summary: summary, Evidence: h.Evidence,
		Threshold: rule.Threshold, Remediation: rule.Remediation, Cases: rule.Cases, Results: results}
}

func unitSuffix(u string) string {
	switch u {
	case "", "count", "ratio":
		return ""
	case "seconds":
		return " s"
	case "per_minute":
		return "/min"
	case "bytes_per_second":
		return " B/s"
	}
	return " " + u
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

// MetricAbove returns a Match that fires for every metric named metric in result res whose value crosses
// the rule's threshold; labels named in vars become summary variables (plus "value").
func MetricAbove(res, metric, op string, threshold float64, unit string) func(*result.Report) []Hit {
	return func(r *result.Report) []Hit {
		rr := r.Result(res)
		if rr == nil {
			return nil
		}
		var hits []Hit
		for _, m := range rr.Metrics {
			if m.Name != metric || !Compare(m.Value, op, threshold) {
				continue
			}
			vars := map[string]string{"value": report.FormatValue(m.Value) + unitSuffix(unit), "labels": report.FormatLabels(m.Labels)}
			for k, v := range m.Labels {
				vars[k] = v
			}
			hits = append(hits, Hit{Evidence: []result.Evidence{evidenceOf(m, res)}, Vars: vars})
		}
		return hits
	}
}

// evidenceOf is a metric of result res as a finding's evidence.
func evidenceOf(m result.Metric, res string) result.Evidence {
	return result.Evidence{Name: m.Name, Value: m.Value, Unit: m.Unit, Labels: m.Labels, Result: res}
}

// Reference renders the rule reference (Markdown), for docs/rules.md.
func Reference(rules []Rule) string {
	sorted := append([]Rule(nil), rules...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	var b strings.Builder
	b.WriteString("# Rule reference\n\nGenerated from the rules in `internal/check` by `go test ./internal/check -update`; do not edit.\n\n")
	b.WriteString("A rule fires when its condition holds over the results it needs; when one of those was not measured it is\n\"not evaluated\" (listed in the report), never \"clear\".\n\n")
	for _, r := range sorted {
		fmt.Fprintf(&b, "## %s — %s\n\n", r.ID, r.Title)
		fmt.Fprintf(&b, "- severity: %s", r.Severity)
		if len(r.Cases) > 0 {
			fmt.Fprintf(&b, "; cases: %s", strings.Join(r.Cases, ", "))
		}
		fmt.Fprintf(&b, "\n- needs: %s\n", strings.Join(r.Needs, ", "))
		fmt.Fprintf(&b, "- threshold: %s %s %s — source: %s\n", r.Threshold.Op, report.FormatValue(r.Threshold.Value), r.Threshold.Unit, r.Threshold.Source)
		fmt.Fprintf(&b, "- finding: %s\n- remediation: %s\n\n", strings.TrimSpace(r.Summary), r.Remediation)
	}
	return b.String()
}
