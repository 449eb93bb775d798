package churn

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestBudgetBoundsWaits: with the run's budget ending 10 s ahead, churn (15 minutes of its own, pods that never
// start) stops there, and its result, a skip, says the budget stopped it; without a budget its own Duration
// ends it, an error (no pod started) that says nothing of a budget.
func TestBudgetBoundsWaits(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	o := DefaultOptions()
	o.Count = 3

	env := cluster(node("a", 110, 0, false))
	clk := clocktesting.NewFakeClock(t0)
	env.Clock, env.BenchDeadline = clk, t0.Add(10*time.Second)
	res := measuretest.Stepped(t, clk, 10*time.Second, func() result.Result { return measure.RunOne(context.Background(), env, New(o, nil)) })
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, " of 3 pods started or tried (stopped waiting after 10s, at the end of the run's --budget)") {
		t.Fatalf("budget: %s %q", res.Status, res.Reason)
	}
	// The budget may end before the first pod is tried (the clock is stepped once the run waits on it).
	if r := res.Metric("failed", nil); r == nil || r.Value > 1 {
		t.Errorf("failed %+v, want at most the one pod the budget's end cut", r)
	}

	env = cluster(node("a", 110, 0, false))
	env.Clock = clocktesting.NewFakeClock(t0)
	o.Duration = 300 * time.Millisecond // its own bound, on the real clock as before
	res = measure.RunOne(context.Background(), env, New(o, nil))
	if res.Status != result.StatusError || strings.Contains(res.Reason, "budget") {
		t.Fatalf("no budget: %s %q", res.Status, res.Reason)
	}
}
