package promrules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// SLO is a latency objective as the fraction of events slower than a threshold, from a histogram: its error
// budget is 1 - Objective.
type SLO struct {
	// ID is the alerts' id label; Rule the kubeslow rule the SLO stands for (its threshold, causes, runbook).
	ID, Rule, Title string
	// Family is the histogram (without _bucket/_count), Filter its matchers, LE its threshold in seconds.
	Family, Filter string
	LE             float64
	Objective      float64
	Source         string
	Remediation    string
}

// SLOs are the two SLOs of SIG Scalability kubeslow measures: API call latency (single-object and mutating
// calls, KS-API-LATENCY's threshold) and pod start-up latency (KS-POD-SLO's threshold), each at p99 (99% of
// events within the threshold). A threshold is read from its rule when the rule set has it.
func SLOs(rules []rule.Rule) []SLO {
	slos := []SLO{
		{ID: "KS-SLO-API-LATENCY", Rule: "KS-API-LATENCY", Title: "API call latency SLO error budget burning",
			Family: "apiserver_request_sli_duration_seconds",
			Filter: apislo.SingleObjectMatchers, LE: 1, Objective: 0.99,
			Source: "Kubernetes SIG Scalability API call latency SLO: p99 of mutating and single-object calls <= 1 s"},
		{ID: "KS-SLO-POD-STARTUP", Rule: "KS-POD-SLO", Title: "Pod start-up latency SLO error budget burning",
			Family: "kubelet_pod_start_sli_duration_seconds", LE: 5, Objective: 0.99,
			Source: "Kubernetes SIG Scalability pod start-up latency SLO: p99 <= 5 s (stateless pods, image pulls excluded)"},
	}
	for i := range slos {
		for _, r := range rules {
			if r.ID == slos[i].Rule {
				slos[i].LE, slos[i].Source, slos[i].Remediation = r.When.Value, r.Source, r.Remediation
			}
		}
	}
	return slos
}

// Window is one multi-window burn-rate alert: it fires when the error ratio over both Long and Short exceeds
// Factor times the error budget (The Site Reliability Workbook, "Alerting on SLOs", table 5-8, as
// kubernetes-mixin's KubeAPIErrorBudgetBurn).
type Window struct {
	Long, Short, For string
	Factor           float64
	Severity, Kind   string
}

// Windows are the burn-rate alerts: 14.4× over 1h/5m and 6× over 6h/30m page (2% and 5% of a 30-day budget
// spent), 1× over 3d/6h is a ticket (10% spent).
var Windows = []Window{
	{Long: "1h", Short: "5m", For: "2m", Factor: 14.4, Severity: "critical", Kind: "page"},
	{Long: "6h", Short: "30m", For: "15m", Factor: 6, Severity: "critical", Kind: "page"},
	{Long: "3d", Short: "6h", For: "3h", Factor: 1, Severity: "warning", Kind: "ticket"},
}

// Record is the name of the recording rule of the SLO's error ratio over window w.
func (s SLO) Record(w string) string {
	return fmt.Sprintf("kubeslow:%s:error_ratio_rate%s", strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.ID, "KS-SLO-"), "-", "_")), w)
}

// ErrorRatio is the fraction of the SLO's events slower than LE over window w: (count - bucket{le}) / count.
func (s SLO) ErrorRatio(w string) string {
	sel := func(suffix, extra string) string {
		m := s.Filter
		if extra != "" {
			m = strings.TrimPrefix(m+","+extra, ",")
		}
		if m == "" {
			return s.Family + "_" + suffix
		}
		return fmt.Sprintf("%s_%s{%s}", s.Family, suffix, m)
	}
	le := number(s.LE)
	if !strings.Contains(le, ".") {
		le += `(\\.0)?` // Prometheus 3 writes an integer le as "1.0"
	}
	total := fmt.Sprintf("sum(rate(%s[%s]))", sel("count", ""), w)
	return fmt.Sprintf("(\n  %s\n  -\n  sum(rate(%s[%s]))\n)\n/\n%s", total, sel("bucket", fmt.Sprintf(`le=~"%s"`, le)), w, total)
}

func sloGroup(rules []rule.Rule, runbook string) Group {
	g := Group{Name: GroupSLO}
	byID := map[string]rule.Rule{}
	for _, r := range rules {
		byID[r.ID] = r
	}
	for _, s := range SLOs(rules) {
		var ws []string
		for _, w := range Windows {
			for _, x := range []string{w.Short, w.Long} {
				if !contains(ws, x) {
					ws = append(ws, x)
				}
			}
		}
		for _, w := range ws {
			g.Rules = append(g.Rules, Rule{Record: s.Record(w), Expr: s.ErrorRatio(w)})
		}
		budget := 1 - s.Objective
		for _, w := range Windows {
			thr := fmt.Sprintf("(%s * %s)", number(w.Factor), number(roundBudget(budget)))
			r := byID[s.Rule]
			l := labels(s.ID, w.Severity, r.Cases)
			l["long"], l["short"], l["burn"], l["slo_alert"] = w.Long, w.Short, number(w.Factor), w.Kind
			g.Rules = append(g.Rules, Rule{
				Alert: AlertName(s.ID) + "_BURN",
				Expr:  fmt.Sprintf("%s > %s\nand\n%s > %s", s.Record(w.Long), thr, s.Record(w.Short), thr),
				For:   w.For, Labels: l,
				Annotations: map[string]string{
					"summary": s.Title,
					"description": fmt.Sprintf("{{ $value | humanizePercentage }} of the events were slower than %s s over the last %s, and above the same line over %s: the error budget of a %s%% objective burns %s× as fast as it may",
						number(s.LE), w.Long, w.Short, number(s.Objective*100), number(w.Factor)),
					"threshold":        fmt.Sprintf("error ratio > %s × %s over %s and over %s", number(w.Factor), number(roundBudget(budget)), w.Long, w.Short),
					"threshold_source": s.Source + "; burn rates from The Site Reliability Workbook, Alerting on SLOs (kubernetes-mixin)",
					"remediation":      s.Remediation,
					"runbook_url":      runbook + "#" + Anchor(s.Rule, r.Title),
				},
			})
		}
	}
	return g
}

// roundBudget removes float noise (1 - 0.99 = 0.010000000000000009).
func roundBudget(b float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(b, 'f', 6, 64), 64)
	return v
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
