package churn

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestOptions: the defaults are valid, the flags start from them and parse into them, and each bound is
// enforced.
func TestOptions(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	fl := pflag.NewFlagSet("churn", pflag.ContinueOnError)
	o.AddFlags(fl)
	if err := fl.Parse([]string{"--count", "40", "--concurrency", "3", "--sample-interval", "500ms", "--nodes", "a,b"}); err != nil {
		t.Fatal(err)
	}
	if o.Count != 40 || o.Concurrency != 3 || o.SampleInterval != 500*time.Millisecond || len(o.Nodes) != 2 || o.Duration != 15*time.Minute || o.RuntimeDir != DefaultRuntimeDir {
		t.Errorf("parsed %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("parsed options: %v", err)
	}
	for name, bad := range map[string]func(*Options){
		"count 0":            func(o *Options) { o.Count = 0 },
		"count over":         func(o *Options) { o.Count = MaxCount + 1 },
		"duration over":      func(o *Options) { o.Duration = MaxDuration + time.Second },
		"concurrency over":   func(o *Options) { o.Concurrency = MaxConcurrency + 1 },
		"pod timeout 0":      func(o *Options) { o.PodTimeout = 0 },
		"sample every 10 ms": func(o *Options) { o.SampleInterval = 10 * time.Millisecond },
		"sample every hour":  func(o *Options) { o.SampleInterval = time.Hour },
	} {
		o := DefaultOptions()
		bad(&o)
		if o.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
