// Package etcdhealth is the etcd measurement: etcd's own metrics over a window (WAL fsync and backend commit
// latency, database size against the quota, leader changes) and its active alarms (NOSPACE). etcd is rarely
// reachable from outside the control plane: without an endpoint it is read through the node agent on a
// control-plane node (127.0.0.1:2381), and where no agent can run there the measurement is skipped with the
// node tier's reason.
package etcdhealth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kubeslow/kubeslow/internal/measure"
	"github.com/kubeslow/kubeslow/internal/measure/cpnode"
	"github.com/kubeslow/kubeslow/internal/measure/etcdscrape"
	"github.com/kubeslow/kubeslow/internal/source/prom"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Name of the measurement.
const Name = "etcd.health"

// Metric names of the result: rules read them through these.
const (
	MetricWALFsyncP99      = "wal_fsync_p99"
	MetricBackendCommitP99 = "backend_commit_p99"
	// MetricDBQuotaRatio is the database size over --quota-backend-bytes.
	MetricDBQuotaRatio  = "db_quota_ratio"
	MetricLeaderChanges = "leader_changes"
	// MetricAlarmNoSpace is 1 while the NOSPACE alarm is active.
	MetricAlarmNoSpace = "alarm_nospace"
)

// Thresholds from etcd's documentation (hardware recommendations / tuning: "99th percentile of
// wal_fsync_duration_seconds should be less than 10ms", backend commit "less than 25ms").
const (
	FsyncP99Max  = 0.010
	CommitP99Max = 0.025
	// MinSamples is how many fsyncs the window needs for a p99 to mean anything.
	MinSamples = 5
)

// Measurement reads etcd's metrics endpoint.
type Measurement struct {
	Length time.Duration
	// Endpoint is etcd's metrics endpoint as the user states it (--etcd-endpoint: a port-forward to an etcd
	// member, kubeadm's http://127.0.0.1:2381 from a control-plane node; plain http); "" skips the measurement.
	Endpoint string
	Client   *http.Client
}

// New returns the measurement.
func New(window time.Duration, endpoint string) *Measurement {
	return &Measurement{Length: window, Endpoint: endpoint, Client: &http.Client{Timeout: 10 * time.Second}}
}

// Name implements measure.Measurement.
func (*Measurement) Name() string { return Name }

// Description implements measure.Measurement.
func (m *Measurement) Description() string {
	return fmt.Sprintf("etcd WAL fsync and commit p99, database size vs quota, alarms, leader changes, over %s", m.Length)
}

// Window implements measure.Observer.
func (m *Measurement) Window() time.Duration { return m.Length }

func (m *Measurement) endpoint() string {
	return strings.TrimRight(m.Endpoint, "/")
}

// alarms asks etcd (v3 JSON gateway) for its active alarms.
func (m *Measurement) alarms(ctx context.Context, ep string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+"/v3/maintenance/alarm", strings.NewReader(`{"action":"GET"}`))
	if err != nil {
		return nil, err
	}
	resp, err := m.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	return ParseAlarms(body)
}

