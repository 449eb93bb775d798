package check

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/internal/report"
	"github.com/kubeslow/kubeslow/pkg/result"
)

const sloSource = "Kubernetes SIG Scalability API call latency SLO (p99 over the window, WATCH/CONNECT/proxy/log/exec excluded)"

// Rules returns every rule of the findings engine.
func Rules() []Rule {
	var all []Rule
	for _, rs := range [][]Rule{coreRules(), AuditRules(), PodRules(), NetRules(), DNSRules(), DiskBenchRules(), CombinedRules()} {
		all = append(all, rs...)
	}
	return all
}

func coreRules() []Rule {
	return []Rule{
		{
			ID: "KS-NODE-001", Title: "Nodes are NotReady", Severity: result.SeverityError, Cases: []string{"B"},
			Needs:     []string{nodes.Name},
			Threshold: result.Threshold{Op: ">", Value: 0, Unit: "count", Source: "Kubernetes node lifecycle: the Ready condition gates scheduling and eviction"},
			Summary:   "{{.value}} nodes are NotReady: no new pods land there, and their pods are evicted after the toleration period",
			Remediation: "Check the kubelet and container runtime on those nodes (journalctl -u kubelet), their network to the apiserver, " +
				"and their leases in kube-node-lease; the nodes.health records name them.",
			Match: MetricAbove(nodes.Name, "nodes_not_ready", ">", 0, "count"),
		},
		{
			ID: "KS-NODE-002", Title: "Nodes report resource pressure", Severity: result.SeverityWarning,
			Needs:       []string{nodes.Name},
			Threshold:   result.Threshold{Op: ">", Value: 0, Unit: "count", Source: "kubelet node-pressure eviction (the condition is set when an eviction threshold is crossed)"},
			Summary:     "{{.value}} nodes report {{.condition}}=True: the kubelet is evicting pods and refusing new ones of lower priority",
			Remediation: "Free or add the resource under pressure; review kubelet --eviction-hard and the pods' requests.",
			Match:       MetricAbove(nodes.Name, "nodes_with_condition", ">", 0, "count"),
		},
		{
			ID: "KS-API-LATENCY", Title: "API calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B", "E"},
			Needs:     []string{apislo.Name},
			Threshold: result.Threshold{Op: ">", Value: apislo.SLOSingle, Unit: "seconds", Source: sloSource + ": mutating and single-object calls"},
			Summary:   "{{.verb}} {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}: the control plane is overloaded or etcd is slow",
			Remediation: "Look at what loads the apiserver (api.responsiveness rates, `kubeslow audit` on its audit log) and at etcd (etcd.health); " +
				"give the control plane more CPU, or etcd a faster disk.",
			Match: MetricAbove(apislo.Name, "latency_p99_single", ">", apislo.SLOSingle, "seconds"),
		},
		{
			ID: "KS-API-LIST-LATENCY", Title: "LIST calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B"},
			Needs:       []string{apislo.Name},
			Threshold:   result.Threshold{Op: ">", Value: apislo.SLOList, Unit: "seconds", Source: sloSource + ": LIST at namespace and cluster scope"},
			Summary:     "LIST {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}",
			Remediation: "Large collections listed from etcd: use informers (watch + cache) instead of periodic LISTs, paginate, and list with resourceVersion=0 to serve from the cache.",
			Match:       MetricAbove(apislo.Name, "latency_p99_list", ">", apislo.SLOList, "seconds"),
		},
		{
			ID: "KS-API-409", Title: "Conflict storm: concurrent updates to the same objects", Severity: result.SeverityWarning, Cases: []string{"E"},
			Needs: []string{apislo.Name},
			Threshold: result.Threshold{Op: ">", Value: 60, Unit: "per_minute",
				Source: "kubeslow heuristic from case E (Calico IPAM): more than one 409 per second on a resource means writers race on shared objects, and their retries add load"},
			Summary: "{{.value}} 409 Conflicts on {{.verb}} {{.resource}}{{if .group}} ({{.group}}){{end}}: writers race to update the same objects and every retry is another request",
			Remediation: "Find the writers and the hot objects (`kubeslow audit` on the apiserver audit log names them); serialise writers per object " +
				"(e.g. Calico's per-node IPAM lock), spread them over more objects (larger or more IPAM blocks), or back off on conflict.",
			Match: MetricAbove(apislo.Name, "conflicts_per_minute", ">", 60, "per_minute"),
		},
		{
			ID: "KS-API-THROTTLED", Title: "Requests rejected by API Priority and Fairness", Severity: result.SeverityWarning, Cases: []string{"B", "E"},
			Needs:       []string{apislo.Name},
			Threshold:   result.Threshold{Op: ">", Value: 0, Unit: "per_minute", Source: "Kubernetes API Priority and Fairness: a rejection means a priority level's seats and queues were full"},
			Summary:     "{{.value}} requests rejected ({{.labels}}): clients see 429 and retry",
			Remediation: "Find the flows that fill the priority level (apiserver_flowcontrol_* metrics, `kubeslow audit`), reduce them, or give the level more concurrency shares.",
			Match:       MetricAbove(apislo.Name, "apf_rejected_per_minute", ">", 0, "per_minute"),
		},
		{
			ID: "KS-API-LIST-BYTES", Title: "One resource dominates LIST traffic", Severity: result.SeverityWarning, Cases: []string{"B"},
			Needs: []string{apislo.Name},
			Threshold: result.Threshold{Op: ">", Value: listBytesMin, Unit: "bytes_per_second",
				Source: "kubeslow heuristic from case B (a per-node agent LISTing Events made apiservers read >500 MB/s from etcd): one resource over half of LIST bytes and above 1 MiB/s"},
			Summary:     "LISTs of {{.resource}} return {{.value}} ({{.share}} of all LIST bytes): clients re-read a large collection instead of watching it",
			Remediation: "Find the client (`kubeslow audit` names user and user agent): make it watch (informers) or poll less; move Events to their own etcd (--etcd-servers-overrides=/events#...).",
			Match:       listBytesMatch,
		},
		{
			ID: "KS-ETCD-FSYNC", Title: "etcd's disk is too slow (WAL fsync)", Severity: result.SeverityError, Cases: []string{"B"},
			Needs:       []string{etcdhealth.Name},
			Threshold:   result.Threshold{Op: ">", Value: etcdhealth.FsyncP99Max, Unit: "seconds", Source: "etcd documentation: p99 of etcd_disk_wal_fsync_duration_seconds should be below 10 ms"},
			Summary:     "etcd WAL fsync p99 {{.value}} > {{.threshold}}: every write waits for the disk, so every API write and lease renewal is slow",
			Remediation: "Put etcd's data on a local SSD or a dedicated disk with low sync latency (not a shared network disk); check with fio --fdatasync=1 as etcd's docs describe.",
			Match:       MetricAbove(etcdhealth.Name, "wal_fsync_p99", ">", etcdhealth.FsyncP99Max, "seconds"),
		},
		{
			ID: "KS-ETCD-COMMIT", Title: "etcd's backend commits are slow", Severity: result.SeverityWarning, Cases: []string{"B"},
			Needs:       []string{etcdhealth.Name},
			Threshold:   result.Threshold{Op: ">", Value: etcdhealth.CommitP99Max, Unit: "seconds", Source: "etcd documentation: p99 of etcd_disk_backend_commit_duration_seconds should be below 25 ms"},
			Summary:     "etcd backend commit p99 {{.value}} > {{.threshold}}",
			Remediation: "A faster disk for etcd; defragment a large database (etcdctl defrag).",
			Match:       MetricAbove(etcdhealth.Name, "backend_commit_p99", ">", etcdhealth.CommitP99Max, "seconds"),
		},
		{
			ID: "KS-ETCD-NOSPACE", Title: "etcd is out of space and refuses writes", Severity: result.SeverityCritical, Cases: []string{"B"},
			Needs:     []string{etcdhealth.Name},
			Threshold: result.Threshold{Op: ">", Value: 0, Unit: "count", Source: "etcd: the NOSPACE alarm is raised when the database reaches --quota-backend-bytes (default 2 GiB) and stops all writes"},
			Summary:   "etcd's NOSPACE alarm is active: the cluster accepts no writes (no pod, no lease, no status update)",
			Remediation: "Compact and defragment etcd, disarm the alarm (etcdctl alarm disarm), and raise --quota-backend-bytes (up to 8 GiB is suggested); " +
				"find what fills it (large objects, Events: move them to their own etcd).",
			Match: MetricAbove(etcdhealth.Name, "alarm_nospace", ">", 0, "count"),
		},
		{
			ID: "KS-ETCD-QUOTA", Title: "etcd's database is close to its quota", Severity: result.SeverityWarning, Cases: []string{"B"},
			Needs:       []string{etcdhealth.Name},
			Threshold:   result.Threshold{Op: ">=", Value: 0.8, Unit: "ratio", Source: "etcd: writes stop at --quota-backend-bytes; 80% leaves time to act"},
			Summary:     "etcd's database is at {{.value}} of its quota",
			Remediation: "Compact and defragment; raise --quota-backend-bytes; find what grows (large objects, Events).",
			Match:       MetricAbove(etcdhealth.Name, "db_quota_ratio", ">=", 0.8, "ratio"),
		},
		{
			ID: "KS-ETCD-EVENTS", Title: "Events share the main etcd in a large cluster", Severity: result.SeverityInfo, Cases: []string{"B"},
			Needs: []string{nodes.Name},
			Threshold: result.Threshold{Op: ">=", Value: eventsEtcdNodes, Unit: "nodes",
				Source: "Kubernetes scalability SLOs' preconditions: Events in a separate etcd; case B moved them out past ~1,000 nodes"},
			Summary:     "{{.value}} nodes and the apiserver has no --etcd-servers-overrides for /events: Event churn competes with every other write",
			Remediation: "Run a second etcd for Events and point the apiservers at it with --etcd-servers-overrides=/events#https://...",
			Match:       eventsEtcdMatch,
		},
		{
			ID: "KS-ETCD-LEADER", Title: "etcd changed leader during the measurement", Severity: result.SeverityWarning, Cases: []string{"B"},
			Needs:       []string{etcdhealth.Name},
			Threshold:   result.Threshold{Op: ">", Value: 0, Unit: "count", Source: "etcd: leader elections stall writes; frequent ones point at slow disks or networks between members"},
			Summary:     "{{.value}} leader changes in the window",
			Remediation: "Check the disk and network latency between etcd members; raise --heartbeat-interval/--election-timeout only after fixing them.",
			Match:       MetricAbove(etcdhealth.Name, "leader_changes", ">", 0, "count"),
		},
	}
}

