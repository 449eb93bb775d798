package throttle

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares system.throttling to the registry (internal/engine/catalogue); its past-window twin is promwindow's
// throttling measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes whose kubelets' cAdvisor is read"},
		{Verbs: []string{"get"}, Resource: "nodes/proxy", Reason: "each kubelet's /metrics/cadvisor through the apiserver's node proxy"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
