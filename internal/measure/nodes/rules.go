package nodes

import (
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// The metrics the rules read.
var (
	nodesNotReady      = rule.Metric{Result: Name, Name: MetricNotReady}
	nodesWithCondition = rule.Metric{Result: Name, Name: MetricWithCondition}
	nodesTotal         = rule.Metric{Result: Name, Name: MetricNodes}
	nodesFlapping      = rule.Metric{Result: Name, Name: MetricFlapping}
)

// Rules are the rules over the nodes' state (and KS-ETCD-EVENTS, which reads the node count with a cluster fact).
func Rules() []rule.Rule {
	return []rule.Rule{
		{
			ID: "KS-NODE-001", Title: "Nodes are NotReady", Severity: result.SeverityError, Cases: []string{"B"},
			When:    rule.Condition{Metric: nodesNotReady, Op: ">", Value: 0, Unit: "count"},
			Source:  "Kubernetes node lifecycle: the Ready condition gates scheduling and eviction",
			Summary: "{{.value}} nodes are NotReady: no new pods land there, and their pods are evicted after the toleration period",
			Remediation: "Check the kubelet and container runtime on those nodes (journalctl -u kubelet), their network to the apiserver, " +
				"and their leases in kube-node-lease; the nodes.health records name them.",
		},
		{
			ID: "KS-NODE-002", Title: "Nodes report resource pressure", Severity: result.SeverityWarning,
			When:        rule.Condition{Metric: nodesWithCondition, Op: ">", Value: 0, Unit: "count"},
			Source:      "kubelet node-pressure eviction (the condition is set when an eviction threshold is crossed)",
			Summary:     "{{.value}} nodes report {{.condition}}=True: the kubelet is evicting pods and refusing new ones of lower priority",
			Remediation: "Free or add the resource under pressure; review kubelet --eviction-hard and the pods' requests.",
		},
		{
			ID: "KS-NODE-FLAP", Title: "Nodes flap between Ready and NotReady", Severity: result.SeverityWarning,
			When: rule.Condition{Metric: nodesFlapping, Op: ">", Value: 0, Unit: "count"},
			Source: "kubelet renews its kube-node-lease Lease every 10 s (a quarter of nodeLeaseDurationSeconds, 40 s); the node lifecycle controller " +
				"marks a node NotReady only after node-monitor-grace-period (50 s) without a renewal, so a node that is up never does",
			Summary: "{{.value}} nodes went NotReady and came back within the last hour of Events: they are up but lose their heartbeat, " +
				"and each time their pods are marked not Ready (taken out of Services) and new pods avoid them",
			Remediation: "For the nodes the nodes.health records mark Flapping (with their not_ready_transitions): compare their Lease's renewTime " +
				"in kube-node-lease with its leaseDurationSeconds, and look for what delays renewals — a starved kubelet (CPU/memory pressure, " +
				"system-reserved too small), a slow or lossy path to the apiserver, or slow API writes (etcd.health, api.responsiveness).",
		},
		{
			ID: "KS-ETCD-EVENTS", Title: "Events share the main etcd in a large cluster", Severity: result.SeverityInfo, Cases: []string{"B"},
			When: rule.Condition{Metric: nodesTotal, Op: ">=", Value: 500, Unit: "count"},
			Source: "Kubernetes scalability SLOs' preconditions: Events in a separate etcd; case B moved them out past ~1,000 nodes " +
				"(checked when discovery found the apiserver without --etcd-servers-overrides for /events)",
			Summary:     "{{.value}} nodes and the apiserver has no --etcd-servers-overrides for /events: Event churn competes with every other write",
			Remediation: "Run a second etcd for Events and point the apiservers at it with --etcd-servers-overrides=/events#https://...",
			Match: func(r *result.Report, rl rule.Rule) []rule.Hit {
				if r.Cluster.Facts["events-etcd"] != "shared" {
					return nil
				}
				hits := rl.Crossing(r)
				for i := range hits {
					hits[i].Evidence = append(hits[i].Evidence, result.Evidence{Name: "events_etcd_separate", Value: 0, Unit: "bool",
						Labels: map[string]string{"source": "kube-apiserver --etcd-servers-overrides"}})
				}
				return hits
			},
		},
	}
}
