// Package timelinetest holds KS-PROM-ORDER's fixtures: timelines built by timeline.Build from onsets as
// promwindow's profiles mark them.
package timelinetest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/promwindow/timeline"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// etcdFirst is a slow disk as the window shows it: etcd's WAL fsync p99 crosses KS-ETCD-FSYNC's 10 ms, and 40 s
// later the API's p99 crosses KS-API-LATENCY's 1 s (promwindow's TestOnsetOrder makes the same onsets from
// range queries).
var etcdFirst = []timeline.Onset{
	{Result: "etcd.health", Metric: "wal_fsync_p99", What: "etcd WAL fsync p99", At: ruletest.T0.Add(10 * time.Minute),
		Value: 0.2, Threshold: 0.01, Op: ">", Unit: "seconds", Labels: map[string]string{}},
	{Result: "api.responsiveness", Metric: "latency_p99_single", What: "API p99 (single-object and mutating calls)",
		At: ruletest.T0.Add(10*time.Minute + 40*time.Second), Value: 1.8, Threshold: 1, Op: ">", Unit: "seconds", Labels: map[string]string{}},
}

func report(onsets []timeline.Onset) func(t *testing.T) *result.Report {
	return func(*testing.T) *result.Report {
		return ruletest.Report(nil, timeline.Build(onsets, ruletest.T0, ruletest.T0.Add(20*time.Minute), 12, 4800, 15*time.Second))
	}
}

// RuleFixtures are KS-PROM-ORDER's: two signals crossed, etcd first (fires); only etcd's crossed, there is no
// order to tell (clear).
func RuleFixtures() map[string]ruletest.Fixture {
	return map[string]ruletest.Fixture{
		"KS-PROM-ORDER": {Fire: report(etcdFirst), Clear: report(etcdFirst[:1])},
	}
}
