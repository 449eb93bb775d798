// Package stats holds the small order statistics kubeslow's measurements share.
package stats

import (
	"math"
	"sort"
	"time"
)

// Percentile is the nearest-rank percentile (q in 0..1) of sorted values, as clusterloader2 computes its
// percentiles; 0 for none.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Sorted returns a sorted copy of v.
func Sorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

// Spread is the middle value (the upper one of an even count) and the extremes of repeated runs; zeros for
// none.
func Spread(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := Sorted(v)
	return s[len(s)/2], s[0], s[len(s)-1]
}

// Median is Spread's middle value.
func Median(v []float64) float64 {
	med, _, _ := Spread(v)
	return med
}

// Earlier is the earlier of two times (a when they are equal).
func Earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Later is the later of two times (a when they are equal).
func Later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
