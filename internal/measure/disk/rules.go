package disk

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Rules are the rules over `kubeslow bench disk` (case B's etcd disk).
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: "KS-DISK-SYNC", Title: "Disk too slow for etcd: fdatasync p99 above 10 ms", Severity: result.SeverityError, Cases: []string{"B"},
		When:   rule.Condition{Metric: rule.Metric{Result: BenchName, Name: MetricFdatasyncP99}, Op: ">=", Value: EtcdSyncP99.Seconds(), Unit: "seconds"},
		Source: EtcdSyncSource,
		Summary: "fdatasync p99 {{.value}} on {{.path}}: each etcd write waits that long for its WAL, so etcd commits at most a few hundred " +
			"writes a second however many IOPS the disk is sold with, and leader elections and slow requests follow",
		Remediation: "Put etcd's data (at least its WAL, --wal-dir) on a local SSD or a provisioned-IOPS volume with low sync latency; " +
			"keep other I/O off that disk; check for throttling or burst-credit exhaustion on cloud volumes.",
	}}
}
