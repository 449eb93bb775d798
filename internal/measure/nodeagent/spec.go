package nodeagent

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares nodes.agent to the registry (internal/measure/all): the node sweep with the run's image; its
// past-window twin is promwindow's agent measurement (node_exporter).
var Spec = measure.Spec{
	Name: Name, Kind: measure.Benchmark, Rules: Rules,
	New:         func(o measure.Options) measure.Measurement { return New(DefaultOptions(o.Image)) },
	Permissions: (*Measurement)(nil).Permissions(),
}
