package passive

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares pods.explained to the registry (internal/engine/catalogue): read-only, over the run's window.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly,
	New: func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list"}, Resource: "pods", Reason: "the pods that started in the window (one paginated LIST of all namespaces)"},
		{Verbs: []string{"get"}, Resource: "pods", Reason: "each of the slowest pods, as kubeslow explain reads it"},
		{Verbs: []string{"list"}, Resource: "events", Reason: "the slowest pods' Events (scheduling, sandbox, pulls, probes)"},
		{Verbs: []string{"list"}, Resource: "services", Reason: "the Services selecting a slow pod (its endpoints step)"},
		{Verbs: []string{"list"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "when a slow pod's endpoint became ready"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
