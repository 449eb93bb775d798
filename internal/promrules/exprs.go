package promrules

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/kubelet"
	"github.com/kubeslow/kubeslow/internal/measure/nodeagent"
	"github.com/kubeslow/kubeslow/internal/measure/throttle"
	"github.com/kubeslow/kubeslow/internal/rule"
)

// Expr is a rule metric as a standing PromQL expression: one series per item the live rule fires on, its
// value in the unit of the rule's threshold. By are the labels that name an item; two conditions of one rule
// are joined (`and on (By)`) only when their By are the same.
type Expr struct {
	Query string
	By    []string
}

// Rate is the default rate window of every expression: the window of the `for:` clause's checks, short enough
// that an alert clears soon after its cause (Options.Rate sets another).
const Rate = "5m"

// Exprs are the rule metrics Prometheus holds, as the past-window path (internal/measure/promwindow) reads
// them: the same families, filters and aggregations as its hand-written twins' queries and profiles (api.go,
// etcd.go, kubelet.go, agent.go, throttle.go), over a sliding 5m rate window instead of a past window, and
// without a job matcher (a standing rule cannot discover it; add one where several jobs expose a family).
// A metric missing here is one `run --prometheus` cannot compute, or computes from more than one query (cores
// found by discovery, Events, the kubelet's configuration), so its rules are not exported.
func Exprs(rate string) map[rule.Metric]Expr {
	if rate == "" {
		rate = Rate
	}
	listBytes := fmt.Sprintf(`sum by (resource) (rate(apiserver_response_sizes_sum{verb="LIST"}[%s]))`, rate)
	p99 := func(family, filter string, by string) string {
		if filter != "" {
			family += "{" + filter + "}"
		}
		return fmt.Sprintf("histogram_quantile(0.99, sum by (le, %s) (rate(%s[%s])))", by, family, rate)
	}
	vsMedian := func(q string) string { return fmt.Sprintf("(%s) / scalar(quantile(0.5, %s))", q, q) }
	podStart := p99("kubelet_pod_start_sli_duration_seconds_bucket", "", "instance")
	runtimeOp := p99("kubelet_runtime_operations_duration_seconds_bucket", `operation_type!="pull_image"`, "instance")
	throttleBy := "namespace, pod, container"
	cadvisor := func(f string) string {
		return fmt.Sprintf(`%s{namespace=%q,container!="",container!="POD"}`, f, throttle.Namespace)
	}
	return map[rule.Metric]Expr{
		{Result: apislo.Name, Name: apislo.MetricLatencyP99Single}: {
			Query: p99("apiserver_request_sli_duration_seconds_bucket", apislo.SingleObjectMatchers, "verb, resource, scope"), By: []string{"verb", "resource", "scope"}},
		{Result: apislo.Name, Name: apislo.MetricLatencyP99List}: {
			Query: p99("apiserver_request_sli_duration_seconds_bucket", apislo.CollectionMatchers, "verb, resource, scope"), By: []string{"verb", "resource", "scope"}},
		{Result: apislo.Name, Name: apislo.MetricConflictsPerMinute}: {
			Query: fmt.Sprintf(`60 * sum by (group, resource, verb) (rate(apiserver_request_total{code="409"}[%s]))`, rate), By: []string{"group", "resource", "verb"}},
		{Result: apislo.Name, Name: apislo.MetricAPFRejectedPerMinute}: {
			Query: fmt.Sprintf(`60 * sum by (priority_level, flow_schema, reason) (rate(apiserver_flowcontrol_rejected_requests_total[%s]))`, rate), By: []string{"priority_level", "flow_schema", "reason"}},
		{Result: apislo.Name, Name: apislo.MetricListBytesShare}: {
			Query: fmt.Sprintf("%s / scalar(sum(%s))", listBytes, listBytes), By: []string{"resource"}},
		{Result: apislo.Name, Name: apislo.MetricListBytesPerSecond}: {Query: listBytes, By: []string{"resource"}},
		{Result: apislo.Name, Name: apislo.MetricWebhookP99}: {
			Query: p99("apiserver_admission_webhook_admission_duration_seconds_bucket", "", "name, type"), By: []string{"name", "type"}},
		{Result: etcdhealth.Name, Name: etcdhealth.MetricWALFsyncP99}: {
			Query: p99("etcd_disk_wal_fsync_duration_seconds_bucket", "", "instance"), By: []string{"instance"}},
		{Result: etcdhealth.Name, Name: etcdhealth.MetricBackendCommitP99}: {
			Query: p99("etcd_disk_backend_commit_duration_seconds_bucket", "", "instance"), By: []string{"instance"}},
		{Result: etcdhealth.Name, Name: etcdhealth.MetricDBQuotaRatio}: {
			Query: "max by (instance) (etcd_mvcc_db_total_size_in_bytes) / max by (instance) (etcd_server_quota_backend_bytes)", By: []string{"instance"}},
		{Result: etcdhealth.Name, Name: etcdhealth.MetricLeaderChanges}: {
			Query: "max by (instance) (increase(etcd_server_leader_changes_seen_total[15m]))", By: []string{"instance"}},
		{Result: kubelet.Name, Name: kubelet.MetricPodStartP99}:       {Query: podStart, By: []string{"instance"}},
		{Result: kubelet.Name, Name: kubelet.MetricPodStartVsMedian}:  {Query: vsMedian(podStart), By: []string{"instance"}},
		{Result: kubelet.Name, Name: kubelet.MetricRuntimeOpP99}:      {Query: runtimeOp, By: []string{"instance"}},
		{Result: kubelet.Name, Name: kubelet.MetricRuntimeOpVsMedian}: {Query: vsMedian(runtimeOp), By: []string{"instance"}},
		{Result: nodeagent.Name, Name: nodeagent.MetricIOPressureFullWindow}: {
			Query: fmt.Sprintf("100 * max by (instance) (rate(node_pressure_io_stalled_seconds_total[%s]))", rate), By: []string{"instance"}},
		{Result: nodeagent.Name, Name: nodeagent.MetricConntrackUsage}: {
			Query: "max by (instance) (node_nf_conntrack_entries) / min by (instance) (node_nf_conntrack_entries_limit)", By: []string{"instance"}},
		{Result: throttle.Name, Name: throttle.MetricThrottledRatio}: {
			Query: fmt.Sprintf("sum by (%[1]s) (increase(%[2]s[%[4]s])) / sum by (%[1]s) (increase(%[3]s[%[4]s]))", throttleBy,
				cadvisor("container_cpu_cfs_throttled_periods_total"), cadvisor("container_cpu_cfs_periods_total"), rate),
			By: []string{"namespace", "pod", "container"}},
		{Result: throttle.Name, Name: throttle.MetricCPULimit}: {
			Query: fmt.Sprintf("max by (%[1]s) (%[2]s) / max by (%[1]s) (%[3]s)", throttleBy, cadvisor("container_spec_cpu_quota"), cadvisor("container_spec_cpu_period")),
			By:    []string{"namespace", "pod", "container"}},
	}
}

