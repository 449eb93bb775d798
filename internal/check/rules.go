package check

import (
	"github.com/kubeslow/kubeslow/internal/measure/nodes"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// Rules returns every rule of the findings engine.
func Rules() []Rule {
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
	}
}
