package dnsbench

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares `kubeslow bench dns-load` (dns.load), a bench with no rule of its own: its command builds it
// from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true, Kind: measure.Benchmark,
	New:         func(measure.Options) measure.Measurement { return New(DefaultOptions()) },
	Permissions: (*Measurement)(nil).Permissions(),
}
