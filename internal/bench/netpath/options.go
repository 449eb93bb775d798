package netpath

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// DefaultOptions are the benchmark's defaults (`bench net`'s flags): 1 s tests, 8 connections, 3 rounds.
func DefaultOptions() Options {
	return Options{Duration: time.Second, Concurrency: 8, Repeats: 3}
}

// Validate checks the options' ranges (the image is checked by the command: it has a lab default).
func (o Options) Validate() error {
	if o.Duration <= 0 || o.Duration > time.Minute || o.Concurrency < 1 || o.Concurrency > 256 || o.Repeats < 1 || o.Repeats > 10 {
		return fmt.Errorf("--duration (0, 1m], --concurrency 1..256 and --repeats 1..10")
	}
	if o.IngressURL != "" {
		if _, why := FindIngress(nil, nil, nil, nil, o.IngressURL); why != "" {
			return errors.New(why)
		}
	}
	return nil
}

// AddFlags registers the options' flags (but --image, whose default the command knows), defaulting to o's
// values, and --long.
func (o *Options) AddFlags(fl *pflag.FlagSet) {
	fl.DurationVarP(&o.Duration, "duration", "d", o.Duration, "length of each test (4 tests per path and round)")
	fl.IntVarP(&o.Concurrency, "concurrency", "c", o.Concurrency, "HTTP connections")
	fl.IntVar(&o.Repeats, "repeats", o.Repeats, "rounds over the whole path matrix (a path with a wide spread gets up to as many extra, within a fifth of the time): medians with min-max are reported")
	fl.StringVar(&o.IngressURL, "ingress-url", o.IngressURL, "the ingress controller's address for the ingress paths (http://host:port; default: found from the cluster's IngressClass and its controller's Service)")
	fl.Bool("long", false, "the long form: 5 s tests (-d 5s), 3 rounds; about 3x the default's wall time")
}

// FromFlags applies --long to the options parsed from fl: the long form's 5 s tests and 3 rounds (about 6 to 7
// minutes on the lab), for what the command line did not set itself.
func (o *Options) FromFlags(fl *pflag.FlagSet) error {
	long, err := fl.GetBool("long")
	if err != nil || !long {
		return err
	}
	if !fl.Changed("duration") {
		o.Duration = 5 * time.Second
	}
	if !fl.Changed("repeats") {
		o.Repeats = 3
	}
	return nil
}

// AddFlags implements the bench command's options: the MTU check has none but --image.
func (o *MTUOptions) AddFlags(*pflag.FlagSet) {}

// Validate implements the bench command's options.
func (o *MTUOptions) Validate() error { return nil }
