package measuretest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// Stepped runs f in a goroutine and, until it returns, steps clk by step whenever a timer waits on it (a
// wait bounded by the run's budget, measure.Env.BoundContext); it returns what f returned. A minute of real
// time without f returning fails the test.
func Stepped[T any](t testing.TB, clk *clocktesting.FakeClock, step time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got T
	err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case got = <-done:
			return true, nil
		default:
		}
		if clk.HasWaiters() {
			clk.Step(step)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("still waiting after a minute: %v", err)
	}
	return got
}
