package churn

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeslow/kubeslow/internal/measure/podstartup"
)

// DefaultStopAfterKnee is how many starts past a knee confirm it: PELT has placed the change and the
// median after it rests on that many points, so more starts change nothing but the node's load.
const DefaultStopAfterKnee = 20

// DefaultOptions are `bench churn`'s defaults: 500 pods one after another (as `docker run` in a loop) for at
// most 15 minutes, sampled every second.
func DefaultOptions() Options {
	return Options{Count: 500, Duration: 15 * time.Minute, Concurrency: 1, PodTimeout: 3 * time.Minute,
		SampleInterval: time.Second, RuntimeDir: DefaultRuntimeDir, StopAfterKnee: DefaultStopAfterKnee}
}

// AddFlags registers the options' flags, defaulting to o's values. How the nodes' disks are reached (the
// agent's image, directories on this machine) is the command's: it knows the lab.
func (o *Options) AddFlags(fl *pflag.FlagSet) {
	fl.StringSliceVar(&o.Nodes, "nodes", o.Nodes, "nodes to start pods on, in turn (default: every real node that takes the pods: Ready, not cordoned, not tainted against them)")
	fl.IntVar(&o.Count, "count", o.Count, fmt.Sprintf("pods to start at most (1..%d)", MaxCount))
	fl.DurationVar(&o.Duration, "duration", o.Duration, fmt.Sprintf("run at most this long (up to %s)", MaxDuration))
	fl.IntVar(&o.Concurrency, "concurrency", o.Concurrency, fmt.Sprintf("pods in flight at once (1..%d; 1 is one after another, as docker run in a loop; lowered to the nodes' free pod slots, with a note)", MaxConcurrency))
	fl.StringVar(&o.Image, "image", o.Image, "container image (default: a pause image the nodes already hold, else "+podstartup.ClusterImage+")")
	fl.DurationVar(&o.PodTimeout, "pod-timeout", o.PodTimeout, "give up on one pod's start, or its deletion, after this long (at most 1h)")
	fl.DurationVar(&o.SampleInterval, "sample-interval", o.SampleInterval, "disk sampling period (100ms..1m)")
	fl.IntVar(&o.StopAfterKnee, "stop-after-knee", o.StopAfterKnee, "stop once start latency's knee has held for this many starts (0: run to --count or --duration)")
	fl.StringVar(&o.RuntimeDir, "runtime-dir", o.RuntimeDir, "the container runtime's directory on the nodes (its disk is the one sampled)")
}