// notHeld says why Prometheus does not hold a result's metrics, for the results whose reason is not "no
// PromQL expression" alone.
var notHeld = map[string]string{
	"pods.startup":              "a benchmark kubeslow runs (the phases of the pods it creates); its SLO is exported as the pod start-up burn-rate alert",
	"pods.churn":                "a benchmark kubeslow runs (pods created in waves)",
	"dns.readiness":             "a benchmark kubeslow runs (jobs resolving a new Service)",
	"dns.lookups":               "kubeslow's own lookups from pods it runs",
	"disk.fdatasync":            "a benchmark kubeslow runs (fdatasync on the node's disk)",
	"net.paths":                 "a benchmark kubeslow runs (pod-to-pod and host throughput)",
	"net.mtu":                   "probes kubeslow sends (path MTU)",
	"api.audit":                 "read from apiserver audit logs, not metrics",
	"pods.resources":            "read from the pods' status and Events",
	"nodes.health":              "read from the Node objects' conditions and their history",
	"controlplane.availability": "kubeslow's own probes of the apiserver and etcd during a run",
	"controlplane.usage":        "CPU against the cores the control plane may use, found by discovery or stated (--prometheus-control-plane-cores): not one standing query",
	"dns.facts":                 "CoreDNS per-replica shares against the cluster's nodes and Pods (several queries and API reads)",
	"prometheus.timeline":       "the order in which a past window's signals crossed, not a signal",
}
