// Package disktest is bench disk's result for fdatasync latencies: the fixtures of its rule.
package disktest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Run is bench disk's result over a minute of 10,029 writes whose fdatasync p99 was p99.
func Run(p99 time.Duration) result.Result {
	return disk.BenchResult("/var/lib/etcd", diskprobe.SyncSummary{P50: p99 / 4, P99: p99, Max: 2 * p99, IOPS: 400, N: 10029}, ruletest.T0, ruletest.T0.Add(time.Minute))
}

func run(p99 time.Duration) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report { return ruletest.Report(nil, Run(p99)) }
}

// RuleFixtures are disk.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-DISK-SYNC": {Fire: run(16 * time.Millisecond), Clear: run(2 * time.Millisecond)}, // case B's network disk, and a 2 ms one
	}
}
