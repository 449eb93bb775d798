// Package etcdhealthtest is etcd.health's analysis of scripted and recorded etcd scrapes: the fixtures of
// its rules.
package etcdhealthtest

import (
	"testing"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/rule/ruletest"
	"github.com/kubeslow/kubeslow/internal/source/prom/promtest"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Server is what etcd's metrics and alarms say over a minute.
type Server struct {
	Fsync, Commit  float64
	DBBytes, Quota float64
	LeaderChanges  int
	Alarms         []string
}

// Result is etcdhealth.Analyze over the minute's two scrapes.
func (s Server) Result(t *testing.T) result.Result {
	before, after := promtest.Scrapes(t, time.Minute, func(e *promtest.Expo, k float64) {
		e.Hist("etcd_disk_wal_fsync_duration_seconds", "", int(600*k), s.Fsync)
		e.Hist("etcd_disk_backend_commit_duration_seconds", "", int(300*k), s.Commit)
		e.Gauge("etcd_mvcc_db_total_size_in_bytes", "", s.DBBytes)
		e.Gauge("etcd_server_quota_backend_bytes", "", s.Quota)
		e.Counter("etcd_server_leader_changes_seen_total", "", 1+float64(s.LeaderChanges)*k)
	})
	return etcdhealth.Analyze(before, after, s.Alarms)
}

// Healthy is a healthy etcd.
var Healthy = Server{Fsync: 0.003, Commit: 0.008, DBBytes: 200e6, Quota: 2 << 30}

func with(f func(*Server)) Server {
	s := Healthy
	f(&s)
	return s
}

// Recorded is etcd's metrics as scraped on the lab (no alarm).
func Recorded(t *testing.T) result.Result {
	s := promtest.Recorded(t, "etcd-metrics-1.txt", "etcd-metrics-2.txt")
	return etcdhealth.Analyze(s[0], s[1], nil)
}

func etcd(s Server) func(t *testing.T) *result.Report { return ruletest.One(s.Result) }

// RuleFixtures are etcdhealth.Rules' firing and clear fixtures.
func RuleFixtures() map[string]ruletest.Fixture {
	recorded := ruletest.One(Recorded)
	return map[string]ruletest.Fixture{
		"KS-ETCD-FSYNC":   {Fire: etcd(with(func(s *Server) { s.Fsync = 0.04 })), Clear: recorded},
		"KS-ETCD-COMMIT":  {Fire: etcd(with(func(s *Server) { s.Commit = 0.09 })), Clear: recorded},
		"KS-ETCD-NOSPACE": {Fire: etcd(with(func(s *Server) { s.Alarms = []string{"NOSPACE"} })), Clear: etcd(with(func(s *Server) { s.Alarms = []string{"CORRUPT"} }))},
		"KS-ETCD-QUOTA":   {Fire: etcd(with(func(s *Server) { s.DBBytes = 1.8e9 })), Clear: etcd(Healthy)},
		"KS-ETCD-LEADER":  {Fire: etcd(with(func(s *Server) { s.LeaderChanges = 3 })), Clear: recorded},
	}
}
