package kube

import corev1 "k8s.io/api/core/v1"

// Simulated nodes: kwok manages the nodes annotated SimulatedNodeAnnotation=SimulatedNodeValue (its
// --manage-nodes-with-annotation-selector), and the lab taints them with the same key so that only pods
// meant for them land there. A simulated node has no kernel, kubelet or disk: node probes, agents and data
// path benchmarks skip it.
const (
	SimulatedNodeAnnotation = "kwok.x-k8s.io/node"
	SimulatedNodeValue      = "fake"
	// SimulatedNodeTaint is the taint key on simulated nodes (NoSchedule).
	SimulatedNodeTaint = SimulatedNodeAnnotation
	// SimulatedNodeLabel=SimulatedNodeLabelValue is the label kwok's own examples (and the lab) give them,
	// the only way a DaemonSet's node affinity can keep off them.
	SimulatedNodeLabel      = "type"
	SimulatedNodeLabelValue = "kwok"
)

// IsSimulated reports whether n is a kwok-simulated node.
func IsSimulated(n *corev1.Node) bool {
	return n.Annotations[SimulatedNodeAnnotation] == SimulatedNodeValue
}
