package dnsready

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.readiness to the registry (internal/engine/catalogue): the benchmark with the run's image.
var Spec = measure.Spec{
	Name: Name, Rules: Rules,
	Kind: measure.Benchmark, // it creates pods and a Service
	New: func(o measure.Options) measure.Measurement {
		dns := DefaultOptions()
		dns.Image = o.Image
		return New(dns)
	},
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "a real node for the client pod"},
		{Verbs: []string{"create", "delete", "get", "watch"}, Resource: "pods", Reason: "the client and peer pods"},
		{Verbs: []string{"create"}, Resource: "pods/exec", Reason: "running the resolver's wait in the client pod"},
		{Verbs: []string{"create", "delete"}, Resource: "services", Reason: "the headless Service behind the per-pod names"},
		{Verbs: []string{"watch"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "when each peer enters the Service's EndpointSlice"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }

// JobSpec declares `kubeslow bench job` (case A's whole-job start-up): a bench whose result is dns.readiness's,
// so Spec's rules read it (it declares none of its own, which would be the same rules twice).
var JobSpec = measure.Spec{
	Name: Name, Bench: true,
	Kind: measure.Benchmark, // it creates a Job and Services
	New:  func(measure.Options) measure.Measurement { return NewJob(DefaultJobOptions()) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes the members run on"},
		{Verbs: []string{"create", "delete", "patch"}, Group: "batch", Resource: "jobs", Reason: "the Indexed Job (patch: scaled to every member once its lead runs)"},
		{Verbs: []string{"watch"}, Resource: "pods", Reason: "when each member is Running and Ready"},
		{Verbs: []string{"get"}, Resource: "pods/log", Reason: "each member's report"},
		{Verbs: []string{"create", "delete"}, Resource: "services", Reason: "the headless Service and the warm-up Service"},
		{Verbs: []string{"watch"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "when each member enters the Service's EndpointSlice"},
	},
}

// Spec implements measure.Declared.
func (*JobMeasurement) Spec() measure.Spec { return JobSpec }
