package dnsbench

import (
	"time"

	"github.com/kubeslow/kubeslow/internal/load/dnsload"
	"github.com/kubeslow/kubeslow/internal/measure"
)

// Spec declares `kubeslow bench dns-load` (dns.load), a bench with no rule of its own: its command builds it
// from its flags.
var Spec = measure.Spec{
	Name: Name, Bench: true, Kind: measure.Benchmark,
	New: func(o measure.Options) measure.Measurement {
		return New(RampOptions(o.Image, dnsload.DefaultRamp(dnsload.Config{Timeout: 2 * time.Second}), nil))
	},
	Permissions: (*Measurement)(nil).Permissions(),
}
