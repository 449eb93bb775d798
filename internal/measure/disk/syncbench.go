// Package disk is etcd's verdict on a disk: the sync-write probe's fdatasync latencies as bench disk's result,
// and its rule (KS-DISK-SYNC). The probe itself, and the sampler of a node's disk activity, are
// internal/source/diskprobe.
package disk

import (
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// BenchName is the result name of `kubeslow bench disk`.
const BenchName = "disk.fdatasync"

// MetricFdatasyncP99 is the p99 of fdatasync (rules read it through this name).
const MetricFdatasyncP99 = "fdatasync_p99"

// EtcdSyncP99 is etcd's guidance for its WAL disk: "the 99th percentile of fdatasync should be below 10ms"
// (etcd.io, Hardware recommendations / "Using fio to tell whether your storage is fast enough for etcd").
const EtcdSyncP99 = 10 * time.Millisecond

// EtcdSyncSource says where EtcdSyncP99 comes from.
const EtcdSyncSource = "etcd's hardware guidance: the 99th percentile of WAL fdatasync below 10 ms (fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300)"

// BenchResult turns a run into the report's result, with etcd's verdict on the p99.
func BenchResult(where string, s diskprobe.SyncSummary, start, end time.Time) result.Result {
	labels := map[string]string{"path": where}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	res := result.Result{Name: BenchName, Status: result.StatusPass, Start: start, End: end,
		Metrics: []result.Metric{
			{Name: "fdatasync_p50", Unit: "seconds", Value: sec(s.P50), Labels: labels},
			{Name: MetricFdatasyncP99, Unit: "seconds", Value: sec(s.P99), Labels: labels},
			{Name: "fdatasync_max", Unit: "seconds", Value: sec(s.Max), Labels: labels},
			{Name: "write_iops", Unit: "per_second", Value: s.IOPS, Labels: labels},
			{Name: "writes", Unit: "count", Value: float64(s.N), Labels: labels},
		}}
	if s.P99 >= EtcdSyncP99 {
		res.Status = result.StatusFail
		res.Reason = fmt.Sprintf("fdatasync p99 %s >= %s: too slow for etcd's WAL", round(s.P99), EtcdSyncP99)
	}
	return res
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
