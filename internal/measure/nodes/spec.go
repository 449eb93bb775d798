package nodes

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.health to the registry (internal/measure/all).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(measure.Options) measure.Measurement { return New() },
	Permissions: (*Measurement)(nil).Permissions(),
}
