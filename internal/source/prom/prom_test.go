package prom

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, name string) *Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	s, err := Parse(r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hist(bounds, counts []float64) *Histogram {
	return &Histogram{Bounds: bounds, Counts: counts, Count: counts[len(counts)-1]}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	type bounds struct {
		lower, upper float64
		unbounded    string
	}
	// Prometheus's own histogram_quantile cases (promql/promqltest/testdata/histograms.test, at 50m: ten
	// times the per-step counts), recomputed here by hand.
	positive := hist([]float64{0.1, 0.2, 1, inf}, []float64{50, 70, 110, 120})
	negative := hist([]float64{-0.2, -0.1, 0.3, inf}, []float64{10, 20, 20, 30})
	// sum by (le) over four series: 0.1 -> 10, 0.2 -> 19, +Inf -> 25.
	summed := hist([]float64{0.1, 0.2, inf}, []float64{10, 19, 25})
	// Non-monotonic counts: the envelope is 20, 20, 50, 50, 90, 90.
	nonmono := hist([]float64{0.1, 1, 10, 100, 1000, inf}, []float64{20, 10, 50, 40, 90, 80})
	cases := []struct {
		name   string
		h      *Histogram
		q      float64
		want   float64
		b      bounds
		wantOK bool
	}{
		// 100 observations: 50 in (0,0.1], 40 in (0.1,0.5], 10 in (0.5,1].
		{"median in first bucket", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.5, 0.1, bounds{0, 0.1, ""}, true},
		{"p90 at bucket edge", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.9, 0.5, bounds{0.1, 0.5, ""}, true},
		{"p95 interpolated", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.95, 0.75, bounds{0.5, 1, ""}, true},
		{"p25 interpolated from 0", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.25, 0.05, bounds{0, 0.1, ""}, true},
		{"in +Inf: highest finite bound", hist([]float64{0.1, 0.5, inf}, []float64{1, 2, 10}), 0.99, 0.5, bounds{0.5, 0.5, "upper"}, true},
		{"empty", hist([]float64{0.1, inf}, []float64{0, 0}), 0.99, 0, bounds{}, false},
		{"bad q", hist([]float64{0.1, inf}, []float64{1, 1}), 1.5, 0, bounds{}, false},
		{"negative q", hist([]float64{0.1, inf}, []float64{1, 1}), -0.1, 0, bounds{}, false},
		{"NaN q", hist([]float64{0.1, inf}, []float64{1, 1}), math.NaN(), 0, bounds{}, false},
		{"only +Inf", hist([]float64{inf}, []float64{5}), 0.5, 0, bounds{}, false},
		{"no +Inf bucket", &Histogram{Bounds: []float64{0.1, 1}, Counts: []float64{1, 2}, Count: 2}, 0.5, 0, bounds{}, false},

		{"prometheus positive q=0", positive, 0, 0, bounds{0, 0.1, ""}, true},
		{"prometheus positive q=0.2", positive, 0.2, 0.048, bounds{0, 0.1, ""}, true},
		{"prometheus positive q=0.5", positive, 0.5, 0.15, bounds{0.1, 0.2, ""}, true},
		{"prometheus positive q=0.8", positive, 0.8, 0.72, bounds{0.2, 1, ""}, true},
		{"prometheus positive q=1", positive, 1, 1, bounds{1, 1, "upper"}, true},
		{"prometheus negative q=0: upper edge <= 0", negative, 0, -0.2, bounds{-0.2, -0.2, "lower"}, true},
		{"prometheus negative q=0.2", negative, 0.2, -0.2, bounds{-0.2, -0.2, "lower"}, true},
		{"prometheus negative q=0.5", negative, 0.5, -0.15, bounds{-0.2, -0.1, ""}, true},
		{"prometheus negative q=0.8", negative, 0.8, 0.3, bounds{0.3, 0.3, "upper"}, true},
		{"prometheus summed q=0.3", summed, 0.3, 0.075, bounds{0, 0.1, ""}, true},
		{"prometheus summed q=0.5", summed, 0.5, 0.1 + 0.1*2.5/9, bounds{0.1, 0.2, ""}, true},
		{"prometheus nonmonotonic q=0.01", nonmono, 0.01, 0.0045, bounds{0, 0.1, ""}, true},
		{"prometheus nonmonotonic q=0.5", nonmono, 0.5, 8.5, bounds{1, 10, ""}, true},
		{"prometheus nonmonotonic q=0.99", nonmono, 0.99, 979.75, bounds{100, 1000, ""}, true},

		// Unsorted buckets are sorted; buckets with the same bound merged (5 in (0, 0.1]).
		{"unsorted", &Histogram{Bounds: []float64{1, inf, 0.1}, Counts: []float64{10, 10, 5}, Count: 10}, 0.5, 0.1, bounds{0, 0.1, ""}, true},
		{"same bound merged", hist([]float64{0.1, 0.1, 1, inf}, []float64{2, 3, 10, 10}), 0.5, 0.1, bounds{0, 0.1, ""}, true},
		// A rounding-size increase is ignored: without that, q=1 would interpolate to the top of (0.1, 0.2].
		{"rounding error ignored", hist([]float64{0.1, 0.2, inf}, []float64{100, 100 + 1e-11, 100 + 1e-11}), 1, 0.1, bounds{0, 0.1, ""}, true},
		// q=0 on an empty first bucket is histogram_quantile's 0/0 (NaN): no estimate.
		{"q=0, empty first bucket", hist([]float64{0.1, 1, inf}, []float64{0, 5, 5}), 0, 0, bounds{}, false},
		// apislo's latency_p99_single of 0.0495 s: 95% of the way through (0.04, 0.05].
		{"apiserver SLI buckets", hist([]float64{0.005, 0.025, 0.04, 0.05, 0.1, inf}, []float64{0, 0, 0, 100, 100, 100}), 0.95, 0.0495, bounds{0.04, 0.05, ""}, true},
	}
	for _, c := range cases {
		got, ok := c.h.Quantile(c.q)
		if ok != c.wantOK || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Quantile(%v) = %v,%v want %v,%v", c.name, c.q, got, ok, c.want, c.wantOK)
		}
		e, ok := c.h.QuantileEstimate(c.q)
		if !ok {
			continue
		}
		if e.Value != got || math.Abs(e.Bounds.Lower-c.b.lower) > 1e-12 || math.Abs(e.Bounds.Upper-c.b.upper) > 1e-12 || e.Bounds.Unbounded != c.b.unbounded {
			t.Errorf("%s: QuantileEstimate(%v) = %+v, want bounds %+v", c.name, c.q, e, c.b)
		}
		if e.Value < e.Bounds.Lower || e.Value > e.Bounds.Upper {
			t.Errorf("%s: %v outside its bounds %+v", c.name, e.Value, e.Bounds)
		}
	}
	// The input histogram is left as it was (sorting and merging work on a copy).
	h := &Histogram{Bounds: []float64{1, inf, 0.1}, Counts: []float64{10, 10, 5}, Count: 10}
	h.Quantile(0.5)
	if h.Bounds[0] != 1 || h.Counts[2] != 5 {
		t.Fatalf("Quantile changed its histogram: %+v", h)
	}
}

