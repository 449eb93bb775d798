package disk

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestBenchResultVerdict(t *testing.T) {
	now := time.Now()
	fast := BenchResult("/var/lib/etcd", diskprobe.SyncSummary{P50: 200 * time.Microsecond, P99: 2 * time.Millisecond, Max: 5 * time.Millisecond, IOPS: 3000, N: 10029}, now, now)
	if fast.Status != result.StatusPass {
		t.Errorf("2 ms p99: %s %s", fast.Status, fast.Reason)
	}
	slow := BenchResult("/var/lib/etcd", diskprobe.SyncSummary{P50: 2 * time.Millisecond, P99: 16580 * time.Microsecond, Max: 95 * time.Millisecond, IOPS: 419, N: 10029}, now, now)
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
