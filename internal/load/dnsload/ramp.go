package dnsload

import (
	"context"
	"fmt"
	"time"
)

// RampConfig is a bounded ramp: steps of StepDuration each, the rate multiplied by Factor per step from
// Start, until a step breaks a threshold or MaxSteps (at most 12) ran.
type RampConfig struct {
	Base         Config
	Start        float64
	Factor       float64
	MaxSteps     int
	StepDuration time.Duration
	// P99Max and FailMax are the thresholds that end the ramp: answer p99 (from the intended send time) and
	// the share of queries that timed out or were answered SERVFAIL/REFUSED; a step that achieves less than
	// MinAchieved of its rate also ends it.
	P99Max      time.Duration
	FailMax     float64
	MinAchieved float64
}

// MaxSteps bounds every ramp.
const MaxSteps = 12

// Step is one step's result and why the ramp stopped there ("" when it went on).
type Step struct {
	*Result
	Broke string
}

// DefaultRamp is 100 q/s doubling, 5 s per step, at most 8 steps, ended by a p99 over 100 ms, more than 1%
// failed, or less than 90% of the rate answered.
func DefaultRamp(base Config) RampConfig {
	return RampConfig{Base: base, Start: 100, Factor: 2, MaxSteps: 8, StepDuration: 5 * time.Second,
		P99Max: 100 * time.Millisecond, FailMax: 0.01, MinAchieved: 0.9}
}

// Validate checks the bounds.
func (r *RampConfig) Validate() error {
	if r.MaxSteps <= 0 || r.MaxSteps > MaxSteps {
		return fmt.Errorf("steps %d outside [1, %d]", r.MaxSteps, MaxSteps)
	}
	if r.Factor <= 1 || r.Start <= 0 {
		return fmt.Errorf("ramp needs a start > 0 and a factor > 1")
	}
	if r.StepDuration <= 0 || time.Duration(r.MaxSteps)*r.StepDuration > 5*time.Minute {
		return fmt.Errorf("ramp of %d steps of %s: at most 5 minutes in all", r.MaxSteps, r.StepDuration)
	}
	return nil
}

// Breaks says which threshold a step's result breaks, "" for none.
func (r *RampConfig) Breaks(res *Result) string {
	switch {
	case res.FailedShare() > r.FailMax:
		return fmt.Sprintf("%.1f%% failed > %.1f%%", res.FailedShare()*100, r.FailMax*100)
	case time.Duration(res.P(0.99)*float64(time.Second)) > r.P99Max:
		return fmt.Sprintf("p99 %s > %s", time.Duration(res.P(0.99)*float64(time.Second)).Round(time.Microsecond), r.P99Max)
	case res.AnsweredPerSecond() < r.MinAchieved*res.Rate:
		return fmt.Sprintf("answered %.0f/s < %.0f%% of %.0f/s", res.AnsweredPerSecond(), r.MinAchieved*100, res.Rate)
	}
	return ""
}

// Ramp runs the steps; the last one is the one that broke a threshold (or the last allowed).
func Ramp(ctx context.Context, rc RampConfig) ([]Step, error) {
	if err := rc.Validate(); err != nil {
		return nil, err
	}
	var steps []Step
	rate := rc.Start
	for i := 0; i < rc.MaxSteps && rate <= MaxRate; i++ {
		cfg := rc.Base
		cfg.Rate, cfg.Duration = rate, rc.StepDuration
		res, err := Run(ctx, cfg)
		if err != nil {
			return steps, err
		}
		st := Step{Result: res, Broke: rc.Breaks(res)}
		steps = append(steps, st)
		if st.Broke != "" {
			break
		}
		rate *= rc.Factor
	}
	return steps, nil
}