// eventsEtcdNodes is the cluster size from which Events in the main etcd are worth a note.
const eventsEtcdNodes = 500

func eventsEtcdMatch(r *result.Report) []Hit {
	res := r.Result(nodes.Name)
	total := res.Metric("nodes", nil)
	if r.Cluster.Facts["events-etcd"] != "shared" || total == nil || total.Value < eventsEtcdNodes {
		return nil
	}
	return []Hit{{Evidence: []result.Evidence{{Name: "nodes", Value: total.Value, Unit: "count", Result: nodes.Name},
		{Name: "events_etcd_separate", Value: 0, Unit: "bool", Labels: map[string]string{"source": "kube-apiserver --etcd-servers-overrides"}}},
		Vars: map[string]string{"value": report.FormatValue(total.Value)}}}
}

// listBytesMin is the LIST volume below which one resource's share does not matter.
const listBytesMin = 1 << 20

// listBytesMatch fires when one resource takes over half of LIST bytes at more than 1 MiB/s.
func listBytesMatch(r *result.Report) []Hit {
	res := r.Result(apislo.Name)
	if res == nil {
		return nil
	}
	var hits []Hit
	for _, m := range res.Metrics {
		if m.Name != "list_bytes_share" || m.Value <= 0.5 {
			continue
		}
		rate := res.Metric("list_bytes_per_second", map[string]string{"resource": m.Labels["resource"]})
		if rate == nil || rate.Value <= listBytesMin {
			continue
		}
		hits = append(hits, Hit{
			Evidence: []result.Evidence{evidenceOf(*rate, apislo.Name),
				evidenceOf(m, apislo.Name)},
			Vars: map[string]string{"resource": m.Labels["resource"], "value": fmt.Sprintf("%s MB/s", report.FormatValue(rate.Value/1e6)),
				"share": fmt.Sprintf("%.0f%%", m.Value*100)},
		})
	}
	return hits
}
