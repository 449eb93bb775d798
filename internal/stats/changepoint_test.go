package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// series draws n points: the first knee at level a, the rest at level b, with multiplicative log-normal noise
// of the given sigma (latencies are skewed like that), from a fixed seed.
func series(seed uint64, n, knee int, a, b, sigma float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, n)
	for i := range x {
		lvl := a
		if i >= knee {
			lvl = b
		}
		x[i] = lvl * math.Exp(sigma*r.NormFloat64())
	}
	return x
}

func logs(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Log(v)
	}
	return out
}

func TestChangesFindsKnee(t *testing.T) {
	for _, c := range []struct {
		name       string
		n, knee    int
		a, b, sig  float64
		tolerance  int
		transformd bool
	}{
		{"start latency 0.8s -> 9s", 400, 310, 0.8, 9, 0.3, 3, true},
		{"fdatasync 0.4ms -> 180ms", 600, 150, 0.0004, 0.18, 0.5, 3, true},
		{"modest 2x rise, noisy", 1000, 700, 1, 2, 0.3, 25, true},
		{"early knee", 300, 20, 1, 5, 0.2, 3, true},
	} {
		for seed := uint64(1); seed <= 20; seed++ {
			x := series(seed, c.n, c.knee, c.a, c.b, c.sig)
			cps := Changes(logs(x), ChangeOptions{})
			if len(cps) != 1 {
				t.Errorf("%s seed %d: change points %v, want one near %d", c.name, seed, cps, c.knee)
				continue
			}
			if d := cps[0] - c.knee; d < -c.tolerance || d > c.tolerance {
				t.Errorf("%s seed %d: change at %d, want %d±%d", c.name, seed, cps[0], c.knee, c.tolerance)
			}
			segs := Segments(x, cps)
			if len(segs) != 2 || math.Abs(segs[0].Median/c.a-1) > 0.15 || math.Abs(segs[1].Median/c.b-1) > 0.15 {
				t.Errorf("%s seed %d: segments %+v, want medians near %v and %v", c.name, seed, segs, c.a, c.b)
			}
		}
	}
}

// A series with no change raises nothing, however noisy and whatever its level: a steady slow disk is not a
// sudden slowdown.
func TestChangesNoChange(t *testing.T) {
	alarms := 0
	runs := 0
	for li, lvl := range []float64{0.0004, 0.8, 9, 180} {
		for si, sig := range []float64{0.05, 0.3, 1} {
			for seed := uint64(1); seed <= 10; seed++ {
				x := series(seed*100+uint64(li*10+si), 500, 500, lvl, lvl, sig)
				runs++
				if cps := Changes(logs(x), ChangeOptions{}); len(cps) > 0 {
					alarms++
					t.Logf("level %v sigma %v seed %d: spurious changes %v", lvl, sig, seed, cps)
				}
			}
		}
	}
	// MBIC's false-alarm rate on i.i.d. normal data of this length is about 0.3% (1 in 400 measured).
	if alarms > runs/50 {
		t.Errorf("%d of %d steady series raised a change", alarms, runs)
	}
	// Also on the raw (skewed) values, and on constant and quantised series.
	if cps := Changes(make([]float64, 300), ChangeOptions{}); len(cps) > 0 {
		t.Errorf("all zeros: %v", cps)
	}
	r := rand.New(rand.NewPCG(7, 7))
	q := make([]float64, 600)
	for i := range q {
		q[i] = float64(r.IntN(3)) // a D-state count: 0, 1 or 2
	}
	if cps := Changes(q, ChangeOptions{Resolution: 1}); len(cps) > 0 {
		t.Errorf("quantised steady series: %v", cps)
	}
}

// A variance change with the same mean is a change too (a disk that starts to stall now and then).
func TestChangesVariance(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	x := make([]float64, 600)
	for i := range x {
		s := 1.0
		if i >= 300 {
			s = 6
		}
		x[i] = 10 + s*r.NormFloat64()
	}
	cps := Changes(x, ChangeOptions{})
	if len(cps) != 1 || cps[0] < 280 || cps[0] > 320 {
		t.Fatalf("variance change: %v, want one near 300", cps)
	}
}

