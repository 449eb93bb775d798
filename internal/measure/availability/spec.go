package availability

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.availability to the registry (internal/engine/catalogue).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{{Verbs: []string{"get"}, NonResourceURL: "/readyz", Reason: "the apiserver's readiness and its failing checks (etcd)"}},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
