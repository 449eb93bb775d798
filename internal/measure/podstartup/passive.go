package podstartup

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// PassiveOptions select the pods a passive run observes: pods that others create (a Deployment's rollout,
// a peer benchmark), measured by the same method and analysis as the benchmark's own, with nothing created. It
// is the run's option measure.PodsWatch (whose fields are documented there), with its defaults and validation.
type PassiveOptions measure.PodsWatch

// DefaultPassiveOptions are a passive run's defaults.
func DefaultPassiveOptions() PassiveOptions {
	return PassiveOptions{SLO: DefaultSLO, Timeout: 5 * time.Minute}
}

// Validate checks the selection and the ranges.
func (o PassiveOptions) Validate() error {
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("--watch-namespace %q: %s", o.Namespace, errs[0])
		}
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("--watch-selector %q: %w", o.Selector, err)
	}
	switch {
	case o.Count < 0 || o.Count > MaxCount:
		return fmt.Errorf("--count %d: want 0..%d (0: watch until --timeout)", o.Count, MaxCount)
	case o.SLO <= 0 || o.Timeout <= 0:
		return fmt.Errorf("--slo %s and --timeout %s: want > 0", o.SLO, o.Timeout)
	}
	return nil
}

// Passive is pods.startup observing pods it does not create: a read-only measurement (it needs list and
// watch on pods and events, which the view role grants, and creates no namespace or object).
type Passive struct{ Opts PassiveOptions }

// NewPassive returns the passive measurement.
func NewPassive(o PassiveOptions) *Passive { return &Passive{Opts: o} }

// Name implements measure.Measurement: the same result as the benchmark's.
func (*Passive) Name() string { return Name }

func (o PassiveOptions) where() string {
	ns := "every namespace"
	if o.Namespace != "" {
		ns = "namespace " + o.Namespace
	}
	sel := "every pod"
	if o.Selector != "" {
		sel = "pods " + o.Selector
	}
	return sel + " in " + ns
}

// Description implements measure.Measurement.
func (p *Passive) Description() string {
	until := fmt.Sprintf("for %s", p.Opts.Timeout)
	if p.Opts.Count > 0 {
		until = fmt.Sprintf("until %d new pods run (at most %s)", p.Opts.Count, p.Opts.Timeout)
	}
	return fmt.Sprintf("pod start-up by phase, passive (creates nothing): %s, %s, vs the %s p99 SLO", p.Opts.where(), until, p.Opts.SLO)
}

// Run watches the selected pods (on a client of its own) until Count of them created after it started are
// Running, Timeout passes or ctx ends, and analyses them; pods that were there before are left out.
func (p *Passive) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	cli, err := WatchClient(env.Config, env.Client)
	if err != nil {
		return result.Result{}, fmt.Errorf("the watch client: %w", err)
	}
	col := NewCollector(cli, p.Opts.Namespace, p.Opts.Selector, env.Clock, p.Opts.Count)
	if err := col.Start(ctx); err != nil {
		return result.Result{}, fmt.Errorf("watching %s: %w", p.Opts.where(), err)
	}
	defer col.Stop()
	if env.Log != nil {
		env.Log.Info("passive pod start-up: watching", "pods", p.Opts.where(), "count", p.Opts.Count, "timeout", p.Opts.Timeout)
	}
	timedOut := false
	select {
	case <-col.AllRunning():
	case <-env.Clock.After(p.Opts.Timeout):
		timedOut = true
	case <-ctx.Done():
		return result.Result{}, ctx.Err()
	}
	col.Stop()
	res := Analyze(Input{Timelines: col.Timelines(), SLO: p.Opts.SLO, Expected: p.Opts.Count, Creator: "others"})
	if res.Status == result.StatusFail && noneCreated(res) {
		// Nothing was created in the window: not a failed start-up, nothing to measure.
		res.Status = result.StatusSkip
		res.Reason = fmt.Sprintf("no pod was created in %s within %s", p.Opts.where(), p.Opts.Timeout)
		return res, nil
	}
	if timedOut && p.Opts.Count > 0 {
		res.Reason += fmt.Sprintf("; watched %s: fewer than %d new pods Running", p.Opts.Timeout, p.Opts.Count)
	}
	return res, nil
}

func noneCreated(r result.Result) bool {
	for _, m := range r.Metrics {
		if m.Name == MetricPods && m.Labels == nil {
			return m.Value == 0
		}
	}
	return false
}
