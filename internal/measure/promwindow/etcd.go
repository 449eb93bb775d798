package promwindow

import (
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Etcd is etcd.health from Prometheus: WAL fsync and backend commit latency, database size against the quota
// and leader changes of the etcd job over the window, analysed by etcdhealth.Analyze. etcd's alarms are not
// metrics: the NOSPACE alarm is listed as absent, so its rule is not evaluated.
type Etcd struct{ src *Source }

// NewEtcd returns the measurement.
func NewEtcd(s *Source) *Etcd { return &Etcd{src: s} }

// Name implements measure.Measurement.
func (*Etcd) Name() string { return etcdhealth.Name }

// Description implements measure.Measurement.
func (e *Etcd) Description() string {
	return fmt.Sprintf("etcd WAL fsync and commit p99, database size vs quota, leader changes, from Prometheus over %s", e.src.Window)
}

// Run implements measure.Measurement.
func (e *Etcd) Run(ctx context.Context, _ *measure.Env) (result.Result, error) {
	s := e.src
	if err := s.Discover(ctx); err != nil {
		return result.Result{}, err
	}
	job, ok := s.Selector("etcd")
	if !ok {
		return result.Result{}, measure.Skipf("%s", s.absentReason("etcd"))
	}
	fams := map[string]*dto.MetricFamily{}
	for _, step := range []func() error{
		func() error { return s.histogram(ctx, fams, "etcd_disk_wal_fsync_duration_seconds", job, nil, true) },
		func() error {
			return s.histogram(ctx, fams, "etcd_disk_backend_commit_duration_seconds", job, nil, true)
		},
		func() error { return s.gauge(ctx, fams, "etcd_mvcc_db_total_size_in_bytes", job, nil) },
		func() error { return s.gauge(ctx, fams, "etcd_server_quota_backend_bytes", job, nil) },
		func() error { return s.counter(ctx, fams, "etcd_server_leader_changes_seen_total", job, nil) },
	} {
		if err := step(); err != nil {
			return result.Result{}, err
		}
	}
	before, after := s.snapshots(fams)
	res := etcdhealth.Analyze(before, after, nil)
	// Alarms are read from etcd's API, not its metrics: over a past window they are unknown, not zero.
	kept := res.Metrics[:0]
	for _, m := range res.Metrics {
		if m.Name != etcdhealth.MetricAlarmNoSpace && m.Name != "alarms" {
			kept = append(kept, m)
		}
	}
	res.Metrics = kept
	res.Absent = append(res.Absent, result.Absence{Metric: etcdhealth.MetricAlarmNoSpace, Series: "(etcd alarm list)",
		Reason: "etcd's alarms are not exported as metrics; over a past window whether NOSPACE was raised is unknown"})
	for _, a := range []struct{ family, metric string }{
		{"etcd_mvcc_db_total_size_in_bytes", etcdhealth.MetricDBQuotaRatio}, {"etcd_server_quota_backend_bytes", etcdhealth.MetricDBQuotaRatio},
		{"etcd_disk_wal_fsync_duration_seconds", etcdhealth.MetricWALFsyncP99}, {"etcd_disk_backend_commit_duration_seconds", etcdhealth.MetricBackendCommitP99},
		{"etcd_server_leader_changes_seen_total", etcdhealth.MetricLeaderChanges},
	} {
		if fams[a.family] == nil && !hasAbsence(res.Absent, a.metric) {
			res.Absent = append(res.Absent, result.Absence{Metric: a.metric, Series: a.family, Reason: "not exposed by the etcd job in the window"})
		}
	}
	res.Start, res.End = s.Window.From, s.Window.To
	s.label(&res, "job "+jobValue(job))
	for _, p := range []profile{
		{Result: etcdhealth.Name, Metric: etcdhealth.MetricWALFsyncP99, Unit: "seconds", Rule: "KS-ETCD-FSYNC", What: "etcd WAL fsync p99",
			Query: fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[%s])))", selector("etcd_disk_wal_fsync_duration_seconds_bucket", job), s.rate())},
		{Result: etcdhealth.Name, Metric: etcdhealth.MetricBackendCommitP99, Unit: "seconds", Rule: "KS-ETCD-COMMIT", What: "etcd backend commit p99",
			Query: fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[%s])))", selector("etcd_disk_backend_commit_duration_seconds_bucket", job), s.rate())},
		{Result: etcdhealth.Name, Metric: etcdhealth.MetricDBQuotaRatio, Unit: "ratio", Rule: "KS-ETCD-QUOTA", What: "etcd database / quota",
			Query: fmt.Sprintf("max(%s) / max(%s)", selector("etcd_mvcc_db_total_size_in_bytes", job), selector("etcd_server_quota_backend_bytes", job))},
	} {
		if err := s.addProfile(ctx, &res, p); err != nil {
			return res, err
		}
	}
	return res, nil
}

func hasAbsence(l []result.Absence, metric string) bool {
	for _, a := range l {
		if a.Metric == metric {
			return true
		}
	}
	return false
}
