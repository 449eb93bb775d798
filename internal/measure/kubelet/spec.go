package kubelet

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.kubelet to the registry (internal/measure/all); its past-window twin is promwindow's
// kubelet measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(measure.Options) measure.Measurement { return New() },
	Permissions: (*Measurement)(nil).Permissions(),
}
