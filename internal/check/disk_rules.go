package check

import (
	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// DiskBenchRules are the rules over `kubeslow bench disk` (case B's etcd disk).
func DiskBenchRules() []Rule {
	return []Rule{{
		ID: "KS-DISK-SYNC", Title: "Disk too slow for etcd: fdatasync p99 above 10 ms", Severity: result.SeverityError, Cases: []string{"B"},
		When:   Condition{Metric: Metric{disk.BenchName, disk.MetricFdatasyncP99}, Op: ">=", Value: disk.EtcdSyncP99.Seconds(), Unit: "seconds"},
		Source: disk.EtcdSyncSource,
		Summary: "fdatasync p99 {{.value}} on {{.path}}: each etcd write waits that long for its WAL, so etcd commits at most a few hundred " +
			"writes a second however many IOPS the disk is sold with, and leader elections and slow requests follow",
		Remediation: "Put etcd's data (at least its WAL, --wal-dir) on a local SSD or a provisioned-IOPS volume with low sync latency; " +
			"keep other I/O off that disk; check for throttling or burst-credit exhaustion on cloud volumes.",
	}}
}
