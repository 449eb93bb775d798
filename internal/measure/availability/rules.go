package availability

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// StallMin is the shortest outage the rules name: two failed probes in a row, a second apart — not one slow
// check or one lost packet.
const StallMin = 2.0

// The rules' IDs: the runner marks the findings an outage explains with them.
const (
	RuleEtcdStall   = "KS-ETCD-STALL"
	RuleUnreachable = "KS-APISERVER-UNREACHABLE"
)

// RuleFor is the rule that names an outage of the cause ("" for none).
func RuleFor(cause string) string {
	switch cause {
	case CauseEtcd:
		return RuleEtcdStall
	case CauseUnreachable:
		return RuleUnreachable
	}
	return ""
}

// Rules are the rules over the probe's result.
func Rules() []rule.Rule {
	return []rule.Rule{{
		ID: RuleEtcdStall, Title: "etcd stopped answering the apiserver during the run", Severity: result.SeverityError, Cases: []string{"B"},
		When: rule.Condition{Metric: rule.Metric{Result: Name, Name: MetricEtcdLongest}, Op: ">=", Value: StallMin, Unit: "seconds"},
		Also: []rule.Condition{{Metric: rule.Metric{Result: Name, Name: MetricEtcdUnavailable}, Op: ">=", Value: StallMin, Unit: "seconds"}},
		Source: "kube-apiserver: /readyz's etcd check fails when etcd does not answer within --etcd-healthcheck-timeout (2 s by default); " +
			"while it fails every write and every quorum read waits or fails; kubeslow's probe also counts the whole /readyz unanswered within " +
			"0.8 s while the apiserver answered /readyz without its etcd checks in the same second",
		Summary: "etcd did not answer the apiserver for {{.value}} at a stretch ({{." + MetricEtcdUnavailable + "}} in all; threshold {{.threshold}}): " +
			"the apiserver's readyz etcd check failed, every write stalled",
		Remediation: "Find why etcd stopped: its process stopped or starved (CPU quota, a frozen cgroup, swap), its disk stalled " +
			"(etcd_disk_wal_fsync_duration_seconds, the node's I/O pressure), or it lost its leader (etcd_server_has_leader); " +
			"etcd's log at that time says which ('slow fdatasync', 'apply request took too long', 'lost leader').",
	}, {
		ID: RuleUnreachable, Title: "The apiserver was unreachable during the run", Severity: result.SeverityWarning,
		When: rule.Condition{Metric: rule.Metric{Result: Name, Name: MetricUnreachableLongest}, Op: ">=", Value: StallMin, Unit: "seconds"},
		Also: []rule.Condition{{Metric: rule.Metric{Result: Name, Name: MetricUnreachable}, Op: ">=", Value: StallMin, Unit: "seconds"}},
		Source: "Kubernetes API availability: clients, kubelets and controllers need the apiserver to answer; " +
			"two probes a second apart without an answer (refused, reset, or none within 0.8 s, each probe on its own second) is an outage, not one lost packet",
		Summary: "the apiserver did not answer kubeslow for {{.value}} at a stretch ({{." + MetricUnreachable + "}} in all; threshold {{.threshold}}): " +
			"it restarted, was stopped, or the path to it broke",
		Remediation: "Find why kube-apiserver stopped answering at that time: a restart (its start time, its log's last lines, an OOM kill " +
			"in the node's kernel log, a liveness probe), or the load balancer or network in front of it; with several apiservers, check " +
			"that the load balancer took the stopped one out.",
	}}
}
