package agent

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DNSWait is one name's history while a client waited for it to resolve.
type DNSWait struct {
	Name string `json:"name"`
	// FirstAttempt and Resolved (zero: never) are the client's wall-clock times.
	FirstAttempt time.Time `json:"first_attempt"`
	Resolved     time.Time `json:"resolved,omitzero"`
	Attempts     int       `json:"attempts"`
	// NXDomain counts the attempts answered "no such host" (a cached negative answer keeps them coming).
	NXDomain  int      `json:"nxdomain"`
	LastError string   `json:"last_error,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
}

// Lookup resolves one name (net.Resolver.LookupHost, or a test double).
type Lookup func(ctx context.Context, name string) ([]string, error)

// WaitResolve asks for every name every interval, as a client waiting for its peers would, until each has
// resolved or ctx ends. Each attempt is bounded by attemptTimeout. asked (if not nil) is called once, when
// every name has been asked for once.
func WaitResolve(ctx context.Context, lookup Lookup, names []string, interval, attemptTimeout time.Duration, asked func()) []DNSWait {
	out := make([]DNSWait, len(names))
	var wg sync.WaitGroup
	var unasked atomic.Int64
	unasked.Store(int64(len(names)))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &out[i]
			w.Name = name
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				now := time.Now()
				if w.Attempts == 0 {
					w.FirstAttempt = now
				}
				w.Attempts++
				actx, cancel := context.WithTimeout(ctx, attemptTimeout)
				addrs, err := lookup(actx, name)
				cancel()
				if w.Attempts == 1 && unasked.Add(-1) == 0 && asked != nil {
					asked()
				}
				if err == nil && len(addrs) > 0 {
					w.Resolved, w.Addresses, w.LastError = time.Now(), addrs, ""
					return
				}
				var de *net.DNSError
				if errors.As(err, &de) && de.IsNotFound && !de.IsTimeout {
					w.NXDomain++
				}
				if err != nil {
					w.LastError = err.Error()
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
	return out
}
