package netpath

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var budgetT0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// budgetEnv is two real nodes where no pod ever starts, with the run's budget ending in (zero: none).
func budgetEnv(in time.Duration) (*measure.Env, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(budgetT0)
	env := &measure.Env{Client: fake.NewClientset(node("real-1", true, false, false), node("real-2", true, false, false)),
		Clock: clk, Namespace: "ns", RunID: "r"}
	if in > 0 {
		env.BenchDeadline = budgetT0.Add(in)
	}
	return env, clk
}

// TestBudgetBoundsWaits: with the run's budget ending 10 s ahead, net.paths and net.mtu stop waiting for their
// agents there (their own wait is 3 minutes) and skip saying so.
func TestBudgetBoundsWaits(t *testing.T) {
	for _, m := range []measure.Measurement{New(Options{Image: "img:1", Duration: time.Second, Concurrency: 1, Repeats: 1}), NewMTU(MTUOptions{Image: "img:1"})} {
		env, clk := budgetEnv(10 * time.Second)
		res := measuretest.Stepped(t, clk, 10*time.Second, func() result.Result { return measure.RunOne(context.Background(), env, m) })
		if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "not Running yet (stopped waiting after 10s, at the end of the run's --budget)") {
			t.Errorf("%s: %s %q", m.Name(), res.Status, res.Reason)
		}
	}
}

// TestBudgetBoundsRouteWait: a route that never answers with kubeslow's server stops the wait at the budget's
// end (not the minute of its own), and the error says so; without a budget the wait's own time-out ends it.
func TestBudgetBoundsRouteWait(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	env, clk := budgetEnv(10 * time.Second)
	err := measuretest.Stepped(t, clk, 10*time.Second, func() error { return waitRoutes(context.Background(), env, time.Minute, srv.URL+"/same") })
	if err == nil || !strings.Contains(err.Error(), "within 10s") || !strings.HasSuffix(err.Error(), "(stopped waiting after 10s, at the end of the run's --budget)") {
		t.Fatalf("budget: %v", err)
	}
	env, _ = budgetEnv(0)
	err = waitRoutes(context.Background(), env, 300*time.Millisecond, srv.URL+"/same")
	if err == nil || !strings.Contains(err.Error(), "within 300ms") || strings.Contains(err.Error(), "budget") {
		t.Fatalf("no budget: %v", err)
	}
}
