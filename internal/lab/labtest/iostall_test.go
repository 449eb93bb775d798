package labtest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestIOStallWorstAndExplains(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// Read every 500 ms for 10 s: idle but for 1.2 s of stall between 4 and 6 s (60% of those 2 s).
	s := &IOStall{}
	var total uint64
	for i := 0; i <= 20; i++ {
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		if i > 8 && i <= 12 {
			total += 300_000
		}
		s.at, s.us = append(s.at, at), append(s.us, total)
	}
	if w := s.Worst(t0, t0.Add(10*time.Second), 2*time.Second); w < 59.9 || w > 60.1 {
		t.Errorf("worst 2 s: %.2f%%, want 60%%", w)
	}
	// Over 10 s the same stall is 12%; before it, nothing.
	if w := s.Worst(t0, t0.Add(10*time.Second), 10*time.Second); w < 11.9 || w > 12.1 {
		t.Errorf("worst 10 s: %.2f%%, want 12%%", w)
	}
	if w := s.Worst(t0, t0.Add(4*time.Second), 2*time.Second); w != 0 {
		t.Errorf("worst 2 s before the stall: %.2f%%, want 0", w)
	}
	// A span longer than the readings cover has no share.
	if w := s.Worst(t0, t0.Add(10*time.Second), 11*time.Second); w != 0 {
		t.Errorf("worst 11 s of 10 s of readings: %.2f%%, want 0", w)
	}

	f := result.Finding{ID: IOPressureRule, Summary: "lab-node-1: stalled", Threshold: result.Threshold{Value: 10}}
	if !s.Explains(t, f, t0, t0.Add(10*time.Second), 2*time.Second) {
		t.Error("a 60% stall does not explain a 10% finding")
	}
	if s.Explains(t, f, t0, t0.Add(4*time.Second), 2*time.Second) {
		t.Error("an idle machine explains an I/O pressure finding")
	}
	if other := (result.Finding{ID: "KS-NODE-DISK-SYNC", Threshold: result.Threshold{Value: 0.002}}); s.Explains(t, other, t0, t0.Add(10*time.Second), 2*time.Second) {
		t.Error("the machine's stall explains a finding of another rule")
	}
	// Half the threshold at least: 12% over 10 s explains a 20% threshold, not a 30% one.
	f.Threshold.Value = 20
	if !s.Explains(t, f, t0, t0.Add(10*time.Second), 10*time.Second) {
		t.Error("12% does not explain a 20% threshold's finding (half of it: 10%)")
	}
	f.Threshold.Value = 30
	if s.Explains(t, f, t0, t0.Add(10*time.Second), 10*time.Second) {
		t.Error("12% explains a 30% threshold's finding")
	}
}
