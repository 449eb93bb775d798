package lab

import (
	"testing"
	"time"
)

// The bucket spends one credit per I/O, refills at the baseline, is exhausted exactly when the credits run
// out and bursts again once a tenth of it is back.
func TestCreditBucket(t *testing.T) {
	b := CreditBucket{Capacity: 1000, Credits: 1000, BaselineIOPS: 10, BurstIOPS: 3000}
	tick := 100 * time.Millisecond
	// 51 I/Os per tick against a refill of 1: the bucket lasts 1000/50 = 20 ticks.
	n := 0
	for !b.Step(51, tick) {
		n++
		if b.Limit() != 3000 {
			t.Fatalf("limit %v while bursting", b.Limit())
		}
	}
	if n != 19 || !b.Exhausted || b.Limit() != 10 {
		t.Fatalf("exhausted after %d ticks (want 19 quiet ones), exhausted %v, limit %v", n, b.Exhausted, b.Limit())
	}
	// At the baseline the balance stays empty: no refill while the disk is busy at its limit.
	for range 100 {
		if b.Step(1, tick) {
			t.Fatal("refilled while spending at the baseline")
		}
	}
	// Idle: a tenth of the capacity (100 credits) comes back in 10 s at 10 IOPS.
	ticks := 0
	for !b.Step(0, tick) {
		ticks++
	}
	if b.Exhausted || ticks < 95 || ticks > 101 {
		t.Fatalf("refilled after %d idle ticks, exhausted %v", ticks, b.Exhausted)
	}
	// Never above the capacity.
	for range 10000 {
		b.Step(0, tick)
	}
	if b.Credits != 1000 {
		t.Errorf("credits %v above the capacity", b.Credits)
	}
}
