package podstartup

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeslow/kubeslow/internal/load/workload"
)

// MaxCount bounds a run's pods.
const MaxCount = 20000

// DefaultBurst is the default --create-burst: 1, a steady rate of --create-qps from the first pod, which is
// what clusterloader2's `qps: Q` (qpsLoad) means and what the SLI's "steady load" assumes. A burst of N would
// queue N pods in the scheduler at once, and the start-up tail would measure that queue (issue 45: 200 pods at
// 10/s on 20 kwok nodes, p99 130 ms with burst 20 against 21-25 ms with burst 1 and clusterloader2's 26-32).
const DefaultBurst = 1

// DefaultOptions are the benchmark's defaults, shared by `bench pods` (its flags) and `run` (whose profile
// sets Count).
func DefaultOptions() Options {
	return Options{Kind: workload.Pods, Count: 100, QPS: 20, Burst: DefaultBurst, SLO: DefaultSLO, Timeout: 5 * time.Minute, Simulated: true}
}

// Validate checks the options' ranges.
func (o Options) Validate() error {
	switch {
	case o.Count < 1 || o.Count > MaxCount:
		return fmt.Errorf("--count %d: want 1..%d", o.Count, MaxCount)
	case o.Kind == workload.Pods && (o.QPS <= 0 || o.Burst < 1):
		return fmt.Errorf("--create-qps %g and --create-burst %d: want > 0 and >= 1", o.QPS, o.Burst)
	case o.SLO <= 0 || o.Timeout <= 0:
		return fmt.Errorf("--slo %s and --timeout %s: want > 0", o.SLO, o.Timeout)
	}
	return nil
}

// AddFlags registers the options' flags, defaulting to o's values (--kind and --real-nodes are the
// command's: they are parsed into Kind and Simulated). --count is an upper bound: the load is lowered to the
// free pod slots of the nodes it may use, and says so.
func (o *Options) AddFlags(fl *pflag.FlagSet) {
	fl.IntVar(&o.Count, "count", o.Count, "pods to create (lowered to what fits on the nodes the pods may use, with a note)")
	fl.Float64Var(&o.QPS, "create-qps", o.QPS, "kubeslow's pod creation rate, steady from the first pod as clusterloader2's qps (--kind pods)")
	fl.IntVar(&o.Burst, "create-burst", o.Burst, "pods created at once before the steady --create-qps (--kind pods; 1: none, a steady rate; N queues N pods in the scheduler at once)")
	fl.StringVar(&o.Image, "image", o.Image, "container image (default: a pause image the chosen real nodes already hold, else "+ClusterImage+"; on simulated nodes nothing is pulled)")
	fl.DurationVar(&o.SLO, "slo", o.SLO, "p99 start-up threshold")
	fl.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting for pods after this long")
}
