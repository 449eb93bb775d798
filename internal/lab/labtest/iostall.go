package labtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/hostfs"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// IOPressureRule is the rule that judges a node's PSI io "full": on the lab, whose real nodes share this
// machine's kernel, it reads the machine's pressure, which work beside the lab drives (CI's unit-test lane, a
// build, another lab node's agent running its sync probe).
const IOPressureRule = "KS-NODE-IO-PRESSURE"

// IOStall is this machine's own reading of /proc/pressure/io's "full" stall counter over a test, independent
// of the product: a healthy-lab test allows an I/O pressure finding only when the machine stalled that much
// by this reading too (a finding the machine's counter does not bear out still fails the test).
type IOStall struct {
	mu sync.Mutex
	at []time.Time
	us []uint64
}

// SampleIOStall reads the machine's io "full" stall counter now and every `every` until ctx ends or the test
// does. Without PSI (a kernel without it) it records nothing, and Worst is 0.
func SampleIOStall(ctx context.Context, t *testing.T, every time.Duration) *IOStall {
	s := &IOStall{}
	s.read()
	ctx, cancel := context.WithCancel(ctx)
	tick := time.NewTicker(every)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.read()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

func (s *IOStall) read() {
	b, err := os.ReadFile("/proc/pressure/io")
	if err != nil {
		return
	}
	_, full, err := hostfs.ParsePSI(b)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.at, s.us = append(s.at, time.Now()), append(s.us, full.TotalMicros)
	s.mu.Unlock()
}

// Worst is the highest share (percent) of any span of at least `span` within [from, to] in which every
// non-idle task of the machine stalled on I/O.
func (s *IOStall) Worst(from, to time.Time, span time.Duration) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := 0.0
	for i := range s.at {
		if s.at[i].Before(from) {
			continue
		}
		for j := i + 1; j < len(s.at) && !s.at[j].After(to); j++ {
			if d := s.at[j].Sub(s.at[i]); d >= span {
				w = max(w, 100*float64(s.us[j]-s.us[i])/float64(d.Microseconds()))
				break
			}
		}
	}
	return w
}

// Explains says whether finding f is the machine's own I/O stall: an IOPressureRule finding when this
// reading saw the machine stall at least half the rule's threshold over some span of `span` in [from, to]
// (half: the two readings' spans do not coincide). It logs the finding it lets pass.
func (s *IOStall) Explains(t *testing.T, f result.Finding, from, to time.Time, span time.Duration) bool {
	t.Helper()
	if f.ID != IOPressureRule {
		return false
	}
	w := s.Worst(from, to, span)
	if w < 0.5*f.Threshold.Value {
		return false
	}
	t.Logf("%s (%s): this machine's own io full stall reached %.1f%% over %v in the same window (the lab's nodes share its kernel)",
		f.ID, f.Summary, w, span)
	return true
}
