package diskprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// fioSync is the part of fio's JSON output (--output-format=json) the comparison reads: the first job's
// fdatasync latency distribution and its write IOPS.
type fioSync struct {
	P50, P99, Max time.Duration
	IOPS          float64
}

func parseFio(b []byte) (fioSync, error) {
	var doc struct {
		Jobs []struct {
			Write struct {
				IOPS float64 `json:"iops"`
			} `json:"write"`
			Sync struct {
				Lat struct {
					Max        float64            `json:"max"`
					N          int                `json:"N"`
					Percentile map[string]float64 `json:"percentile"`
				} `json:"lat_ns"`
			} `json:"sync"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fioSync{}, fmt.Errorf("fio output: %w", err)
	}
	if len(doc.Jobs) == 0 {
		return fioSync{}, fmt.Errorf("fio output: no jobs")
	}
	j := doc.Jobs[0]
	p50, ok50 := j.Sync.Lat.Percentile["50.000000"]
	p99, ok99 := j.Sync.Lat.Percentile["99.000000"]
	if j.Sync.Lat.N == 0 || !ok50 || !ok99 {
		return fioSync{}, fmt.Errorf("fio output: no fdatasync latencies (was --fdatasync=1 given?)")
	}
	return fioSync{P50: time.Duration(p50), P99: time.Duration(p99), Max: time.Duration(j.Sync.Lat.Max), IOPS: j.Write.IOPS}, nil
}

func TestParseFio(t *testing.T) {
	b, err := os.ReadFile("testdata/fio-etcd.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseFio(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.P99 != 16580608 || got.P50 != 831488 || got.Max != 95958224 || got.IOPS < 419 || got.IOPS > 420 {
		t.Errorf("parsed %+v", got)
	}
	for _, bad := range []string{"", "{}", `{"jobs":[]}`, `{"jobs":[{"sync":{"lat_ns":{"N":0}}}]}`, "[1,2"} {
		if _, err := parseFio([]byte(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func FuzzParseFio(f *testing.F) {
	if b, err := os.ReadFile("testdata/fio-etcd.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"jobs":[{"sync":{"lat_ns":{"N":1,"percentile":{"50.000000":1,"99.000000":2}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any input: an error or a value, never a panic.
		_, _ = parseFio(b)
	})
}

// BenchmarkSyncVsFio runs kubeslow's etcd recipe and Debian's fio with the same recipe on the same file,
// alternating which goes first, one pair per iteration (go test -run '^$' -bench SyncVsFio -benchtime 5x
// ./internal/source/diskprobe; KUBESLOW_DISK_DIR picks the disk, default the test's temporary directory), and
// reports the median ratio of the fdatasync p99s (kubeslow / fio; the goal is within 10%), the ratio of the
// two tools' median p99s over the rounds, and the median ratio of the p50s. KUBESLOW_DISK_SIZE overrides the
// recipe's 22 MiB (bytes).
func BenchmarkSyncVsFio(b *testing.B) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		b.Skip("fio is not installed (hack/deps.sh installs it)")
	}
	dir := os.Getenv("KUBESLOW_DISK_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "kubeslow-vs-fio.dat")
	recipe := EtcdRecipe
	if v := os.Getenv("KUBESLOW_DISK_SIZE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < int64(recipe.BlockSize) {
			b.Fatalf("KUBESLOW_DISK_SIZE %q: want a byte count of at least one block", v)
		}
		recipe.Size = n
	}
	ctx := context.Background()
	runFio := func() fioSync {
		os.Remove(path)
		defer os.Remove(path)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(cctx, fio, "--name=etcd", "--filename="+path, "--rw=write", "--ioengine=sync",
			"--fdatasync=1", "--size="+strconv.FormatInt(recipe.Size, 10), "--bs="+strconv.Itoa(recipe.BlockSize), "--output-format=json").Output()
		if err != nil {
			b.Fatalf("fio: %v", err)
		}
		s, err := parseFio(out)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	runOurs := func() SyncSummary {
		os.Remove(path)
		r, err := RunSyncFile(ctx, path, recipe)
		if err != nil {
			b.Fatal(err)
		}
		return r.Summary()
	}
	var ratios, p50s, ourP99s, fioP99s []float64
	for i := 0; b.Loop(); i++ {
		var ours SyncSummary
		var theirs fioSync
		if i%2 == 0 {
			ours, theirs = runOurs(), runFio()
		} else {
			theirs, ours = runFio(), runOurs()
		}
		r := float64(ours.P99) / float64(theirs.P99)
		ratios = append(ratios, r)
		ourP99s, fioP99s = append(ourP99s, float64(ours.P99)), append(fioP99s, float64(theirs.P99))
		p50s = append(p50s, float64(ours.P50)/float64(theirs.P50))
		b.Logf("round %d: kubeslow p50 %v p99 %v max %v %.0f IOPS | fio p50 %v p99 %v max %v %.0f IOPS | p99 ratio %.2f",
			i+1, ours.P50, ours.P99, ours.Max, ours.IOPS, theirs.P50, theirs.P99, theirs.Max, theirs.IOPS, r)
	}
	sort.Float64s(ratios)
	sort.Float64s(p50s)
	sort.Float64s(ourP99s)
	sort.Float64s(fioP99s)
	if len(ratios) > 0 {
		// The ratio of the medians over the rounds: each tool's typical p99 on this disk, compared.
		b.ReportMetric(ourP99s[len(ourP99s)/2]/fioP99s[len(fioP99s)/2], "p99-median-ratio")
		b.ReportMetric(p50s[len(p50s)/2], "p50-ratio")
		b.ReportMetric(ratios[len(ratios)/2], "p99-ratio")
		b.ReportMetric(ratios[0], "p99-ratio-min")
		b.ReportMetric(ratios[len(ratios)-1], "p99-ratio-max")
	}
}
