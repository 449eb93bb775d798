package podres

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares pods.resources to the registry (internal/engine/catalogue).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the real nodes whose kubelets' cAdvisor is read, and their MemoryPressure"},
		{Verbs: []string{"get"}, Resource: "nodes/proxy", Reason: "each kubelet's /metrics/cadvisor through the apiserver's node proxy"},
		{Verbs: []string{"list"}, Resource: "pods", Reason: "every pod's limits, readiness, restarts and last termination (OOMKilled)"},
		{Verbs: []string{"list"}, Resource: "events", Reason: "Unhealthy (failed probes) and SystemOOM Events"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
