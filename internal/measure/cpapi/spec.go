package cpapi

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares controlplane.api to the registry (internal/engine/catalogue); the rules that read it combine it
// with other results (internal/engine/check).
//
// The APF dump and EKS's metrics are Optional permissions: read where allowed (a 403 on the dump is said in
// the result), never a reason to skip the rest. EKS's rule is the one its documentation gives for the ksh/kcm
// endpoints ("Fetch control plane raw metrics in Prometheus format", EKS User Guide): get on kcm/metrics and
// ksh/metrics of metrics.eks.amazonaws.com.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly,
	New: func(measure.Options) measure.Measurement { return New() },
	Permissions: []measure.Permission{
		{Verbs: []string{"get"}, NonResourceURL: "/readyz", Reason: "the apiserver's health checks (/readyz?verbose)"},
		{Verbs: []string{"get"}, Group: "coordination.k8s.io", Resource: "leases", Reason: "how stale kube-scheduler's and kube-controller-manager's leader Leases are (kube-system)"},
		{Verbs: []string{"get"}, NonResourceURL: APFDumpPath, Optional: true, Reason: "optional: APF's per-flow queue snapshot (who waits in which queue); without it the result says it was not read"},
		{Verbs: []string{"get"}, Group: "metrics.eks.amazonaws.com", Resource: "ksh/metrics", Optional: true, Reason: "optional, EKS only: the scheduler's metrics (pending pods by queue)"},
		{Verbs: []string{"get"}, Group: "metrics.eks.amazonaws.com", Resource: "kcm/metrics", Optional: true, Reason: "optional, EKS only: the controller-manager's metrics (workqueue depth)"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
