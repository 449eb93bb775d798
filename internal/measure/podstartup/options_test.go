package podstartup

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubeslow/kubeslow/internal/load/workload"
)

// TestOptions: the defaults are valid and are the flags' defaults; out-of-range values are refused.
func TestOptions(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	fs := pflag.NewFlagSet("pods", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--count", "7"}); err != nil || o.Count != 7 || o.QPS != DefaultOptions().QPS {
		t.Fatalf("flags: %v %+v", err, o)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Count = 0 },
		func(o *Options) { o.Count = MaxCount + 1 },
		func(o *Options) { o.QPS = 0 },
		func(o *Options) { o.SLO = 0 },
	} {
		x := DefaultOptions()
		bad(&x)
		if x.Validate() == nil {
			t.Errorf("accepted %+v", x)
		}
	}
	x := DefaultOptions()
	x.Kind, x.QPS = workload.Deployment, 0 // the controller's rate, not kubeslow's
	if err := x.Validate(); err != nil {
		t.Errorf("deployment without --create-qps: %v", err)
	}
}
