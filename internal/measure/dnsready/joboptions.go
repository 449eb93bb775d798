package dnsready

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// JobOptions configure the whole-job start-up benchmark (`bench job`).
type JobOptions struct {
	// Image holds the kubeslow binary at /kubeslow.
	Image string
	// Count is the Job's size: completions and parallelism (every member waits for every other).
	Count int
	// Interval between a member's polls of each peer name; Wait bounds each run's wait for the members.
	Interval, Wait time.Duration
	// Connect has each member connect to every peer's Port with Backoff (a framework's rendezvous client);
	// without it the back-off is replayed against the measured lags.
	Connect bool
	Port    int
	Backoff Backoff
	// WarmUp repeats the run with an unrelated Service created first (case A's "warm-up").
	WarmUp bool
	// LeadFirst starts the Job with its lead (index 0) alone and scales it to Count once the lead runs, so
	// the lead asks for its peers' names before they exist, as in case A; without it every member starts at
	// once and whether any asks before a peer is published is a race.
	LeadFirst bool
	// LeadAlone is how long the lead runs alone before the others are created (with LeadFirst): case A's
	// members were scheduled seconds apart. It also makes the order visible in the API, whose container
	// start and Ready times have whole seconds: `kubeslow explain` tells the lead ran before a member was
	// Ready only when they are a second or more apart.
	LeadAlone time.Duration
}

// maxQueryRate bounds the name polls of a job (members x peers / interval) against the cluster's DNS.
const maxQueryRate = 2000

// DefaultJobOptions are `bench job`'s defaults.
func DefaultJobOptions() JobOptions {
	return JobOptions{Count: 4, Interval: 200 * time.Millisecond, Wait: 3 * time.Minute, Port: 7777, Backoff: DefaultBackoff, WarmUp: true, LeadFirst: true, LeadAlone: 2 * time.Second}
}

// Validate checks the options' ranges (the image is checked by the command: it has a lab default).
func (o JobOptions) Validate() error {
	if o.Count < 2 || o.Count > 32 || o.Interval < 50*time.Millisecond || o.Wait <= 0 || o.Wait > 10*time.Minute || o.Port < 1 || o.Port > 65535 ||
		o.Backoff.Base <= 0 || o.Backoff.Factor < 1 || o.Backoff.Cap < o.Backoff.Base || o.LeadAlone < 0 || o.LeadAlone > time.Minute {
		return fmt.Errorf("--count 2..32, --interval >= 50ms, --wait (0, 10m], --port 1..65535, --backoff-base > 0, --backoff-factor >= 1, --backoff-cap >= --backoff-base, --lead-alone 0..1m")
	}
	if rate := float64(o.Count*(o.Count-1)) / o.Interval.Seconds(); rate > maxQueryRate {
		return fmt.Errorf("%d members polling %d names every %s ask %.0f names/s: at most %d (fewer members or a longer --interval)",
			o.Count, o.Count-1, o.Interval, rate, maxQueryRate)
	}
	return nil
}

// AddFlags registers the options' flags (but --image, whose default the command knows), defaulting to o's values.
func (o *JobOptions) AddFlags(fl *pflag.FlagSet) {
	fl.IntVar(&o.Count, "count", o.Count, "members of the Indexed Job (completions = parallelism)")
	fl.DurationVar(&o.Interval, "interval", o.Interval, "how often each member polls each peer name")
	fl.DurationVar(&o.Wait, "wait", o.Wait, "how long each run waits for its members")
	fl.BoolVar(&o.Connect, "connect", o.Connect, "members also connect to every peer, retrying with exponential back-off (else the back-off is replayed)")
	fl.IntVar(&o.Port, "port", o.Port, "the members' port")
	fl.DurationVar(&o.Backoff.Base, "backoff-base", o.Backoff.Base, "back-off client: first retry delay")
	fl.Float64Var(&o.Backoff.Factor, "backoff-factor", o.Backoff.Factor, "back-off client: delay multiplier per retry")
	fl.DurationVar(&o.Backoff.Cap, "backoff-cap", o.Backoff.Cap, "back-off client: longest delay")
	fl.BoolVar(&o.LeadFirst, "lead-first", o.LeadFirst, "start the lead (index 0) alone and the other members once it runs, as case A's job did (else all at once)")
	fl.DurationVar(&o.LeadAlone, "lead-alone", o.LeadAlone, "with --lead-first: how long the lead runs alone before the other members are created")
	fl.BoolVar(&o.WarmUp, "warm-up", o.WarmUp, "repeat the run with an unrelated Service created first (case A's warm-up)")
}
