package bench

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/pflag"
)

// profileFlags write kubeslow's own CPU profile and execution trace of a benchmark (hidden flags: for
// looking at what kubeslow's observation costs and where its goroutines wait, e.g. the pod watch).
type profileFlags struct{ cpu, trace string }

func (p *profileFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&p.cpu, "cpu-profile", "", "write kubeslow's CPU profile (pprof) of the run to this file")
	fl.StringVar(&p.trace, "trace", "", "write kubeslow's execution trace (go tool trace) of the run to this file")
	_ = fl.MarkHidden("cpu-profile")
	_ = fl.MarkHidden("trace")
}

// start begins the profiles asked for; the returned function ends them and closes their files.
func (p *profileFlags) start() (func(), error) {
	var stops []func() error
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		}
	}
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, errors.Join(fmt.Errorf("--cpu-profile: %w", err), f.Close())
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			stop()
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			stop()
			return nil, errors.Join(fmt.Errorf("--trace: %w", err), f.Close())
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	return stop, nil
}
