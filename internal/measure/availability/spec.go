package availability

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.availability to the registry (internal/measure/all).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: (*Measurement)(nil).Permissions(),
}
