package lab

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPlanRunBackground: a Background step runs beside the steps that follow it (the next step runs while it
// is still blocked), a step with AfterBackground runs only once it is done, and its error is run's.
func TestPlanRunBackground(t *testing.T) {
	u := &upRun{step: func(string, ...any) {}}
	release := make(chan struct{})
	var bgDone atomic.Bool
	var order []string
	p := &Plan{Steps: []Step{
		{Name: "bg", Background: true, Do: func(ctx context.Context, _ *upRun) error {
			select {
			case <-release: // only the next step releases it: run must not wait for it here
			case <-ctx.Done():
				return ctx.Err()
			}
			bgDone.Store(true)
			return nil
		}},
		{Name: "next", Do: func(context.Context, *upRun) error { order = append(order, "next"); close(release); return nil }},
		{Name: "after", AfterBackground: true, Do: func(context.Context, *upRun) error {
			if !bgDone.Load() {
				t.Error("the AfterBackground step ran before the background step ended")
			}
			order = append(order, "after")
			return nil
		}},
	}}
	if err := p.run(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "next,after" {
		t.Errorf("order %v", order)
	}

	// A background step's error is run's, after the foreground steps; a foreground failure ends it.
	boom := errors.New("boom")
	p = &Plan{Steps: []Step{
		{Name: "bg", Background: true, Do: func(context.Context, *upRun) error { return boom }},
		{Name: "fg", Do: func(context.Context, *upRun) error { return nil }},
	}}
	if err := p.run(context.Background(), u); !errors.Is(err, boom) || !strings.Contains(err.Error(), "bg:") {
		t.Errorf("run = %v, want the background step's error", err)
	}
	p = &Plan{Steps: []Step{
		{Name: "bg", Background: true, Do: func(ctx context.Context, _ *upRun) error { <-ctx.Done(); return ctx.Err() }},
		{Name: "fg", Do: func(context.Context, *upRun) error { return boom }},
	}}
	if err := p.run(context.Background(), u); !errors.Is(err, boom) {
		t.Errorf("run = %v, want the foreground step's error (the background one cancelled)", err)
	}
}
