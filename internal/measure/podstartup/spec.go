package podstartup

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares pods.startup to the registry (internal/measure/all): the benchmark with the run's pod count,
// or, with Options.PodsWatch, the passive measurement of the pods others create (read-only, with fewer
// permissions: its own Kind and Permissions say so to the run).
var Spec = measure.Spec{
	Name: Name, Kind: measure.Benchmark, Rules: Rules,
	New: func(o measure.Options) measure.Measurement {
		if o.PodsWatch != nil {
			return NewPassive(PassiveOptions(*o.PodsWatch))
		}
		pods := DefaultOptions()
		pods.Count = o.Pods
		return New(pods)
	},
	Permissions: (*Measurement)(nil).Permissions(),
}
