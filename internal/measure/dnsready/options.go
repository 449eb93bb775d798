package dnsready

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// DefaultOptions are the benchmark's defaults, shared by `bench dns` (its flags) and `run`.
func DefaultOptions() Options {
	return Options{Count: 5, Interval: 100 * time.Millisecond, Wait: 2 * time.Minute, Backoff: DefaultBackoff}
}

// Validate checks the options' ranges (the image is checked by the command: it has a lab default).
func (o Options) Validate() error {
	if o.Count < 1 || o.Count > 100 || o.Interval < 10*time.Millisecond || o.Wait <= 0 || o.Wait > 10*time.Minute ||
		o.Backoff.Base <= 0 || o.Backoff.Factor < 1 {
		return fmt.Errorf("--count 1..100, --interval >= 10ms, --wait (0, 10m], --backoff-base > 0, --backoff-factor >= 1")
	}
	return nil
}

// AddFlags registers the options' flags (but --image, whose default the command knows), defaulting to o's values.
func (o *Options) AddFlags(fl *pflag.FlagSet) {
	fl.IntVar(&o.Count, "count", o.Count, "peer pods, each with a per-pod DNS name")
	fl.DurationVar(&o.Interval, "interval", o.Interval, "how often the client asks for each name")
	fl.DurationVar(&o.Wait, "wait", o.Wait, "how long the client waits for the names in all")
	fl.DurationVar(&o.Backoff.Base, "backoff-base", o.Backoff.Base, "replayed client: first retry delay")
	fl.Float64Var(&o.Backoff.Factor, "backoff-factor", o.Backoff.Factor, "replayed client: delay multiplier per retry")
}
