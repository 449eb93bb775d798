package cpapi

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.api to the registry (internal/measure/all); the rules that read it combine it
// with other results (internal/engine/check).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly,
	New:         func(measure.Options) measure.Measurement { return New() },
	Permissions: (*Measurement)(nil).Permissions(),
}
