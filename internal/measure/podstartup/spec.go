package podstartup

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares pods.startup to the registry (internal/engine/catalogue): the benchmark with the run's pod count,
// or, with Options.PodsWatch, the passive measurement of the pods others create, which passiveSpec declares.
// That is the one measurement whose Kind and Permissions depend on the run's options, and New is the one place
// that decides: the instance it builds returns its own Spec (measure.Declared), so a run preflights and orders
// what it will actually do (the passive one is read-only, with fewer permissions), while `kubeslow rbac` grants
// this Spec's, the benchmark's, the most pods.startup may need.
var Spec = measure.Spec{
	Name: Name, Rules: Rules,
	Kind: measure.Benchmark, // it creates pods
	New: func(o measure.Options) measure.Measurement {
		if o.PodsWatch != nil {
			return passiveSpec.New(o)
		}
		pods := DefaultOptions()
		pods.Count = o.Pods
		return New(pods)
	},
	Permissions: []measure.Permission{
		{Verbs: []string{"create", "delete", "list", "watch"}, Resource: "pods", Reason: "the benchmark's pods (--kind pods), watched through their phases; the nodes' pods counted to size the load"},
		{Verbs: []string{"list", "watch"}, Resource: "events", Reason: "the pods' scheduling and pull events"},
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "where the pods may go and how many fit (allocatable pods, taints, images)"},
		{Verbs: []string{"create", "delete"}, Group: "apps", Resource: "deployments", Reason: "--kind deployment"},
		{Verbs: []string{"create", "delete"}, Group: "batch", Resource: "jobs", Reason: "--kind job"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }

// passiveSpec declares pods.startup's passive measurement (Options.PodsWatch; `kubeslow bench pods --passive`
// builds it from its own flags). It is not in internal/engine/catalogue: Spec.New builds it, and its result is
// pods.startup's, which Spec's rules read (it declares none of its own, which would be the same rules twice).
var passiveSpec = measure.Spec{
	Name: Name,
	Kind: measure.ReadOnly, // it creates nothing
	New: func(o measure.Options) measure.Measurement {
		po := DefaultPassiveOptions()
		if o.PodsWatch != nil {
			po = PassiveOptions(*o.PodsWatch)
		}
		return NewPassive(po)
	},
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "pods", Reason: "the observed pods, watched through their phases"},
		{Verbs: []string{"list", "watch"}, Resource: "events", Reason: "the pods' scheduling and pull events"},
	},
}

// Spec implements measure.Declared.
func (*Passive) Spec() measure.Spec { return passiveSpec }
