package agent

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitResolve: a name that starts resolving after a few NXDOMAIN answers is reported with its attempts
// and the time it resolved; one that never does is reported unresolved when the wait ends.
func TestWaitResolve(t *testing.T) {
	var calls atomic.Int32
	lookup := func(ctx context.Context, name string) ([]string, error) {
		if name == "late.example." && calls.Add(1) > 3 {
			return []string{"198.18.0.7"}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	asked := make(chan struct{})
	got := WaitResolve(ctx, lookup, []string{"late.example.", "never.example."}, 10*time.Millisecond, time.Second, func() { close(asked) })
	select {
	case <-asked:
	default:
		t.Error("asked was not called")
	}
	late, never := got[0], got[1]
	if late.Resolved.IsZero() || late.Attempts != 4 || late.NXDomain != 3 || late.Addresses[0] != "198.18.0.7" || late.FirstAttempt.Before(start) ||
		late.Resolved.Before(late.FirstAttempt) {
		t.Errorf("late: %+v", late)
	}
	if !never.Resolved.IsZero() || never.Attempts < 5 || never.NXDomain != never.Attempts || never.LastError == "" {
		t.Errorf("never: %+v", never)
	}
}
