package measure

import (
	"context"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// ObserveStep is the fixed step at which observations sample between their start and their gather, so that
// their series have a shape (a window of 20 s gives 10 points, not two).
const ObserveStep = 2 * time.Second

// Observer is a measurement that watches the control plane over a window instead of acting on it (API
// responsiveness, etcd health, the audit window, control-plane usage) — clusterloader2's measurement
// lifecycle. A run starts every observer before the benchmarks and gathers them after, so that what they
// report is the control plane under the load kubeslow generated; with no benchmark they watch their window.
type Observer interface {
	Measurement
	// Window is the least time between Start and Gather.
	Window() time.Duration
	// Start takes the observation's first sample. Its errors are the measurement's (Skip for a missing
	// permission or source).
	Start(ctx context.Context, env *Env) (Observation, error)
}

// Observation is a started observer. Sample and Gather are never called concurrently.
type Observation interface {
	// Sample takes one sample (called every ObserveStep); a failed sample is a gap in the series, not an
	// error of the observation.
	Sample(ctx context.Context)
	// Gather takes the last sample and analyses the window from Start to now.
	Gather(ctx context.Context) (result.Result, error)
}

// Observe is an observer run on its own: start, sample every ObserveStep until the window has passed, gather.
func Observe(ctx context.Context, env *Env, o Observer) (result.Result, error) {
	obs, err := o.Start(ctx, env)
	if err != nil {
		return result.Result{}, err
	}
	stop := StartSampling(ctx, env, obs)
	select {
	case <-ctx.Done():
	case <-env.Clock.After(o.Window()):
	}
	stop()
	if err := ctx.Err(); err != nil {
		return result.Result{}, err
	}
	return obs.Gather(ctx)
}

// StartSampling samples obs every ObserveStep (on env's clock) in a goroutine of its own until stop is
// called; stop waits for a sample in progress, so Gather may follow it.
func StartSampling(ctx context.Context, env *Env, obs ...Observation) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		next := env.Clock.Now().Add(ObserveStep)
		for {
			// A timer stopped on the way out, not Clock.After: a stopped sampler leaves nothing waiting on the clock.
			t := env.Clock.NewTimer(next.Sub(env.Clock.Now()))
			select {
			case <-done:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			// A fixed step: the next sample is due a step after the last one was due, however long it took.
			for next = next.Add(ObserveStep); !next.After(env.Clock.Now()); {
				next = next.Add(ObserveStep) // a sample longer than a step: skip the steps it overran
			}
			for _, o := range obs {
				o.Sample(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Scrapes is the observation of a Prometheus metrics endpoint: one scrape at Start, one per step, one at
// Gather. Step turns each pair of consecutive scrapes into the values of that step (they become the points
// of the result's series, one series per metric name and labels); Analyze turns the first and the last
// scrape into the result.
type Scrapes struct {
	Scrape  func(ctx context.Context) (*prom.Snapshot, error)
	Step    func(prev, cur *prom.Snapshot) []result.Metric
	Analyze func(ctx context.Context, first, last *prom.Snapshot) (result.Result, error)
	Log     func(msg string, args ...any)

	first, prev *prom.Snapshot
	series      []result.Series
	index       map[string]int
	// attempted and missed count the scrapes taken and those that failed (gaps in the series).
	attempted, missed int
}

// Gaps returns how many scrapes the observation attempted and how many of them failed.
func (s *Scrapes) Gaps() (attempted, missed int) { return s.attempted, s.missed }

// Start takes the first scrape; its error is the observation's.
func (s *Scrapes) Start(ctx context.Context) (*Scrapes, error) {
	snap, err := s.Scrape(ctx)
	if err != nil {
		return nil, err
	}
	s.first, s.prev, s.index = snap, snap, map[string]int{}
	s.attempted = 1
	return s, nil
}

// Sample implements Observation.
func (s *Scrapes) Sample(ctx context.Context) {
	snap, err := s.Scrape(ctx)
	s.attempted++
	if err != nil {
		s.missed++
		if s.Log != nil {
			s.Log("sample failed (a gap in the series)", "err", err)
		}
		return
	}
	s.step(snap)
}

func (s *Scrapes) step(snap *prom.Snapshot) {
	if s.Step != nil {
		for _, m := range s.Step(s.prev, snap) {
			k := m.Name + "\x00" + prom.Labels(m.Labels).Key()
			i, ok := s.index[k]
			if !ok {
				i = len(s.series)
				s.index[k] = i
				s.series = append(s.series, result.Series{Name: m.Name, Unit: m.Unit, Labels: m.Labels})
			}
			s.series[i].Points = append(s.series[i].Points, result.Point{T: snap.At, V: m.Value})
		}
	}
	s.prev = snap
}

// Gather implements Observation.
func (s *Scrapes) Gather(ctx context.Context) (result.Result, error) {
	snap, err := s.Scrape(ctx)
	s.attempted++
	if err != nil {
		return result.Result{}, err
	}
	s.step(snap)
	res, err := s.Analyze(ctx, s.first, snap)
	if err != nil {
		return res, err
	}
	res.Start, res.End = s.first.At, snap.At
	res.Series = append(res.Series, s.series...)
	return res, nil
}
