package cpusage

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.usage to the registry (internal/engine/catalogue); the rules that read it combine it
// with other results (internal/engine/check).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly,
	New: func(o measure.Options) measure.Measurement { return New(o.Window, o.EtcdEndpoint) },
	Permissions: []measure.Permission{
		{Verbs: []string{"get"}, NonResourceURL: "/metrics", Reason: "kube-apiserver's process CPU and memory, APF seats, inflight requests"},
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the control-plane nodes' CPU capacity, the cores kube-apiserver and etcd may use",
			Optional: true}, // without it the cores are unknown, and said so
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
