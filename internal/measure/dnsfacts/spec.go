package dnsfacts

import "github.com/kubeslow/kubeslow/internal/measure"

// Spec declares dns.facts to the registry (internal/engine/catalogue); its past-window twin is promwindow's DNS
// measurement.
var Spec = measure.Spec{
	Name: Name, Kind: measure.ReadOnly, Rules: Rules,
	New: func(o measure.Options) measure.Measurement { return New(o.Window) },
	Permissions: []measure.Permission{
		{Verbs: []string{"get"}, Resource: "services", Reason: "the cluster DNS Service (kube-system/kube-dns) and its selector"},
		{Verbs: []string{"list"}, Resource: "pods", Reason: "the DNS pods behind it: their nodes, owners, affinity and spread"},
		{Verbs: []string{"list"}, Group: "discovery.k8s.io", Resource: "endpointslices", Reason: "DNS endpoints that no pod backs"},
		{Verbs: []string{"list"}, Group: "apps", Resource: "daemonsets", Reason: "NodeLocal DNSCache (node-local-dns)"},
		{Verbs: []string{"list"}, Group: "apps", Resource: "deployments", Reason: "a cluster-proportional DNS autoscaler"},
		{Verbs: []string{"list"}, Group: "autoscaling", Resource: "horizontalpodautoscalers", Reason: "an HPA on the DNS workload"},
		{Verbs: []string{"list", "watch"}, Resource: "nodes", Reason: "the nodes replicas could spread over, and their zones"},
		{Verbs: []string{"get"}, Resource: "pods/proxy", Reason: "each CoreDNS replica's /metrics (:9153) through the apiserver's pod proxy"},
	},
}

// Spec implements measure.Declared.
func (*Measurement) Spec() measure.Spec { return Spec }
