package diskagent

import (
	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/disk"
)

// Spec declares `kubeslow bench disk --node` (disk.fdatasync in an agent pod), a bench: its command builds it
// from its flags. Its rules are the local bench's (internal/measure/disk), on the same result.
var Spec = measure.Spec{
	Name: disk.BenchName, Bench: true, Kind: measure.Benchmark, Rules: disk.Rules,
	New:         func(measure.Options) measure.Measurement { return &Bench{Recipe: disk.EtcdRecipe} },
	Permissions: (*Bench)(nil).Permissions(),
}
