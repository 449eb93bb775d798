package report

import (
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// sampleReport has one of everything the renderers draw: findings linking to results, percentile groups,
// per-node phase records, a time series with a change point, skipped and failed results, rule states.
func sampleReport() *result.Report {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	ph := func(p string) map[string]string { return map[string]string{"phase": p} }
	ps := result.Result{Name: "pods.startup", Status: result.StatusFail, Reason: "pod start-up p99 7.10 s > SLO 5 s", Start: t0, End: t0.Add(40 * time.Second)}
	for i, p := range []string{"schedule", "sandbox", "start", "observe"} {
		base := float64(i+1) * 0.3
		for j, q := range []string{"p50", "p90", "p99", "max"} {
			ps.Metrics = append(ps.Metrics, result.Metric{Name: "phase_" + q, Unit: "seconds", Value: base * float64(j+1), Labels: ph(p)})
		}
	}
	ps.Metrics = append(ps.Metrics, result.Metric{Name: "startup_sli_p99", Unit: "seconds", Value: 7.1},
		result.Metric{Name: "startup_sli_p50", Unit: "seconds", Value: 1.2}, result.Metric{Name: "pods", Unit: "count", Value: 60})
	for i := range 60 {
		node := fmt.Sprintf("kwok-node-%d", i%3)
		sandbox := 0.2
		if i%3 == 2 {
			sandbox = 3 // the slow node
		}
		ps.Records = append(ps.Records, result.Record{ID: fmt.Sprintf("p%d", i), Labels: map[string]string{"node": node},
			Values: map[string]float64{"schedule_seconds": 0.1, "sandbox_seconds": sandbox, "start_seconds": 0.3, "observe_seconds": 0.05,
				"sli_seconds": 0.45 + sandbox + float64(i)/100, "pull_seconds": 0}})
	}
	etcd := result.Result{Name: "etcd.health", Status: result.StatusWarn, Start: t0, End: t0.Add(20 * time.Second)}
	s := result.Series{Name: "wal_fsync_p99", Unit: "seconds", Marks: []result.Mark{{T: t0.Add(30 * time.Second), Label: "change point"}}}
	for i := range 60 {
		v := 0.002
		if i >= 30 {
			v = 0.04
		}
		s.Points = append(s.Points, result.Point{T: t0.Add(time.Duration(i) * time.Second), V: v})
	}
	etcd.Series = []result.Series{s}
	etcd.Metrics = []result.Metric{{Name: "db_size_bytes", Unit: "bytes", Value: 1 << 30}}
	return &result.Report{APIVersion: result.APIVersion, Kind: result.Kind, RunID: "r1", Tool: result.Tool{Name: "kubeslow", Version: "test"},
		Cluster: result.Cluster{Name: "lab <test>", Server: "https://198.19.255.1:6443", Nodes: result.NodeCounts{Total: 4, Ready: 4, Simulated: 3}},
		Start:   t0, End: t0.Add(time.Minute),
		Results: []result.Result{ps, etcd, {Name: "api.audit", Status: result.StatusSkip, Reason: "no audit log given",
			OutOfReach: []result.OutOfReach{{Signal: "the apiserver's audit log", Why: "a managed control plane", Fix: "EKS: enable the audit log type"}}},
			{Name: "nodes.agent", Status: result.StatusError, Reason: "could not create the probe pod: forbidden"}},
		Findings: []result.Finding{
			{ID: "KS-POD-NODE", Severity: result.SeverityWarning, Title: "One node starts pods much slower", Summary: "kwok-node-2: median 3.5 s",
				Evidence:  []result.Evidence{{Name: "node_sli_ratio", Value: 5.4, Unit: "ratio", Labels: map[string]string{"node": "kwok-node-2"}, Result: "pods.startup"}},
				Threshold: result.Threshold{Op: ">", Value: 2, Unit: "ratio", Source: "kubeslow outlier rule"}, Remediation: "inspect the node's CNI", Cases: []string{"E"}, Results: []string{"pods.startup"},
				Items: []result.Item{{Key: "node=kwok-node-2", Value: 5.4, Summary: "kwok-node-2: median 3.5 s"}, {Key: "node=kwok-node-7", Value: 2.5, Summary: "kwok-node-7: median 1.6 s"}}, ItemCount: 2},
			{ID: "KS-POD-SLO", Severity: result.SeverityError, Title: "Pod start-up is slower than the SLO", Summary: "p99 7.1 s > 5 s <script>alert(1)</script>",
				Evidence:  []result.Evidence{{Name: "startup_sli_p99", Value: 7.1, Unit: "seconds", Result: "pods.startup"}},
				Threshold: result.Threshold{Op: ">", Value: 5, Unit: "seconds", Source: "SIG Scalability"}, Remediation: "see the phase", Cases: []string{"E"}, Results: []string{"pods.startup"}},
		},
		Rules: []result.RuleEvaluation{{ID: "KS-POD-SLO", Status: result.RuleFired}, {ID: "KS-POD-NODE", Status: result.RuleFired}, {ID: "KS-ETCD-FSYNC", Status: result.RuleClear},
			{ID: "KS-AUDIT-LIST", Status: result.RuleNotEvaluated, Reason: "api.audit was not measured"}},
	}
}
