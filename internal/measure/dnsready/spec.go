package dnsready

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.readiness to the registry (internal/measure/all): the benchmark with the run's image.
var Spec = measure.Spec{
	Name: Name, Kind: measure.Benchmark, Rules: Rules,
	New: func(o measure.Options) measure.Measurement {
		dns := DefaultOptions()
		dns.Image = o.Image
		return New(dns)
	},
	Permissions: (*Measurement)(nil).Permissions(),
}

// JobSpec declares `kubeslow bench job` (case A's whole-job start-up): a bench whose result is dns.readiness's,
// so Spec's rules read it (it declares none of its own, which would be the same rules twice).
var JobSpec = measure.Spec{
	Name: Name, Bench: true, Kind: measure.Benchmark,
	New:         func(measure.Options) measure.Measurement { return NewJob(DefaultJobOptions()) },
	Permissions: (*JobMeasurement)(nil).Permissions(),
}
