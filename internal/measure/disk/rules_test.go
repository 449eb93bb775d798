package disk_test

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/disk"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/diskprobe"
	"github.com/kubeslow/kubeslow/pkg/result"
)

func TestDiskSyncRule(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name   string
		p99    time.Duration
		status result.RuleStatus
	}{
		{"case B network disk under load", 16580 * time.Microsecond, result.RuleFired},
		{"just at the line", 10 * time.Millisecond, result.RuleFired},
		{"case B's local SSD", 200 * time.Microsecond, result.RuleClear},
		{"2 ms network disk", 2 * time.Millisecond, result.RuleClear},
	} {
		res := disk.BenchResult("/var/lib/etcd", diskprobe.SyncSummary{P50: c.p99 / 4, P99: c.p99, Max: 2 * c.p99, IOPS: 400, N: 10029}, now, now)
		fs, evals := rule.Evaluate(&result.Report{Results: []result.Result{res}}, disk.Rules())
		if evals[0].Status != c.status {
			t.Errorf("%s: %s, want %s", c.name, evals[0].Status, c.status)
		}
		if c.status == result.RuleFired && (len(fs) != 1 || len(fs[0].Evidence) != 1 || fs[0].Evidence[0].Value != c.p99.Seconds()) {
			t.Errorf("%s: findings %+v", c.name, fs)
		}
	}
	_, evals := rule.Evaluate(&result.Report{Results: []result.Result{{Name: disk.BenchName, Status: result.StatusError, Reason: "EROFS"}}}, disk.Rules())
	if evals[0].Status != result.RuleNotEvaluated {
		t.Errorf("an unmeasured disk: %s", evals[0].Status)
	}
}
