package cpusage

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.usage to the registry (internal/measure/all); the rules that read it combine it
// with other results (internal/engine/check).
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly,
	New:         func(o measure.Options) measure.Measurement { return New(o.Window, o.EtcdEndpoint) },
	Permissions: (*Measurement)(nil).Permissions(),
}
