package apislo

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares api.responsiveness to the registry (internal/engine/catalogue); its past-window twin is
// promwindow's API measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{{Verbs: []string{"get"}, NonResourceURL: "/metrics", Reason: "the apiserver's own metrics: latency, response codes, APF"}},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
