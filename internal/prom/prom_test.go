package prom

import (
	"compress/gzip"
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
	cases := []struct {
		name   string
		h      *Histogram
		q      float64
		want   float64
		wantOK bool
	}{
		// 100 observations: 50 in (0,0.1], 40 in (0.1,0.5], 10 in (0.5,1].
		{"median in first bucket", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.5, 0.1, true},
		{"p90 at bucket edge", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.9, 0.5, true},
		{"p95 interpolated", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.95, 0.75, true},
		{"p25 interpolated from 0", hist([]float64{0.1, 0.5, 1, inf}, []float64{50, 90, 100, 100}), 0.25, 0.05, true},
		{"in +Inf: highest finite bound", hist([]float64{0.1, 0.5, inf}, []float64{1, 2, 10}), 0.99, 0.5, true},
		{"empty", hist([]float64{0.1, inf}, []float64{0, 0}), 0.99, 0, false},
		{"bad q", hist([]float64{0.1, inf}, []float64{1, 1}), 1.5, 0, false},
	}
	for _, c := range cases {
		got, ok := c.h.Quantile(c.q)
		if ok != c.wantOK || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Quantile(%v) = %v,%v want %v,%v", c.name, c.q, got, ok, c.want, c.wantOK)
		}
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
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in), time.Now())
		if err != nil {
			return
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
