package dnslookup

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.lookups to the registry (internal/measure/all): the benchmark with the run's image.
var Spec = measure.Spec{
	Name: Name, Kind: measure.Benchmark, Rules: Rules,
	New: func(o measure.Options) measure.Measurement {
		lookups := DefaultOptions()
		lookups.Image = o.Image
		return New(lookups)
	},
	Permissions: (*Measurement)(nil).Permissions(),
}