func TestDeltaAndReset(t *testing.T) {
	before, err := Parse(strings.NewReader("# TYPE c counter\nc{a=\"x\"} 10\nc{a=\"y\"} 50\n# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 6\nh_sum 3\nh_count 6\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// y was reset (process restart): its delta is the after-value.
	after, err := Parse(strings.NewReader("# TYPE c counter\nc{a=\"x\"} 25\nc{a=\"y\"} 7\nc{a=\"z\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 9\nh_bucket{le=\"+Inf\"} 12\nh_sum 7\nh_count 12\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range Delta(before, after, "c") {
		got[s.Labels["a"]] = s.Value
	}
	if got["x"] != 15 || got["y"] != 7 || got["z"] != 2 {
		t.Fatalf("counter deltas %v", got)
	}
	h := Delta(before, after, "h")[0].Hist
	if h.Count != 6 || h.Counts[0] != 4 || h.Counts[1] != 6 || h.Sum != 4 {
		t.Fatalf("histogram delta %+v", h)
	}
}

// TestSummaryDelta: a summary keeps its sum and count over the window (Go's GC pauses are one); a reset
// counts from zero.
func TestSummaryDelta(t *testing.T) {
	at := func(in string) *Snapshot {
		s, err := Parse(strings.NewReader("# TYPE go_gc_duration_seconds summary\n"+in), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := at("go_gc_duration_seconds{quantile=\"0.5\"} 0.0001\ngo_gc_duration_seconds{quantile=\"1\"} 0.002\ngo_gc_duration_seconds_sum 0.25\ngo_gc_duration_seconds_count 1000\n")
	after := at("go_gc_duration_seconds{quantile=\"0.5\"} 0.0002\ngo_gc_duration_seconds{quantile=\"1\"} 0.004\ngo_gc_duration_seconds_sum 0.75\ngo_gc_duration_seconds_count 1100\n")
	d := Delta(before, after, "go_gc_duration_seconds")
	if len(d) != 1 || d[0].Summary == nil || math.Abs(d[0].Summary.Sum-0.5) > 1e-12 || d[0].Summary.Count != 100 {
		t.Fatalf("summary delta %+v", d)
	}
	if d := Delta(after, before, "go_gc_duration_seconds"); d[0].Summary.Count != 1000 || d[0].Summary.Sum != 0.25 {
		t.Fatalf("reset: %+v", d[0].Summary)
	}
}

func TestRealApiserverScrapes(t *testing.T) {
	a, b := load(t, "apiserver-metrics-conflict-storm-1.txt.gz"), load(t, "apiserver-metrics-conflict-storm-2.txt.gz")
	conflicts := GroupCounters(Delta(a, b, "apiserver_request_total"), []string{"resource"}, func(l Labels) bool { return l["code"] == "409" })
	var ipam float64
	for _, g := range conflicts {
		if g.Labels["resource"] == "ipamblocks" {
			ipam = g.Value
		}
	}
	// The two scrapes were taken ~10 s apart during the lab's conflict storm (~50 409s/s).
	if ipam < 100 {
		t.Fatalf("409 delta on ipamblocks = %v over the window; the storm should show hundreds", ipam)
	}
	lat := GroupCounters(Delta(a, b, "apiserver_request_sli_duration_seconds"), []string{"verb", "resource"}, nil)
	found := false
	for _, g := range lat {
		if g.Labels["verb"] == "PUT" && g.Labels["resource"] == "ipamblocks" {
			p99, ok := g.Hist.Quantile(0.99)
			if !ok || p99 <= 0 || p99 > 1 {
				t.Fatalf("PUT ipamblocks p99 = %v %v", p99, ok)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no PUT ipamblocks latency histogram")
	}
}

func TestRealEtcdScrape(t *testing.T) {
	s := load(t, "etcd-metrics-2.txt")
	if q, ok := s.Gauge("etcd_server_quota_backend_bytes", nil); !ok || q != 2<<30 {
		t.Fatalf("quota %v %v (etcd's default is 2 GiB)", q, ok)
	}
	h := s.Series("etcd_disk_wal_fsync_duration_seconds")
	if len(h) != 1 || h[0].Hist == nil || h[0].Hist.Count == 0 {
		t.Fatalf("wal fsync histogram %+v", h)
	}
}

func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"garbage":    "this is { not metrics",
		"bad value":  "# TYPE x counter\nx abc\n",
		"bad labels": "x{a=b} 1\n",
		"html":       "<html><body>Forbidden</body></html>",
	} {
		if _, err := Parse(strings.NewReader(in), time.Now()); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"# TYPE c counter\nc{a=\"x\"} 1\n", "h_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n", "x 1e308\n", "", "# HELP\n"} {
		f.Add(seed)
	}
	// The lab's real scrapes: etcd's, and the head of the apiserver's (each family's header and first series).
	if b, err := os.ReadFile("testdata/etcd-metrics-1.txt"); err == nil {
		f.Add(string(b))
	}
	if b := readGz(f, "apiserver-metrics-conflict-storm-1.txt.gz"); len(b) > 0 {
		f.Add(string(b[:min(len(b), 16<<10)]))
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in), time.Now())
		if err != nil {
			return
		}
		if s.BadLines > 0 && s.FirstBad == "" || s.BadLines > maxBadLines {
			t.Fatalf("bad lines %d, first %q", s.BadLines, s.FirstBad)
		}
		for name := range s.Families {
			for _, se := range s.Series(name) {
				if se.Hist != nil {
					se.Hist.Quantile(0.99)
				}
			}
			Delta(s, s, name)
		}
	})
}

// TestKeep: only the named families stay; a name the scrape lacks is no error.
func TestKeep(t *testing.T) {
	s, err := Parse(strings.NewReader("# TYPE a counter\na 1\n# TYPE b counter\nb 2\n# TYPE c gauge\nc 3\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Keep("a", "c", "absent")
	if len(s.Families) != 2 || s.Families["a"] == nil || s.Families["c"] == nil {
		t.Fatalf("kept %v", s.Families)
	}
}

// TestParseSkipsBadLines: a bad line among good ones is counted and skipped, the rest read — including the
// samples after it and the real apiserver scrape it is spliced into.
func TestParseSkipsBadLines(t *testing.T) {
	in := "# TYPE a counter\na 1\na{x=\"1\"} abc\n# TYPE b gauge\nb 2\nb{broken 3\nb{y=\"2\"} 4\n"
	s, err := Parse(strings.NewReader(in), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.BadLines != 2 || !strings.HasPrefix(s.FirstBad, "line 3: ") {
		t.Fatalf("bad lines %d, first %q", s.BadLines, s.FirstBad)
	}
	if v, ok := s.Gauge("b", Labels{"y": "2"}); !ok || v != 4 {
		t.Errorf("b{y=2} after the bad lines: %v %v", v, ok)
	}
	if len(s.Series("a")) != 1 {
		t.Errorf("a: %+v", s.Series("a"))
	}
	// The lab's etcd scrape with a garbage line in its middle: one line lost, every family kept.
	raw, err := os.ReadFile("testdata/etcd-metrics-1.txt")
	if err != nil {
		t.Fatal(err)
	}
	good, err := Parse(bytes.NewReader(raw), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	mid := len(lines) / 2
	spliced := strings.Join(lines[:mid], "") + "etcd_bogus{le=\"1\" 1 2 3\n" + strings.Join(lines[mid:], "")
	got, err := Parse(strings.NewReader(spliced), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got.BadLines != 1 || len(got.Families) != len(good.Families) || !strings.HasPrefix(got.FirstBad, fmt.Sprintf("line %d: ", mid+1)) {
		t.Errorf("spliced: %d bad (%q), %d families, want 1 and %d", got.BadLines, got.FirstBad, len(got.Families), len(good.Families))
	}
}

// readGz reads a gzipped file of testdata (nil when absent).
func readGz(f *testing.F, name string) []byte {
	fh, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		return nil
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		f.Fatal(err)
	}
	b, err := io.ReadAll(gz)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
