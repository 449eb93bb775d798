package measure_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/pkg/result"
)

type fake struct {
	name string
	res  result.Result
	err  error
	step time.Duration
	clk  *clocktesting.FakeClock
}

func (f *fake) Name() string        { return f.name }
func (f *fake) Description() string { return "fake " + f.name }
func (f *fake) Run(context.Context, *measure.Env) (result.Result, error) {
	if f.clk != nil {
		f.clk.Step(f.step)
	}
	return f.res, f.err
}

func names(ms []measure.Measurement) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name())
	}
	return strings.Join(out, ",")
}

func TestSelect(t *testing.T) {
	r := measure.NewRegistry(&fake{name: "pods.startup"}, &fake{name: "pods.churn"}, &fake{name: "etcd.health"}, &fake{name: "api.responsiveness"})
	cases := []struct {
		only, skip []string
		want       string
		err        string
	}{
		{want: "pods.startup,pods.churn,etcd.health,api.responsiveness"},
		{only: []string{"pods."}, want: "pods.startup,pods.churn"},
		{only: []string{"pods."}, skip: []string{"pods.churn"}, want: "pods.startup"},
		{skip: []string{"pods.", "etcd.health"}, want: "api.responsiveness"},
		{only: []string{"etcd.health", "api.responsiveness"}, want: "etcd.health,api.responsiveness"},
		{only: []string{"pods"}, err: `unknown measurement "pods"`},
		{skip: []string{"nope."}, err: "unknown measurement"},
	}
	for _, c := range cases {
		got, err := r.Select(c.only, c.skip)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Select(%v,%v) error = %v, want %q", c.only, c.skip, err, c.err)
			}
			continue
		}
		if err != nil || names(got) != c.want {
			t.Errorf("Select(%v,%v) = %s, %v; want %s", c.only, c.skip, names(got), err, c.want)
		}
	}
}

func TestDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	measure.NewRegistry(&fake{name: "a"}, &fake{name: "a"})
}

func TestRunOne(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		m          *fake
		wantStatus result.Status
		wantReason string
	}{
		{"pass", &fake{name: "x", res: result.Result{Status: result.StatusPass}}, result.StatusPass, ""},
		{"measured bad", &fake{name: "x", res: result.Result{Status: result.StatusFail, Reason: "slow"}}, result.StatusFail, "slow"},
		{"skip", &fake{name: "x", err: measure.Skipf("no permission to get %s", "/metrics")}, result.StatusSkip, "no permission to get /metrics"},
		{"wrapped skip", &fake{name: "x", err: errorsJoin(measure.Skipf("unreachable"))}, result.StatusSkip, "unreachable"},
		{"error", &fake{name: "x", err: errors.New("boom")}, result.StatusError, "boom"},
		{"no status", &fake{name: "x"}, result.StatusError, "invalid status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			c.m.clk, c.m.step = clk, 3*time.Second
			res := measure.RunOne(context.Background(), &measure.Env{Clock: clk}, c.m)
			if res.Status != c.wantStatus || !strings.Contains(res.Reason, c.wantReason) {
				t.Fatalf("status %s reason %q, want %s %q", res.Status, res.Reason, c.wantStatus, c.wantReason)
			}
			if res.Name != "x" || !res.Start.Equal(t0) || res.End.Sub(res.Start) != 3*time.Second {
				t.Fatalf("name/start/end not filled: %+v", res)
			}
		})
	}
}

func errorsJoin(err error) error { return errors.Join(errors.New("context"), err) }

type bench struct{ fake }

func (bench) Spec() measure.Spec { return measure.Spec{Kind: measure.Benchmark} }

func TestKindOf(t *testing.T) {
	if measure.KindOf(&fake{}) != measure.ReadOnly || measure.KindOf(&bench{}) != measure.Benchmark {
		t.Fatal("KindOf misclassifies")
	}
}
