package throttle

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares system.throttling to the registry (internal/measure/all); its past-window twin is promwindow's
// throttling measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: (*Measurement)(nil).Permissions(),
}
