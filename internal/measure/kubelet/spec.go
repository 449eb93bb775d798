package kubelet

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.kubelet to the registry (internal/engine/catalogue); its past-window twin is promwindow's
// kubelet measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(measure.Options) measure.Measurement { return New() },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes whose kubelets are read"},
		{Verbs: []string{"get"}, Resource: "nodes/proxy", Reason: "each kubelet's /configz and /metrics through the apiserver's node proxy"},
		{Verbs: []string{"list"}, Resource: "events", Reason: "the kubelets' Pulled events: each pull's time and its wait for the puller"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
