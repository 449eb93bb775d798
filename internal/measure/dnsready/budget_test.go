package dnsready

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/measuretest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

var budgetT0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// budgetEnv is a cluster of one real node where no pod ever starts (nothing runs the Job's members either),
// with the run's budget ending in (zero: no budget).
func budgetEnv(in time.Duration) (*measure.Env, *clocktesting.FakeClock) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	clk := clocktesting.NewFakeClock(budgetT0)
	env := &measure.Env{Client: fake.NewClientset(n), Clock: clk, Namespace: "ns", RunID: "r", Log: slog.New(slog.DiscardHandler)}
	if in > 0 {
		env.BenchDeadline = budgetT0.Add(in)
	}
	return env, clk
}

// TestBudgetBoundsWaits: with the run's budget ending 10 s ahead, dns.readiness stops waiting for its client
// pod there (its own wait is 3 minutes) and skips saying so; the client then asks no longer than the budget,
// and names it left unresolved are said as the budget's, not the cluster's (no Warn).
func TestBudgetBoundsWaits(t *testing.T) {
	env, clk := budgetEnv(10 * time.Second)
	m := New(DefaultOptions())
	m.Opts.Image = "img:1"
	res := measuretest.Stepped(t, clk, 10*time.Second, func() result.Result { return measure.RunOne(context.Background(), env, m) })
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "dns-client not Running yet (stopped waiting after 10s, at the end of the run's --budget)") {
		t.Fatalf("budget: %s %q", res.Status, res.Reason)
	}

	fresh, _ := budgetEnv(10 * time.Second)
	if w := fresh.WaitBound(m.Opts.Wait); !w.Cut || w.D != 10*time.Second {
		t.Errorf("client's wait with the budget 10s ahead: %+v", w)
	}
	noBudget, _ := budgetEnv(0)
	if w := noBudget.WaitBound(m.Opts.Wait); w.Cut || w.D != m.Opts.Wait {
		t.Errorf("client's wait without a budget: %+v, want %s", w, m.Opts.Wait)
	}
	targets := []Target{{Pod: "peer-0", Asked: budgetT0, Ready: budgetT0.Add(time.Second), Resolved: budgetT0.Add(2 * time.Second)}, {Pod: "peer-1", Asked: budgetT0}}
	cut, uncut := result.Result{Status: result.StatusPass}, result.Result{Status: result.StatusPass}
	m.Report(&cut, targets, budgetT0, budgetT0, measure.Bound{D: 10 * time.Second, Cut: true})
	m.Report(&uncut, targets, budgetT0, budgetT0, measure.Bound{D: m.Opts.Wait})
	if cut.Status != result.StatusPass || cut.Reason != "1 of 2 names did not resolve (stopped waiting after 10s, at the end of the run's --budget)" {
		t.Errorf("cut by the budget: %s %q", cut.Status, cut.Reason)
	}
	if uncut.Status != result.StatusWarn || uncut.Reason != "1 of 2 names did not resolve within 2m0s of creation" {
		t.Errorf("its own wait: %s %q", uncut.Status, uncut.Reason)
	}
	var none result.Result
	m.Report(&none, targets[1:], budgetT0, budgetT0, measure.Bound{D: time.Second, Cut: true})
	if none.Status != result.StatusSkip {
		t.Errorf("nothing resolved before the budget: %s %q", none.Status, none.Reason)
	}
}

// TestJobBudgetBoundsWaits: the whole-job benchmark's wait for its members (Wait + 1 minute) stops at the
// budget's end, the members are told to wait no longer, the warm-up run is not started, and the result (a
// skip: no member reported) says so; without a budget the members wait Wait, and the wait is not on the clock.
func TestJobBudgetBoundsWaits(t *testing.T) {
	o := DefaultJobOptions()
	o.Image = "img:1"
	env, clk := budgetEnv(10 * time.Second)
	m := NewJob(o)
	res := measuretest.Stepped(t, clk, 10*time.Second, func() result.Result { return measure.RunOne(context.Background(), env, m) })
	if res.Status != result.StatusSkip || !strings.Contains(res.Reason, "cold: 4 of 4 members did not report") ||
		!strings.Contains(res.Reason, "(stopped waiting after 10s, at the end of the run's --budget)") ||
		!strings.Contains(res.Reason, "warm-up not run: the run's --budget ended") || len(m.Runs) != 1 || m.Runs[0].Stopped != 10*time.Second {
		t.Fatalf("budget: %s %q, runs %d", res.Status, res.Reason, len(m.Runs))
	}
	if w := jobWait(t, env, "job-a"); w != "10s" {
		t.Errorf("members' --wait %s with the budget 10s ahead", w)
	}

	env, clk = budgetEnv(0)
	created := make(chan struct{})
	env.Client.(*fake.Clientset).PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		close(created)
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := NewJob(o).Run(ctx, env); done <- err }()
	<-created
	if clk.HasWaiters() {
		t.Error("without a budget the wait is on the clock")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("without a budget: %v, want the wait to last until cancelled", err)
	}
	if w := jobWait(t, env, "job-a"); w != o.Wait.String() {
		t.Errorf("members' --wait %s without a budget, want %s", w, o.Wait)
	}
}

// jobWait is the --wait of the Job's members.
func jobWait(t *testing.T, env *measure.Env, name string) string {
	t.Helper()
	var j *batchv1.Job
	j, err := env.Client.BatchV1().Jobs(env.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := j.Spec.Template.Spec.Containers[0].Args
	if i := slices.Index(args, "--wait"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	t.Fatalf("no --wait in %v", args)
	return ""
}
