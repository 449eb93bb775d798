package nodes

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.health to the registry (internal/engine/catalogue).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(measure.Options) measure.Measurement { return New() },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "node conditions, readiness and heartbeats"},
		{Verbs: []string{"list"}, Resource: "events", Reason: "node events (NotReady flaps, pressure)"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
