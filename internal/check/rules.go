package check

import (
	"fmt"

	"github.com/kubeslow/kubeslow/internal/measure/apislo"
	"github.com/kubeslow/kubeslow/internal/measure/etcdhealth"
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/pkg/result"
)

const sloSource = "Kubernetes SIG Scalability API call latency SLO (p99 over the window, WATCH/CONNECT/proxy/log/exec excluded)"

// Rules returns every rule of the findings engine.
func Rules() []Rule {
	var all []Rule
	for _, rs := range [][]Rule{coreRules(), AuditRules(), PodRules(), NetRules(), NodeRules(), KubeletRules(), DNSRules(), DiskBenchRules(), ChurnRules(), CombinedRules()} {
		all = append(all, rs...)
	}
	return all
}

// The metrics the core rules read.
var (
	nodesNotReady      = Metric{nodes.Name, nodes.MetricNotReady}
	nodesWithCondition = Metric{nodes.Name, nodes.MetricWithCondition}
	nodesTotal         = Metric{nodes.Name, nodes.MetricNodes}
	nodesFlapping      = Metric{nodes.Name, nodes.MetricFlapping}
	apiLatencySingle   = Metric{apislo.Name, apislo.MetricLatencyP99Single}
	apiLatencyList     = Metric{apislo.Name, apislo.MetricLatencyP99List}
	apiConflicts       = Metric{apislo.Name, apislo.MetricConflictsPerMinute}
	apiAPFRejected     = Metric{apislo.Name, apislo.MetricAPFRejectedPerMinute}
	apiListBytes       = Metric{apislo.Name, apislo.MetricListBytesPerSecond}
	apiListBytesShare  = Metric{apislo.Name, apislo.MetricListBytesShare}
	etcdFsync          = Metric{etcdhealth.Name, etcdhealth.MetricWALFsyncP99}
	etcdCommit         = Metric{etcdhealth.Name, etcdhealth.MetricBackendCommitP99}
	etcdNoSpace        = Metric{etcdhealth.Name, etcdhealth.MetricAlarmNoSpace}
	etcdQuota          = Metric{etcdhealth.Name, etcdhealth.MetricDBQuotaRatio}
	etcdLeaderChanges  = Metric{etcdhealth.Name, etcdhealth.MetricLeaderChanges}
)

