package stats

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}, {0, 1}} {
		if got := Percentile(s, c.q); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("empty")
	}
}

func TestSpread(t *testing.T) {
	in := []float64{5, 1, 9, 3, 7}
	if med, lo, hi := Spread(in); med != 5 || lo != 1 || hi != 9 {
		t.Fatalf("spread %v %v %v", med, lo, hi)
	}
	if in[0] != 5 {
		t.Error("Spread sorted its input in place")
	}
	if med, lo, hi := Spread([]float64{2}); med != 2 || lo != 2 || hi != 2 {
		t.Errorf("one sample: %v %v %v", med, lo, hi)
	}
	if med := Median([]float64{4, 1, 3, 2}); med != 3 {
		t.Errorf("even count: median %v, want the upper middle 3", med)
	}
	if med, lo, hi := Spread(nil); med != 0 || lo != 0 || hi != 0 {
		t.Errorf("empty: %v %v %v", med, lo, hi)
	}
}

func TestEarlierLater(t *testing.T) {
	a := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b := a.Add(time.Second)
	for _, c := range []struct{ x, y, earlier, later time.Time }{{a, b, a, b}, {b, a, a, b}, {a, a, a, a}} {
		if got := Earlier(c.x, c.y); !got.Equal(c.earlier) {
			t.Errorf("Earlier(%v, %v) = %v", c.x, c.y, got)
		}
		if got := Later(c.x, c.y); !got.Equal(c.later) {
			t.Errorf("Later(%v, %v) = %v", c.x, c.y, got)
		}
	}
}
