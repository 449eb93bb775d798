package dnsbench

import (
	"time"

	"github.com/kubeslow/kubeslow/internal/load/dnsload"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// Spec declares `kubeslow bench dns-load` (dns.load), a bench with no rule of its own: its command builds it
// from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true,
	Kind: measure.Benchmark, // it creates pods and a Service, and loads the cluster DNS
	New: func(o measure.Options) measure.Measurement {
		return New(RampOptions(o.Image, dnsload.DefaultRamp(dnsload.Config{Timeout: 2 * time.Second}), nil))
	},
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes that carry a client pod"},
		{Verbs: []string{"get"}, Resource: "services", Reason: "the cluster DNS Service (kube-system/kube-dns)"},
		{Verbs: []string{"list"}, Resource: "pods", Reason: "the DNS pods behind it, loaded one by one"},
		{Verbs: []string{"list"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "DNS endpoints that no pod backs"},
		{Verbs: []string{"create", "delete", "get"}, Resource: "pods", Reason: "the client pods"},
		{Verbs: []string{"create"}, Resource: "pods/exec", Reason: "running the generator in the client pods"},
		{Verbs: []string{"create", "delete"}, Resource: "services", Reason: "a headless Service whose per-pod names are in the mix"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
