package disk

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestRunSync(t *testing.T) {
	dir := t.TempDir()
	r, err := RunSync(context.Background(), dir, Recipe{Size: 100 * 2300, BlockSize: 2300})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sync) != 100 || r.Bytes != 100*2300 || r.Elapsed <= 0 {
		t.Fatalf("%d syncs, %d bytes, %v", len(r.Sync), r.Bytes, r.Elapsed)
	}
	s := r.Summary()
	if s.N != 100 || s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max || s.IOPS <= 0 {
		t.Errorf("summary %+v", s)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
	if _, err := RunSync(context.Background(), dir, Recipe{Size: 10, BlockSize: 2300}); err == nil {
		t.Error("a recipe smaller than one block ran")
	}
	if _, err := RunSync(context.Background(), dir+"/missing", EtcdRecipe); err == nil {
		t.Error("a missing directory ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunSync(ctx, dir, EtcdRecipe); err == nil {
		t.Error("a cancelled run returned no error")
	}
}

func TestBenchResultVerdict(t *testing.T) {
	now := time.Now()
	fast := BenchResult("/var/lib/etcd", SyncSummary{P50: 200 * time.Microsecond, P99: 2 * time.Millisecond, Max: 5 * time.Millisecond, IOPS: 3000, N: 10029}, now, now)
	if fast.Status != result.StatusPass {
		t.Errorf("2 ms p99: %s %s", fast.Status, fast.Reason)
	}
	slow := BenchResult("/var/lib/etcd", SyncSummary{P50: 2 * time.Millisecond, P99: 16580 * time.Microsecond, Max: 95 * time.Millisecond, IOPS: 419, N: 10029}, now, now)
	if slow.Status != result.StatusFail || slow.Reason != "fdatasync p99 16.58ms >= 10ms: too slow for etcd's WAL" {
		t.Errorf("16.6 ms p99: %s %q", slow.Status, slow.Reason)
	}
	var p99 float64
	for _, m := range slow.Metrics {
		if m.Name == "fdatasync_p99" {
			p99 = m.Value
		}
	}
	if p99 != 0.01658 {
		t.Errorf("p99 metric %v", p99)
	}
}

// TestRecipeValidate: etcd's recipe is valid; `bench disk`'s out-of-range recipes are refused.
func TestRecipeValidate(t *testing.T) {
	if err := EtcdRecipe.Validate(); err != nil {
		t.Fatalf("etcd's recipe: %v", err)
	}
	for _, bad := range []Recipe{{Size: 22 << 20, BlockSize: 511}, {Size: 22 << 20, BlockSize: 1<<20 + 1}, {Size: 1000, BlockSize: 2300}, {Size: 1<<30 + 1, BlockSize: 2300}} {
		if bad.Validate() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}
