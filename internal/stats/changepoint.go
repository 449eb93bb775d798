package stats

import (
	"math"
)

// Change-point detection: PELT (Killick, Fearnhead & Eckley, "Optimal detection of changepoints with a
// linear computational cost", JASA 2012) minimising the normal mean-and-variance cost with the MBIC penalty
// (Zhang & Siegmund, "A modified Bayes information criterion with applications to the analysis of comparative
// genomic hybridization data", Biometrics 2007), the way R's changepoint package computes cpt.meanvar(...,
// method="PELT", penalty="MBIC"): a segment of n points costs n·(log 2π + log σ̂² + 1) + log n (twice its
// negative log-likelihood plus MBIC's segment-length term) and every change point costs 3·log N (two
// parameters change, plus the location). PELT finds the exact optimum of that penalised cost, pruning
// candidate last change points that can never be optimal again, in linear time on typical series.

// ChangeOptions tune Changes.
type ChangeOptions struct {
	// MinSegment is the shortest segment allowed (at least 2, the fewest points a variance needs; default 10):
	// a brief burst is not a lasting change.
	MinSegment int
	// Resolution is the smallest difference the series can express (a clock's tick, a counter's unit);
	// segment variances are floored at (Resolution/2)² so that a run of identical values, which has no
	// variance, does not buy an unbounded likelihood. Default: 1e-9 times the series' largest magnitude.
	Resolution float64
	// PenaltyScale multiplies the MBIC penalty (default 1).
	PenaltyScale float64
}

// Changes returns the indices at which the series x changes its mean or variance: each index is the first
// point of a new segment, in increasing order. A series with no change, or shorter than two segments,
// returns none. Non-finite values are not allowed (callers drop them first); Changes ignores such a series.
func Changes(x []float64, o ChangeOptions) []int {
	n := len(x)
	minSeg := max(o.MinSegment, 2)
	if o.MinSegment == 0 {
		minSeg = 10
	}
	if n < 2*minSeg {
		return nil
	}
	scale := 0.0
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		scale = max(scale, math.Abs(v))
	}
	res := o.Resolution
	if res <= 0 {
		res = 1e-9 * scale
	}
	floor := max(res*res/4, math.SmallestNonzeroFloat64)
	penScale := o.PenaltyScale
	if penScale <= 0 {
		penScale = 1
	}
	pen := penScale * 3 * math.Log(float64(n))

	// Prefix sums of the values and their squares, shifted by the mean to keep the variance well conditioned.
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, v := range x {
		d := v - mean
		s1[i+1] = s1[i] + d
		s2[i+1] = s2[i] + d*d
	}
	cost := func(a, b int) float64 { // points a..b-1
		m := float64(b - a)
		sum := s1[b] - s1[a]
		v := (s2[b] - s2[a] - sum*sum/m) / m
		v = max(v, floor)
		return m*(math.Log(2*math.Pi)+math.Log(v)+1) + math.Log(m)
	}

	// f[t] is the optimal penalised cost of x[0:t]; last[t] the start of its final segment.
	f := make([]float64, n+1)
	last := make([]int, n+1)
	f[0] = -pen
	for t := 1; t < minSeg && t <= n; t++ {
		f[t] = math.Inf(1)
	}
	cands := []int{0}
	var vals []float64
	logN := math.Log(float64(n))
	for t := minSeg; t <= n; t++ {
		// The candidate that became admissible at t (a segment of at least minSeg ending at t).
		if s := t - minSeg; s >= minSeg {
			cands = append(cands, s)
		}
		best, arg := math.Inf(1), 0
		vals = vals[:0]
		for _, s := range cands {
			v := f[s] + cost(s, t) + pen
			vals = append(vals, v)
			if v < best {
				best, arg = v, s
			}
		}
		f[t], last[t] = best, arg
		// Prune (PELT's condition F(s) + C(s,t) + K > F(t)): splitting a segment never raises its likelihood
		// cost, and MBIC's log-length term can rise by at most log N, so K = -log N.
		kept := cands[:0]
		for i, s := range cands {
			if vals[i]-pen-logN <= best {
				kept = append(kept, s)
			}
		}
		cands = kept
	}
	var cps []int
	for t := n; t > 0; t = last[t] {
		if last[t] > 0 {
			cps = append(cps, last[t])
		}
	}
	for i, j := 0, len(cps)-1; i < j; i, j = i+1, j-1 {
		cps[i], cps[j] = cps[j], cps[i]
	}
	return cps
}

// Segment is a stretch of a series between change points, summarised by order statistics (robust to the
// outliers latency series carry).
type Segment struct {
	// Start is the first index, End one past the last.
	Start, End int
	Median     float64
	P99        float64
	Mean       float64
}

// Segments splits x at the change points cps (as Changes returns them) and summarises each piece.
func Segments(x []float64, cps []int) []Segment {
	bounds := append(append([]int{0}, cps...), len(x))
	var out []Segment
	for i := 0; i+1 < len(bounds); i++ {
		a, b := bounds[i], bounds[i+1]
		if a >= b || a < 0 || b > len(x) {
			continue
		}
		s := Sorted(x[a:b])
		var sum float64
		for _, v := range s {
			sum += v
		}
		out = append(out, Segment{Start: a, End: b, Median: Percentile(s, 0.5), P99: Percentile(s, 0.99), Mean: sum / float64(len(s))})
	}
	return out
}
