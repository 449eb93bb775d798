// Package promrules turns kubeslow's rules into Prometheus rule groups (pure: rules in, rule groups out): each
// rule whose every condition Prometheus holds becomes an alerting rule on the same threshold, the SLOs become
// multi-window burn-rate alerts, and the rules' causal links (ExplainedBy) become Alertmanager inhibit rules,
// so that a symptom is silenced while its cause fires. `kubeslow rules` prints them (docs/alerts.md).
package promrules

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/rule"
)

// RuleFile is a Prometheus rule file (rule_files:) and a PrometheusRule's spec.
type RuleFile struct {
	Groups []Group `json:"groups"`
}

// Group is a rule group.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting rule (Alert) or a recording rule (Record).
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Inhibit is an Alertmanager inhibit rule: alerts matching TargetMatchers are muted while an alert matching
// SourceMatchers fires with the same Equal labels.
type Inhibit struct {
	SourceMatchers []string `json:"source_matchers"`
	TargetMatchers []string `json:"target_matchers"`
	Equal          []string `json:"equal,omitempty"`
}

// Skipped is a rule that is not exported and why.
type Skipped struct {
	ID, Reason string
}

// Options tune the output.
type Options struct {
	// For is the alerts' `for:` (0: 5m).
	For time.Duration
	// RunbookBase is the URL of docs/rules.md; each alert's runbook_url is its anchor there.
	RunbookBase string
	// Rate is the rate window of the rule alerts' expressions ("": Rate, 5m); the SLO alerts keep their own.
	Rate time.Duration
}

// DefaultRunbookBase is docs/rules.md on the project's default branch.
const DefaultRunbookBase = "https://github.com/kubeslow/kubeslow/blob/main/docs/rules.md"

// Output is everything Build derives from the rules.
type Output struct {
	File RuleFile
	// Exported are the IDs of the rules exported as alerts (the SLO alerts' included), in order.
	Exported []string
	Skipped  []Skipped
	Inhibit  []Inhibit
}

// Group names.
const (
	GroupRules = "kubeslow.rules"
	GroupSLO   = "kubeslow.slo"
)

// Build converts rules (check.Rules()) with the expressions of Exprs.
func Build(rules []rule.Rule, o Options) Output {
	rate := ""
	if o.Rate > 0 {
		rate = promDuration(o.Rate)
	}
	return BuildWith(rules, Exprs(rate), o)
}

// BuildWith is Build over the given expressions.
func BuildWith(rules []rule.Rule, exprs map[rule.Metric]Expr, o Options) Output {
	if o.For <= 0 {
		o.For = 5 * time.Minute
	}
	if o.RunbookBase == "" {
		o.RunbookBase = DefaultRunbookBase
	}
	held := map[string]bool{}
	for m := range exprs {
		held[m.Result] = true
	}
	var out Output
	alerts := Group{Name: GroupRules}
	for _, r := range rules {
		expr, reason := alertExpr(r, exprs, held)
		if reason != "" {
			out.Skipped = append(out.Skipped, Skipped{ID: r.ID, Reason: reason})
			continue
		}
		alerts.Rules = append(alerts.Rules, Rule{
			Alert:       AlertName(r.ID),
			Expr:        expr,
			For:         promDuration(o.For),
			Labels:      labels(r.ID, string(r.Severity), r.Cases),
			Annotations: annotations(r, exprs[r.When.Metric].By, o.RunbookBase),
		})
		out.Exported = append(out.Exported, r.ID)
	}
	slo := sloGroup(rules, o.RunbookBase)
	for _, s := range SLOs(rules) {
		out.Exported = append(out.Exported, s.ID)
	}
	out.File.Groups = []Group{alerts, slo}
	out.Inhibit = inhibits(rules, out.Exported)
	return out
}

