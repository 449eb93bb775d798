package etcdhealth

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the rules read.
var (
	etcdFsync         = rule.Metric{Result: Name, Name: MetricWALFsyncP99}
	etcdCommit        = rule.Metric{Result: Name, Name: MetricBackendCommitP99}
	etcdNoSpace       = rule.Metric{Result: Name, Name: MetricAlarmNoSpace}
	etcdQuota         = rule.Metric{Result: Name, Name: MetricDBQuotaRatio}
	etcdLeaderChanges = rule.Metric{Result: Name, Name: MetricLeaderChanges}
)

// Rules are the rules over etcd's health.
func Rules() []rule.Rule {
	return []rule.Rule{
		{
			ID: "KS-ETCD-FSYNC", Title: "etcd's disk is too slow (WAL fsync)", Severity: result.SeverityError, Cases: []string{"B"},
			When:        rule.Condition{Metric: etcdFsync, Op: ">", Value: FsyncP99Max, Unit: "seconds"},
			Source:      "etcd documentation: p99 of etcd_disk_wal_fsync_duration_seconds should be below 10 ms",
			Summary:     "etcd WAL fsync p99 {{.value}} > {{.threshold}}: every write waits for the disk, so every API write and lease renewal is slow",
			Remediation: "Put etcd's data on a local SSD or a dedicated disk with low sync latency (not a shared network disk); check with fio --fdatasync=1 as etcd's docs describe.",
		},
		{
			ID: "KS-ETCD-COMMIT", Title: "etcd's backend commits are slow", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        rule.Condition{Metric: etcdCommit, Op: ">", Value: CommitP99Max, Unit: "seconds"},
			Source:      "etcd documentation: p99 of etcd_disk_backend_commit_duration_seconds should be below 25 ms",
			Summary:     "etcd backend commit p99 {{.value}} > {{.threshold}}",
			Remediation: "A faster disk for etcd; defragment a large database (etcdctl defrag).",
		},
		{
			ID: "KS-ETCD-NOSPACE", Title: "etcd is out of space and refuses writes", Severity: result.SeverityCritical, Cases: []string{"B"},
			When:    rule.Condition{Metric: etcdNoSpace, Op: ">", Value: 0, Unit: "count"},
			Source:  "etcd: the NOSPACE alarm is raised when the database reaches --quota-backend-bytes (default 2 GiB) and stops all writes",
			Summary: "etcd's NOSPACE alarm is active: the cluster accepts no writes (no pod, no lease, no status update)",
			Remediation: "Compact and defragment etcd, disarm the alarm (etcdctl alarm disarm), and raise --quota-backend-bytes (up to 8 GiB is suggested); " +
				"find what fills it (large objects, Events: move them to their own etcd).",
		},
		{
			ID: "KS-ETCD-QUOTA", Title: "etcd's database is close to its quota", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        rule.Condition{Metric: etcdQuota, Op: ">=", Value: 0.8, Unit: "ratio"},
			Source:      "etcd: writes stop at --quota-backend-bytes; 80% leaves time to act",
			Summary:     "etcd's database is at {{.value}} of its quota",
			Remediation: "Compact and defragment; raise --quota-backend-bytes; find what grows (large objects, Events).",
		},
		{
			ID: "KS-ETCD-LEADER", Title: "etcd changed leader during the measurement", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        rule.Condition{Metric: etcdLeaderChanges, Op: ">", Value: 0, Unit: "count"},
			Source:      "etcd: leader elections stall writes; frequent ones point at slow disks or networks between members",
			Summary:     "{{.value}} leader changes in the window",
			Remediation: "Check the disk and network latency between etcd members; raise --heartbeat-interval/--election-timeout only after fixing them.",
		},
	}
}
