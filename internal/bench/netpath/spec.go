package netpath

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares `kubeslow bench net` (net.paths), a bench: its command builds it from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true, Rules: CatalogueRules,
	Kind: measure.Benchmark, // it creates pods and loads the network
	New:  func(measure.Options) measure.Measurement { return New(DefaultOptions()) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "two real nodes for the agents"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the agent pods (host and pod network)"},
		{Verbs: []string{"create", "delete"}, Resource: "services", Reason: "the NodePort Service of the pod->Service path"},
		{Verbs: []string{"list"}, Group: "networking.k8s.io", Resource: "ingressclasses", Reason: "the ingress controller of the ingress paths"},
		{Verbs: []string{"list"}, Resource: "services", Reason: "the ingress controller's Service (its node port or load balancer)"},
		{Verbs: []string{"list"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "the node the ingress controller runs on"},
		{Verbs: []string{"create", "delete"}, Group: "networking.k8s.io", Resource: "ingresses", Reason: "the Ingress of the ingress paths"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }

// MTUSpec declares `kubeslow bench mtu` (net.mtu), a bench; its rule (KS-NET-MTU over net.mtu) is among Spec's.
var MTUSpec = measure.Spec{
	Name: MTUName, Bench: true,
	Kind: measure.Benchmark, // it creates pods (a probe, not a load)
	New:  func(measure.Options) measure.Measurement { return NewMTU(MTUOptions{}) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "two real nodes for the agents"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the agent pods (host and pod network) that read the links and send the probes"},
	},
}

// Spec implements measure.Declared.
func (*MTUMeasurement) Spec() measure.Spec { return MTUSpec }
