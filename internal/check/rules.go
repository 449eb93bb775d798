// Package check is the findings engine's set of rules: it collects the rules each measurement package
// declares (internal/rule is what a rule is and how it is evaluated) from the registries, and holds the
// rules that combine several measurements.
package check

import (
	"github.com/kubeslow/kubeslow/internal/measure/all"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// Rules returns every rule of the findings engine: those of the measurements `run` registers, those of the
// measurements only `kubeslow bench` runs, and the combined ones.
func Rules() []rule.Rule {
	var rules []rule.Rule
	for _, m := range all.Registry(all.Options{}).All() {
		rules = append(rules, rule.Of(m)...)
	}
	for _, rs := range all.BenchRules() {
		rules = append(rules, rs()...)
	}
	return linkCauses(append(rules, CombinedRules()...))
}
