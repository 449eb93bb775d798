package measure

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WaitBound is how long a benchmark may wait for the cluster: d, or less when the run's budget ends first
// (Cut says so). A budget already spent leaves one second, so the benchmark still reads what it has.
func (e *Env) WaitBound(d time.Duration) Bound {
	if e == nil || e.BenchDeadline.IsZero() || e.Clock == nil {
		return Bound{D: d}
	}
	left := max(e.BenchDeadline.Sub(e.Clock.Now()), time.Second)
	if left < d {
		return Bound{D: left, Cut: true}
	}
	return Bound{D: d}
}

// Bound is a wait's bound as WaitBound gave it: D from the wait's start, Cut when the end of the run's
// budget (not the benchmark's own time-out) set it.
type Bound struct {
	D   time.Duration
	Cut bool
}

// Note is what a result's Reason adds when a cut wait ended at its bound ("" when not cut): the wait stopped
// at the end of kubeslow's own budget, which says nothing about the cluster.
func (b Bound) Note() string {
	if !b.Cut {
		return ""
	}
	return fmt.Sprintf(" (stopped waiting after %s, at the end of the run's --budget)", b.D.Round(time.Second))
}

// ErrBudgetEnd is the cause (context.Cause) of a context that BoundContext ended at the end of the run's
// budget.
var ErrBudgetEnd = errors.New("the run's --budget ended")

// BoundContext is ctx bounded for a wait of at most d on the cluster. Without a cut (no budget, or d ends
// first) it is context.WithTimeout(ctx, d), as the wait had before the budget; with one it ends on e's clock
// at the end of the run's budget, with ErrBudgetEnd as its cause (BudgetEnded).
func (e *Env) BoundContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, Bound) {
	b := e.WaitBound(d)
	if !b.Cut {
		c, cancel := context.WithTimeout(ctx, d)
		return c, cancel, b
	}
	c, cancel := context.WithCancelCause(ctx)
	t := e.Clock.NewTimer(b.D)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel(ErrBudgetEnd)
		case <-c.Done():
		}
	}()
	return c, func() { cancel(context.Canceled) }, b
}

// BudgetEnded reports whether ctx (from BoundContext) ended at the end of the run's budget.
func BudgetEnded(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrBudgetEnd) }
