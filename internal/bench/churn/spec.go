package churn

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares `kubeslow bench churn` (pods.churn), a bench: its command builds it from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true, Rules: Rules,
	Kind: measure.Benchmark, // it creates and deletes pods in a loop
	New:  func(measure.Options) measure.Measurement { return New(DefaultOptions(), nil) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes that take churn's pods"},
		{Verbs: []string{"list"}, Resource: "pods", Reason: "the pods already on those nodes, to size the load to their free slots"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the churned pods, created and deleted in a loop (get: their deletion)"},
		{Verbs: []string{"get"}, Resource: "pods/log", Reason: "the disk sampler's samples (agent disk-sample) on each churned node",
			Optional: true}, // only with an agent image; without it the disks are not sampled
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
