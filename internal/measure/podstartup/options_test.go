package podstartup

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeslow/kubeslow/internal/load/workload"
	"github.com/kubeslow/kubeslow/internal/measure"
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

// TestDefaultSteadyRate: by default kubeslow creates its pods at a steady --create-qps (burst 1, as
// clusterloader2's qps: one every 1/QPS from the first); --create-burst 20 lets 20 go at once, deliberately.
func TestDefaultSteadyRate(t *testing.T) {
	env := &measure.Env{Namespace: "kubeslow-r", RunID: "r"}
	p := &measure.Placement{}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		args  []string
		burst int
	}{{nil, 1}, {[]string{"--create-qps", "10", "--create-burst", "20"}, 20}} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("pods", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(append([]string{"--create-qps", "10"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil || o.Burst != c.burst {
			t.Fatalf("%v: burst %d (%v), want %d", c.args, o.Burst, err, c.burst)
		}
		if q, b := New(o).ClientLoad(); q != 10 || b != c.burst {
			t.Errorf("%v: client load %v/s burst %d", c.args, q, b)
		}
		s := o.Spec(env, p, 40)
		if lim := s.Limiter(); lim.Limit() != 10 || lim.Burst() != c.burst {
			t.Fatalf("%v: limiter %v/s burst %d", c.args, lim.Limit(), lim.Burst())
		}
		sched := s.Schedule(t0, s.Count)
		atOnce := 0
		for _, at := range sched {
			if at.Equal(t0) {
				atOnce++
			}
		}
		if atOnce != c.burst {
			t.Errorf("%v: %d creates at once, want %d", c.args, atOnce, c.burst)
		}
		for i := c.burst; i < len(sched); i++ {
			if d := sched[i].Sub(sched[i-1]); d < 99*time.Millisecond || d > 101*time.Millisecond {
				t.Fatalf("%v: creates %d and %d %s apart, want 100 ms at 10/s", c.args, i-1, i, d)
			}
		}
	}
	// `run`'s pods.startup takes the same default.
	m, ok := Spec.New(measure.Options{Pods: 50}).(*Measurement)
	if !ok || m.Opts.Burst != 1 || m.Opts.Count != 50 {
		t.Fatalf("run's pods.startup: %+v", m)
	}
	if d := m.Description(); !strings.Contains(d, "at 20/s, burst 1") {
		t.Errorf("description %q", d)
	}
}
