// Package watch is `kubeslow watch`: the same diagnosis as `kubeslow run`, continuously. A loop runs one
// cycle (the read-only measurements and their rules) every interval, keeps the findings' state with noise
// control (a finding fires after it held for a number of consecutive cycles and clears after one clear
// cycle; stale evidence never fires), and serves the state: Prometheus metrics, the latest report as HTML,
// the last cycles as JSON.
//
// The loop knows nothing of clusters: the cycle is a function (CycleFunc) and the clock is injected, so it
// is tested without a cluster.
package watch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// CycleFunc runs one diagnosis and returns its report; an error means the cluster could not be reached (no
// report).
type CycleFunc func(ctx context.Context) (*result.Report, error)

// Defaults of Options.
const (
	DefaultInterval   = 5 * time.Minute
	DefaultFor        = 2
	DefaultRetryBase  = 5 * time.Second
	DefaultHistory    = 50
	DefaultHistoryMax = 512 << 10 // bytes of /history's JSON
	DefaultMaxSeries  = 2000      // kubeslow_metric series per cycle
)

// Options configure a Watcher. Zero values take the defaults above.
type Options struct {
	Cycle    CycleFunc
	Interval time.Duration
	// For is how many consecutive cycles a finding must hold before it fires.
	For int
	// RetryBase is the first wait after a failed cycle; each further failure doubles it, up to Interval.
	RetryBase time.Duration
	// CycleTimeout bounds one cycle (default: 2 intervals, when its evidence would be stale anyway).
	CycleTimeout time.Duration
	// History is how many cycles /history keeps; HistoryBytes bounds their JSON.
	History      int
	HistoryBytes int
	// MaxSeries caps the kubeslow_metric series exported from one report.
	MaxSeries int
	Clock     clock.Clock
	Log       *slog.Logger
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.For <= 0 {
		o.For = DefaultFor
	}
	if o.RetryBase <= 0 {
		o.RetryBase = DefaultRetryBase
	}
	o.RetryBase = min(o.RetryBase, o.Interval)
	if o.CycleTimeout <= 0 {
		o.CycleTimeout = 2 * o.Interval
	}
	if o.History <= 0 {
		o.History = DefaultHistory
	}
	if o.HistoryBytes <= 0 {
		o.HistoryBytes = DefaultHistoryMax
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Cycle outcomes, the values of kubeslow_cycles_total's result label.
const (
	CycleOK    = "ok"    // the cluster answered and something was measured
	CycleEmpty = "empty" // the cluster answered but every measurement was skipped or errored
	CycleError = "error" // the cluster could not be reached (or the cycle timed out)
)

// Watcher is the loop and its state; its methods are safe for concurrent use (the HTTP handlers read while
// the loop writes).
type Watcher struct {
	o Options

	mu       sync.Mutex
	findings *tracker
	last     *result.Report // the latest report (nil before the first that reached the cluster)
	lastOK   time.Time      // when the latest report's cycle ended
	up       bool
	cycles   map[string]float64
	duration time.Duration
	failures int // consecutive failed cycles
	seq      int
	history  *history
	series   []prometheus.Metric // the latest report's measurement statuses and kubeslow_metric series
	dropped  int                 // kubeslow_metric series left out of series by the cap
	started  bool                // a first cycle has ended
}

// New returns a Watcher; o.Cycle is required.
func New(o Options) (*Watcher, error) {
	if o.Cycle == nil {
		return nil, fmt.Errorf("watch: no cycle function")
	}
	o.defaults()
	return &Watcher{o: o, findings: newTracker(o.For), cycles: map[string]float64{}, history: newHistory(o.History, o.HistoryBytes)}, nil
}

// Run runs cycles until ctx is cancelled: one at once, then every interval after the end of the previous one
// (a failed cycle is retried sooner, with back-off: RetryBase doubled per failure, capped at the interval).
// A failed cycle never ends the loop; Run returns nil when ctx is cancelled.
func (w *Watcher) Run(ctx context.Context) error {
	for {
		wait := w.Step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		t := w.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Step runs one cycle, records it and returns how long to wait before the next.
func (w *Watcher) Step(ctx context.Context) time.Duration {
	start := w.o.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, w.o.CycleTimeout)
	rep, err := w.o.Cycle(cctx)
	cancel()
	if ctx.Err() != nil {
		return 0 // interrupted: the caller stops; an interrupted cycle is not recorded
	}
	if err == nil && rep == nil {
		err = fmt.Errorf("the cycle returned no report")
	}
	return w.record(start, w.o.Clock.Now(), rep, err)
}

// record updates the state with one cycle's outcome and returns the wait before the next cycle.
func (w *Watcher) record(start, end time.Time, rep *result.Report, err error) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.started = true
	w.duration = end.Sub(start)
	outcome := CycleOK
	switch {
	case err != nil:
		outcome = CycleError
	case rep.Tally().Ran == 0:
		outcome = CycleEmpty
	}
	w.cycles[outcome]++
	w.up = err == nil
	sum := summary{Seq: w.seq, Start: start.UTC(), End: end.UTC(), Seconds: w.duration.Seconds(), Result: outcome}
	if err != nil {
		// The findings' evidence is now stale: nothing fires, and a finding must hold again for For
		// consecutive cycles that reach the cluster.
		w.findings.reset()
		w.failures++
		sum.Error = truncate(strings.ToValidUTF8(err.Error(), "\uFFFD"), maxErrorBytes)
		w.history.add(sum)
		wait := w.o.RetryBase << min(w.failures-1, 30)
		if wait <= 0 || wait > w.o.Interval {
			wait = w.o.Interval
		}
		w.o.Log.Warn("cycle failed", "cycle", w.seq, "error", err, "retry", wait)
		return wait
	}
	w.failures = 0
	w.last, w.lastOK = rep, end
	w.series, w.dropped = reportSeries(rep, w.o.MaxSeries)
	if outcome == CycleEmpty {
		w.findings.reset() // nothing measured: no evidence for or against a finding
	} else {
		w.findings.observe(rep.Findings)
	}
	t := rep.Tally()
	sum.RunID, sum.Ran, sum.Skipped, sum.Errored = rep.RunID, t.Ran, t.Skipped, t.Errored
	sum.Findings = w.findings.summaries(maxHistoryFindings)
	w.history.add(sum)
	w.o.Log.Info("cycle", "cycle", w.seq, "result", outcome, "seconds", w.duration.Seconds(), "findings", len(rep.Findings), "firing", w.findings.firingCount())
	return w.o.Interval
}

// fresh reports whether the latest report's evidence may fire: the last cycle reached the cluster and ended
// within 2 intervals. Called with mu held.
func (w *Watcher) fresh() bool {
	return w.up && w.last != nil && w.o.Clock.Since(w.lastOK) <= 2*w.o.Interval
}

// Firing returns the findings that fire now (the ones exported as 1), for tests and the CLI's progress.
func (w *Watcher) Firing() []FindingState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.fresh() {
		return nil
	}
	return w.findings.firing()
}
