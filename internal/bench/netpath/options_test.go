package netpath

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestOptions: the defaults are valid; out-of-range values are refused.
func TestOptions(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Duration = 0 },
		func(o *Options) { o.Duration = 61 * time.Second },
		func(o *Options) { o.Concurrency = 0 },
		func(o *Options) { o.Concurrency = 257 },
		func(o *Options) { o.Repeats = 0 },
		func(o *Options) { o.Repeats = 11 },
	} {
		x := DefaultOptions()
		bad(&x)
		if x.Validate() == nil {
			t.Errorf("accepted %+v", x)
		}
	}
}

// TestLongForm: --long makes 5 s tests unless -d is given; without it the defaults stay.
func TestLongForm(t *testing.T) {
	for _, c := range []struct {
		args     []string
		duration time.Duration
		repeats  int
	}{
		{nil, time.Second, 3},
		{[]string{"--long"}, 5 * time.Second, 3},
		{[]string{"--long", "-d", "2s", "--repeats", "5"}, 2 * time.Second, 5},
		{[]string{"-d", "2s"}, 2 * time.Second, 3},
	} {
		o := DefaultOptions()
		fl := pflag.NewFlagSet("net", pflag.ContinueOnError)
		o.AddFlags(fl)
		if err := fl.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if err := o.FromFlags(fl); err != nil {
			t.Fatal(err)
		}
		if o.Duration != c.duration || o.Repeats != c.repeats {
			t.Errorf("%v: %s, %d rounds; want %s, %d", c.args, o.Duration, o.Repeats, c.duration, c.repeats)
		}
	}
}
