package netpath

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares `kubeslow bench net` (net.paths), a bench: its command builds it from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true, Kind: measure.Benchmark, Rules: CatalogueRules,
	New:         func(measure.Options) measure.Measurement { return New(DefaultOptions()) },
	Permissions: (*Measurement)(nil).Permissions(),
}

// MTUSpec declares `kubeslow bench mtu` (net.mtu), a bench; its rule (KS-NET-MTU over net.mtu) is among Spec's.
var MTUSpec = measure.Spec{
	Name: MTUName, Bench: true, Kind: measure.Benchmark,
	New:         func(measure.Options) measure.Measurement { return NewMTU(MTUOptions{}) },
	Permissions: (*MTUMeasurement)(nil).Permissions(),
}