// alertExpr is the rule's alert expression, or why it has none.
func alertExpr(r rule.Rule, exprs map[rule.Metric]Expr, held map[string]bool) (string, string) {
	conds := append([]rule.Condition{r.When}, r.Also...)
	for _, c := range conds {
		if _, ok := exprs[c.Metric]; !ok {
			return "", fmt.Sprintf("%s of %s: %s", c.Metric.Name, c.Metric.Result, whyNot(c.Metric.Result, held))
		}
	}
	for _, n := range r.Needs {
		if !held[n] {
			return "", fmt.Sprintf("needs %s: %s", n, whyNot(n, held))
		}
	}
	for _, m := range r.Reads {
		if !held[m.Result] {
			return "", fmt.Sprintf("reads %s: %s", m, whyNot(m.Result, held))
		}
	}
	first := exprs[r.When.Metric]
	q := fmt.Sprintf("(%s) %s %s", first.Query, r.When.Op, number(r.When.Value))
	for _, c := range r.Also {
		e := exprs[c.Metric]
		if !slices.Equal(e.By, first.By) {
			return "", fmt.Sprintf("its conditions are over different items (%s by %v, %s by %v)", r.When.Metric.Name, first.By, c.Metric.Name, e.By)
		}
		q += fmt.Sprintf("\nand on (%s)\n(%s) %s %s", strings.Join(e.By, ", "), e.Query, c.Op, number(c.Value))
	}
	return q, ""
}

func whyNot(result string, held map[string]bool) string {
	if w := notHeld[result]; w != "" {
		return w
	}
	if held[result] {
		return "no PromQL expression for this metric (`run --prometheus` does not compute it from one query)"
	}
	return "no PromQL expression (`run --prometheus` does not read " + result + ")"
}

func labels(id, severity string, cases []string) map[string]string {
	l := map[string]string{"id": id, "severity": severity}
	if len(cases) > 0 {
		l["case"] = strings.Join(cases, ",")
	}
	return l
}

func annotations(r rule.Rule, by []string, runbook string) map[string]string {
	thr := r.When.String()
	for _, c := range r.Also {
		thr += " and " + c.String()
	}
	item := make([]string, len(by))
	for i, l := range by {
		item[i] = fmt.Sprintf("%s={{ $labels.%s }}", l, l)
	}
	desc := fmt.Sprintf("%s %s: {{ $value | humanize }} %s %s %s", r.When.Metric.Result, r.When.Metric.Name, r.When.Op, number(r.When.Value), r.When.Unit)
	if len(item) > 0 {
		desc += " on " + strings.Join(item, " ")
	}
	return map[string]string{
		"summary":          r.Title,
		"description":      desc,
		"threshold":        thr,
		"threshold_source": r.Source,
		"remediation":      r.Remediation,
		"runbook_url":      runbook + "#" + Anchor(r.ID, r.Title),
	}
}

// AlertName is a rule ID as an alert name (KS-API-LATENCY → KS_API_LATENCY).
func AlertName(id string) string { return strings.ReplaceAll(id, "-", "_") }

var notSlug = regexp.MustCompile(`[^a-z0-9 _-]`)

// Anchor is the GitHub anchor of the rule's heading in docs/rules.md ("## ID — Title").
func Anchor(id, title string) string {
	h := strings.ToLower(id + " — " + title)
	return strings.ReplaceAll(notSlug.ReplaceAllString(h, ""), " ", "-")
}

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// promDuration is d in Prometheus' duration syntax (5m, 1h30m).
func promDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// inhibits are the inhibit rules of the causal links: an exported symptom is muted while one of its exported
// causes fires (matched on id; equal on cluster, which is equal when neither alert has it).
func inhibits(rules []rule.Rule, exported []string) []Inhibit {
	isExported := map[string]bool{}
	for _, id := range exported {
		isExported[id] = true
	}
	causes := map[string][]string{}
	for _, r := range rules {
		causes[r.ID] = r.ExplainedBy
	}
	for _, s := range SLOs(rules) {
		causes[s.ID] = causes[s.Rule]
	}
	var out []Inhibit
	for _, id := range exported {
		var src []string
		for _, c := range causes[id] {
			if isExported[c] && c != id && !slices.Contains(src, c) {
				src = append(src, c)
			}
		}
		if len(src) == 0 {
			continue
		}
		sort.Strings(src)
		out = append(out, Inhibit{
			SourceMatchers: []string{fmt.Sprintf(`id=~"%s"`, strings.Join(src, "|"))},
			TargetMatchers: []string{fmt.Sprintf(`id="%s"`, id)},
			Equal:          []string{"cluster"},
		})
	}
	return out
}