func TestChangesSeveral(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var x []float64
	for _, lvl := range []float64{1, 4, 1.5} {
		for range 200 {
			x = append(x, lvl+0.2*r.NormFloat64())
		}
	}
	cps := Changes(x, ChangeOptions{})
	if len(cps) != 2 || abs(cps[0]-200) > 3 || abs(cps[1]-400) > 3 {
		t.Fatalf("changes %v, want [200 400]", cps)
	}
}

// A lone outlier may be cut out as a short segment of high variance, but it moves no segment's median: the
// level did not change.
func TestChangesLoneOutlier(t *testing.T) {
	x := series(9, 300, 300, 1, 1, 0.1)
	x[150] = 80
	for _, s := range Segments(x, Changes(logs(x), ChangeOptions{})) {
		if math.Abs(s.Median-1) > 0.1 {
			t.Errorf("one outlier moved a segment's median: %+v", s)
		}
	}
}

func TestChangesEdges(t *testing.T) {
	for _, x := range [][]float64{nil, {1}, {1, 2, 3}, {1, math.NaN(), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {math.Inf(1), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}} {
		if cps := Changes(x, ChangeOptions{}); len(cps) > 0 {
			t.Errorf("%v: %v", x, cps)
		}
	}
	if got := Segments([]float64{1, 2, 3, 10, 11, 12}, []int{3}); len(got) != 2 || got[0].Median != 2 || got[1].Median != 11 || got[1].Start != 3 || got[1].End != 6 {
		t.Errorf("segments %+v", got)
	}
}

// exact is optimal partitioning without pruning (Jackson et al. 2005), the reference PELT must agree with.
func exact(x []float64, minSeg int) []int {
	n := len(x)
	pen := 3 * math.Log(float64(n))
	scale := 0.0
	for _, v := range x {
		scale = max(scale, math.Abs(v))
	}
	floor := max(1e-18*scale*scale/4, math.SmallestNonzeroFloat64)
	cost := func(a, b int) float64 {
		var m, s float64
		for _, v := range x[a:b] {
			m += v
		}
		m /= float64(b - a)
		for _, v := range x[a:b] {
			s += (v - m) * (v - m)
		}
		v := max(s/float64(b-a), floor)
		l := float64(b - a)
		return l*(math.Log(2*math.Pi)+math.Log(v)+1) + math.Log(l)
	}
	f := make([]float64, n+1)
	last := make([]int, n+1)
	f[0] = -pen
	for t := 1; t <= n; t++ {
		f[t] = math.Inf(1)
		for s := 0; s <= t-minSeg; s++ {
			if s != 0 && s < minSeg {
				continue
			}
			if v := f[s] + cost(s, t) + pen; v < f[t] {
				f[t], last[t] = v, s
			}
		}
	}
	var cps []int
	for t := n; t > 0; t = last[t] {
		if last[t] > 0 {
			cps = append(cps, last[t])
		}
	}
	slices.Reverse(cps)
	return cps
}

func TestChangesMatchesExactSearch(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		var x []float64
		for range 1 + r.IntN(4) {
			lvl, sd := r.Float64()*5, 0.1+r.Float64()
			for range 10 + r.IntN(60) {
				x = append(x, lvl+sd*r.NormFloat64())
			}
		}
		got := Changes(x, ChangeOptions{})
		want := exact(x, 10)
		if !slices.Equal(got, want) {
			t.Errorf("seed %d (n=%d): PELT %v, exact %v", seed, len(x), got, want)
		}
	}
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func FuzzChanges(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209}, uint8(5))
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, minSeg uint8) {
		x := make([]float64, len(b))
		for i, v := range b {
			x[i] = float64(v)
		}
		o := ChangeOptions{MinSegment: int(minSeg % 20)}
		cps := Changes(x, o)
		m := max(o.MinSegment, 2)
		if o.MinSegment == 0 {
			m = 10
		}
		prev := 0
		for _, c := range cps {
			if c-prev < m || c <= 0 || c >= len(x) {
				t.Fatalf("change points %v break the minimum segment %d (n=%d)", cps, m, len(x))
			}
			prev = c
		}
		if len(cps) > 0 && len(x)-prev < m {
			t.Fatalf("last segment shorter than %d: %v (n=%d)", m, cps, len(x))
		}
		segs := Segments(x, cps)
		if len(x) > 0 && len(segs) != len(cps)+1 {
			t.Fatalf("%d segments for %d change points", len(segs), len(cps))
		}
	})
}
