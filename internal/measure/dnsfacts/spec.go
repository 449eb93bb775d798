package dnsfacts

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.facts to the registry (internal/measure/all); its past-window twin is promwindow's DNS
// measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: (*Measurement)(nil).Permissions(),
}
