package dnsready

import (
	"testing"
	"time"
)

// TestOptions: the defaults are valid; out-of-range values are refused.
func TestOptions(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Count = 101 },
		func(o *Options) { o.Interval = time.Millisecond },
		func(o *Options) { o.Wait = 11 * time.Minute },
		func(o *Options) { o.Backoff.Factor = 0.5 },
	} {
		x := DefaultOptions()
		bad(&x)
		if x.Validate() == nil {
			t.Errorf("accepted %+v", x)
		}
	}
}
