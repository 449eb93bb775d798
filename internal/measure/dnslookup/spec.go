package dnslookup

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.lookups to the registry (internal/engine/catalogue): the benchmark with the run's image.
var Spec = measure.Spec{
	Name: Name, Rules: Rules,
	Kind: measure.Benchmark, // it creates pods
	New: func(o measure.Options) measure.Measurement {
		lookups := DefaultOptions()
		lookups.Image = o.Image
		return New(lookups)
	},
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes that carry a client pod"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the client pods"},
		{Verbs: []string{"create"}, Resource: "pods/exec", Reason: "running the lookups in the client pods"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