// ParseAlarms reads the alarm list of etcd's JSON gateway: {"alarms":[{"memberID":"..","alarm":"NOSPACE"}]}.
func ParseAlarms(body []byte) ([]string, error) {
	var r struct {
		Alarms []struct {
			Alarm string `json:"alarm"`
		} `json:"alarms"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		return nil, fmt.Errorf("etcd alarm response: %w", err)
	}
	var out []string
	for _, a := range r.Alarms {
		if a.Alarm != "" && a.Alarm != "NONE" {
			out = append(out, a.Alarm)
		}
	}
	return out, nil
}

// Run observes the window on its own.
func (m *Measurement) Run(ctx context.Context, env *measure.Env) (result.Result, error) {
	return measure.Observe(ctx, env, m)
}

// Start implements measure.Observer: scrapes at the start, every step and at the end; the alarms at the end.
// Tiers: the endpoint the user gave (--etcd-endpoint), else etcd's metrics on 127.0.0.1:2381 of a
// control-plane node through the node agent, else out of reach with the node tier's reason.
func (m *Measurement) Start(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	ep := m.endpoint()
	if ep == "" {
		return m.startNodeTier(ctx, env)
	}
	s := &measure.Scrapes{
		Scrape: etcdscrape.At(env, m.Client, ep),
		Step:   Step,
		Analyze: func(ctx context.Context, first, last *prom.Snapshot) (result.Result, error) {
			alarms, err := m.alarms(ctx, ep)
			if err != nil {
				return result.Result{}, fmt.Errorf("reading etcd alarms: %w", err)
			}
			return Analyze(first, last, alarms), nil
		},
		Log: env.Log.Debug,
	}
	return s.Start(ctx)
}

// UsesNodeTier implements measure.NodeTierUser: without --etcd-endpoint etcd is read through the node agent.
func (m *Measurement) UsesNodeTier() bool { return m.endpoint() == "" }

// startNodeTier reads etcd through the node agent: the first control-plane node whose agent scrapes etcd.
func (m *Measurement) startNodeTier(ctx context.Context, env *measure.Env) (measure.Observation, error) {
	skip := func(err error) error {
		return &measure.SkipError{Reason: "no etcd metrics: no --etcd-endpoint, and " + cpnode.Why(err),
			OutOfReach: []result.OutOfReach{cpnode.OutOfReach(measure.OutOfReachEtcd, err)}}
	}
	tier, err := cpnode.From(ctx, env)
	if err != nil {
		return nil, skip(err)
	}
	node, found, err := etcdscrape.Find(ctx, tier)
	if err != nil {
		return nil, skip(err)
	}
	url := found.URL
	env.Log.Debug("etcd.health: etcd through the node agent", "node", node, "url", url)
	first := found.Body // the scrape that found etcd is the window's first
	scrape := etcdscrape.On(env, tier, node)
	s := &measure.Scrapes{
		Scrape: func(ctx context.Context) (*prom.Snapshot, error) {
			if first != nil {
				b := first
				first = nil
				return prom.Parse(bytes.NewReader(b), env.Clock.Now())
			}
			return scrape(ctx)
		},
		Step: Step,
		Analyze: func(_ context.Context, first, last *prom.Snapshot) (result.Result, error) {
			return AnalyzeNodeTier(first, last, node, url), nil
		},
		Log: env.Log.Debug,
	}
	return s.Start(ctx)
}

// AnalyzeNodeTier is Analyze of etcd read by the node agent on node (pure): every metric is labelled
// source=node-agent and node; the alarms, served only on etcd's client port behind its client certificates,
// are absent (unknown, never zero).
func AnalyzeNodeTier(first, last *prom.Snapshot, node, url string) result.Result {
	res := Analyze(first, last, nil)
	kept := res.Metrics[:0]
	for _, mt := range res.Metrics {
		if mt.Name == MetricAlarmNoSpace || mt.Name == "alarms" {
			continue
		}
		mt.Labels = withSource(mt.Labels, node)
		kept = append(kept, mt)
	}
	res.Metrics = kept
	res.Absent = append(res.Absent, result.Absence{Metric: MetricAlarmNoSpace, Series: "(etcd alarm list)",
		Reason: "etcd's alarms are served on its client port behind its client certificates, not in its metrics: whether NOSPACE is raised is unknown"})
	where := fmt.Sprintf("etcd read by the node agent on %s (%s)", node, url)
	if res.Reason == "" {
		res.Reason = where
	} else {
		res.Reason = where + "; " + res.Reason
	}
	return res
}

func withSource(l map[string]string, node string) map[string]string {
	out := map[string]string{"source": cpnode.SourceNodeAgent, "node": node}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// Step is one step of the series (pure): the WAL fsync and backend commit p99 between two scrapes.
func Step(prev, cur *prom.Snapshot) []result.Metric {
	var out []result.Metric
	for _, h := range walCommit {
		var hist prom.Histogram
		for _, s := range prom.Delta(prev, cur, h.family) {
			if s.Hist != nil {
				hist.Add(s.Hist)
			}
		}
		if hist.Count == 0 {
			continue
		}
		if p99, ok := hist.QuantileEstimate(0.99); ok {
			out = append(out, p99.Metric(h.p99, "seconds", nil))
		}
	}
	return out
}

var walCommit = []struct{ family, metric, p99 string }{
	{"etcd_disk_wal_fsync_duration_seconds", "wal_fsync", MetricWALFsyncP99},
	{"etcd_disk_backend_commit_duration_seconds", "backend_commit", MetricBackendCommitP99},
}

// Analyze computes the result (pure).
func Analyze(before, after *prom.Snapshot, alarms []string) result.Result {
	res := result.Result{Name: Name, Status: result.StatusPass}
	add := func(name, unit string, v float64, labels map[string]string) {
		res.Metrics = append(res.Metrics, result.Metric{Name: name, Unit: unit, Value: v, Labels: labels})
	}
	var notes []string
	for _, h := range walCommit {
		var hist prom.Histogram
		for _, s := range prom.Delta(before, after, h.family) {
			if s.Hist != nil {
				hist.Add(s.Hist)
			}
		}
		add(h.metric+"_samples", "count", hist.Count, nil)
		if hist.Count < MinSamples {
			notes = append(notes, fmt.Sprintf("only %v %s samples in the window: no p99", hist.Count, h.metric))
			continue
		}
		if p99, ok := hist.QuantileEstimate(0.99); ok {
			res.Metrics = append(res.Metrics, p99.Metric(h.p99, "seconds", nil))
		}
		add(h.metric+"_mean", "seconds", hist.Sum/hist.Count, nil)
	}
	size, okSize := after.Gauge("etcd_mvcc_db_total_size_in_bytes", nil)
	quota, okQuota := after.Gauge("etcd_server_quota_backend_bytes", nil)
	if okSize {
		add("db_size_bytes", "bytes", size, nil)
	}
	if okQuota {
		add("quota_bytes", "bytes", quota, nil)
	}
	if okSize && okQuota && quota > 0 {
		add(MetricDBQuotaRatio, "ratio", size/quota, nil)
	}
	var changes float64
	for _, s := range prom.Delta(before, after, "etcd_server_leader_changes_seen_total") {
		changes += s.Value
	}
	add(MetricLeaderChanges, "count", changes, nil)
	nospace := 0.0
	for _, a := range alarms {
		if a == "NOSPACE" {
			nospace = 1
		}
	}
	add(MetricAlarmNoSpace, "count", nospace, nil)
	add("alarms", "count", float64(len(alarms)), nil)
	if len(alarms) > 0 {
		res.Status, res.Reason = result.StatusFail, "active alarms: "+strings.Join(alarms, ", ")
	}
	if len(notes) > 0 && res.Reason == "" {
		res.Reason = strings.Join(notes, "; ")
	}
	return res
}