func coreRules() []Rule {
	return []Rule{
		{
			ID: "KS-NODE-001", Title: "Nodes are NotReady", Severity: result.SeverityError, Cases: []string{"B"},
			When:    Condition{Metric: nodesNotReady, Op: ">", Value: 0, Unit: "count"},
			Source:  "Kubernetes node lifecycle: the Ready condition gates scheduling and eviction",
			Summary: "{{.value}} nodes are NotReady: no new pods land there, and their pods are evicted after the toleration period",
			Remediation: "Check the kubelet and container runtime on those nodes (journalctl -u kubelet), their network to the apiserver, " +
				"and their leases in kube-node-lease; the nodes.health records name them.",
		},
		{
			ID: "KS-NODE-002", Title: "Nodes report resource pressure", Severity: result.SeverityWarning,
			When:        Condition{Metric: nodesWithCondition, Op: ">", Value: 0, Unit: "count"},
			Source:      "kubelet node-pressure eviction (the condition is set when an eviction threshold is crossed)",
			Summary:     "{{.value}} nodes report {{.condition}}=True: the kubelet is evicting pods and refusing new ones of lower priority",
			Remediation: "Free or add the resource under pressure; review kubelet --eviction-hard and the pods' requests.",
		},
		{
			ID: "KS-NODE-FLAP", Title: "Nodes flap between Ready and NotReady", Severity: result.SeverityWarning,
			When: Condition{Metric: nodesFlapping, Op: ">", Value: 0, Unit: "count"},
			Source: "kubelet renews its kube-node-lease Lease every 10 s (a quarter of nodeLeaseDurationSeconds, 40 s); the node lifecycle controller " +
				"marks a node NotReady only after node-monitor-grace-period (50 s) without a renewal, so a node that is up never does",
			Summary: "{{.value}} nodes went NotReady and came back within the last hour of Events: they are up but lose their heartbeat, " +
				"and each time their pods are marked not Ready (taken out of Services) and new pods avoid them",
			Remediation: "For the nodes the nodes.health records mark Flapping (with their not_ready_transitions): compare their Lease's renewTime " +
				"in kube-node-lease with its leaseDurationSeconds, and look for what delays renewals — a starved kubelet (CPU/memory pressure, " +
				"system-reserved too small), a slow or lossy path to the apiserver, or slow API writes (etcd.health, api.responsiveness).",
		},
		{
			ID: "KS-API-LATENCY", Title: "API calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B", "E"},
			When:    Condition{Metric: apiLatencySingle, Op: ">", Value: apislo.SLOSingle, Unit: "seconds"},
			Source:  sloSource + ": mutating and single-object calls",
			Summary: "{{.verb}} {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}: the control plane is overloaded or etcd is slow",
			Remediation: "Look at what loads the apiserver (api.responsiveness rates, `kubeslow audit` on its audit log) and at etcd (etcd.health); " +
				"give the control plane more CPU, or etcd a faster disk.",
		},
		{
			ID: "KS-API-LIST-LATENCY", Title: "LIST calls slower than the SLO", Severity: result.SeverityError, Cases: []string{"B"},
			When:        Condition{Metric: apiLatencyList, Op: ">", Value: apislo.SLOList, Unit: "seconds"},
			Source:      sloSource + ": LIST at namespace and cluster scope",
			Summary:     "LIST {{.resource}} ({{.scope}}) p99 {{.value}} > {{.threshold}}",
			Remediation: "Large collections listed from etcd: use informers (watch + cache) instead of periodic LISTs, paginate, and list with resourceVersion=0 to serve from the cache.",
		},
		{
			ID: "KS-API-409", Title: "Conflict storm: concurrent updates to the same objects", Severity: result.SeverityWarning, Cases: []string{"E"},
			When:    Condition{Metric: apiConflicts, Op: ">", Value: 60, Unit: "per_minute"},
			Source:  "kubeslow heuristic from case E (Calico IPAM): more than one 409 per second on a resource means writers race on shared objects, and their retries add load",
			Summary: "{{.value}} 409 Conflicts on {{.verb}} {{.resource}}{{if .group}} ({{.group}}){{end}}: writers race to update the same objects and every retry is another request",
			Remediation: "Find the writers and the hot objects (`kubeslow audit` on the apiserver audit log names them); serialise writers per object " +
				"(e.g. Calico's per-node IPAM lock), spread them over more objects (larger or more IPAM blocks), or back off on conflict.",
		},
		{
			ID: "KS-API-THROTTLED", Title: "Requests rejected by API Priority and Fairness", Severity: result.SeverityWarning, Cases: []string{"B", "E"},
			When:        Condition{Metric: apiAPFRejected, Op: ">", Value: 0, Unit: "per_minute"},
			Source:      "Kubernetes API Priority and Fairness: a rejection means a priority level's seats and queues were full",
			Summary:     "{{.value}} requests rejected ({{.labels}}): clients see 429 and retry",
			Remediation: "Find the flows that fill the priority level (apiserver_flowcontrol_* metrics, `kubeslow audit`), reduce them, or give the level more concurrency shares.",
		},
		{
			ID: "KS-API-LIST-BYTES", Title: "One resource dominates LIST traffic", Severity: result.SeverityWarning, Cases: []string{"B"},
			When: Condition{Metric: apiListBytesShare, Op: ">", Value: 0.5, Unit: "ratio"},
			Also: []Condition{{Metric: apiListBytes, Op: ">", Value: 1 << 20, Unit: "bytes_per_second"}},
			Source: "kubeslow heuristic from case B (a per-node agent LISTing Events made apiservers read >500 MB/s from etcd): " +
				"one resource over half of LIST bytes, at a volume where it matters",
			Summary:     "LISTs of {{.resource}} return {{.mbps}} ({{.share}} of all LIST bytes): clients re-read a large collection instead of watching it",
			Remediation: "Find the client (`kubeslow audit` names user and user agent): make it watch (informers) or poll less; move Events to their own etcd (--etcd-servers-overrides=/events#...).",
			Match: func(r *result.Report, rule Rule) []Hit {
				hits := rule.Crossing(r)
				for i, h := range hits {
					rate := apiListBytes.In(r, map[string]string{"resource": h.Vars["resource"]})
					hits[i].Vars["mbps"] = result.FormatValue(rate.Value/1e6) + " MB/s"
					hits[i].Vars["share"] = percent(h.Value)
				}
				return hits
			},
		},
		{
			ID: "KS-ETCD-FSYNC", Title: "etcd's disk is too slow (WAL fsync)", Severity: result.SeverityError, Cases: []string{"B"},
			When:        Condition{Metric: etcdFsync, Op: ">", Value: etcdhealth.FsyncP99Max, Unit: "seconds"},
			Source:      "etcd documentation: p99 of etcd_disk_wal_fsync_duration_seconds should be below 10 ms",
			Summary:     "etcd WAL fsync p99 {{.value}} > {{.threshold}}: every write waits for the disk, so every API write and lease renewal is slow",
			Remediation: "Put etcd's data on a local SSD or a dedicated disk with low sync latency (not a shared network disk); check with fio --fdatasync=1 as etcd's docs describe.",
		},
		{
			ID: "KS-ETCD-COMMIT", Title: "etcd's backend commits are slow", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        Condition{Metric: etcdCommit, Op: ">", Value: etcdhealth.CommitP99Max, Unit: "seconds"},
			Source:      "etcd documentation: p99 of etcd_disk_backend_commit_duration_seconds should be below 25 ms",
			Summary:     "etcd backend commit p99 {{.value}} > {{.threshold}}",
			Remediation: "A faster disk for etcd; defragment a large database (etcdctl defrag).",
		},
		{
			ID: "KS-ETCD-NOSPACE", Title: "etcd is out of space and refuses writes", Severity: result.SeverityCritical, Cases: []string{"B"},
			When:    Condition{Metric: etcdNoSpace, Op: ">", Value: 0, Unit: "count"},
			Source:  "etcd: the NOSPACE alarm is raised when the database reaches --quota-backend-bytes (default 2 GiB) and stops all writes",
			Summary: "etcd's NOSPACE alarm is active: the cluster accepts no writes (no pod, no lease, no status update)",
			Remediation: "Compact and defragment etcd, disarm the alarm (etcdctl alarm disarm), and raise --quota-backend-bytes (up to 8 GiB is suggested); " +
				"find what fills it (large objects, Events: move them to their own etcd).",
		},
		{
			ID: "KS-ETCD-QUOTA", Title: "etcd's database is close to its quota", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        Condition{Metric: etcdQuota, Op: ">=", Value: 0.8, Unit: "ratio"},
			Source:      "etcd: writes stop at --quota-backend-bytes; 80% leaves time to act",
			Summary:     "etcd's database is at {{.value}} of its quota",
			Remediation: "Compact and defragment; raise --quota-backend-bytes; find what grows (large objects, Events).",
		},
		{
			ID: "KS-ETCD-EVENTS", Title: "Events share the main etcd in a large cluster", Severity: result.SeverityInfo, Cases: []string{"B"},
			When: Condition{Metric: nodesTotal, Op: ">=", Value: 500, Unit: "count"},
			Source: "Kubernetes scalability SLOs' preconditions: Events in a separate etcd; case B moved them out past ~1,000 nodes " +
				"(checked when discovery found the apiserver without --etcd-servers-overrides for /events)",
			Summary:     "{{.value}} nodes and the apiserver has no --etcd-servers-overrides for /events: Event churn competes with every other write",
			Remediation: "Run a second etcd for Events and point the apiservers at it with --etcd-servers-overrides=/events#https://...",
			Match: func(r *result.Report, rule Rule) []Hit {
				if r.Cluster.Facts["events-etcd"] != "shared" {
					return nil
				}
				hits := rule.Crossing(r)
				for i := range hits {
					hits[i].Evidence = append(hits[i].Evidence, result.Evidence{Name: "events_etcd_separate", Value: 0, Unit: "bool",
						Labels: map[string]string{"source": "kube-apiserver --etcd-servers-overrides"}})
				}
				return hits
			},
		},
		{
			ID: "KS-ETCD-LEADER", Title: "etcd changed leader during the measurement", Severity: result.SeverityWarning, Cases: []string{"B"},
			When:        Condition{Metric: etcdLeaderChanges, Op: ">", Value: 0, Unit: "count"},
			Source:      "etcd: leader elections stall writes; frequent ones point at slow disks or networks between members",
			Summary:     "{{.value}} leader changes in the window",
			Remediation: "Check the disk and network latency between etcd members; raise --heartbeat-interval/--election-timeout only after fixing them.",
		},
	}
}

// percent prints a ratio as a percentage ("80%").
func percent(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }
