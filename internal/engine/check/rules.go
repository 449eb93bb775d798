// Package check is the findings engine's set of rules: it collects the rules each measurement declares in its
// Spec (internal/rule is what a rule is and how it is evaluated) from internal/engine/catalogue, and holds the
// rules that combine several measurements.
package check

import (
	"github.com/kubeslow/kubeslow/internal/engine/catalogue"
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/promwindow/timeline"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// Rules returns every rule of the findings engine: those of every measurement (catalogue.Specs, `run`'s and the
// benches'), the past-window path's timeline (KS-PROM-ORDER) and the combined ones.
func Rules() []rule.Rule { return RulesOf(catalogue.Specs()) }

// RulesOf returns the findings engine's rules with specs as the measurements.
func RulesOf(specs []measure.Spec) []rule.Rule {
	rules := measure.RulesOf(specs)
	rules = append(rules, timeline.Rules()...)
	return linkCauses(append(rules, CombinedRules()...))
}
