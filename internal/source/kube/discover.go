package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeslow/kubeslow/pkg/result"
)

// knownCNIs maps DaemonSet name fragments in kube-system (or their own namespaces) to CNI names.
var knownCNIs = []struct{ fragment, name string }{
	{"calico-node", "calico"}, {"cilium", "cilium"}, {"kube-flannel", "flannel"}, {"flannel", "flannel"},
	{"weave-net", "weave"}, {"kube-router", "kube-router"}, {"aws-node", "aws-vpc-cni"}, {"antrea-agent", "antrea"},
	{"canal", "canal"}, {"azure-cni", "azure-cni"},
}

// cniNodeAnnotations maps annotations a CNI's node agent writes on its Node to CNI names: found where the
// CNI runs outside a DaemonSet of a known name (a static pod, a systemd unit, k3s's embedded flannel).
// Sources: flannel's kube subnet manager (pkg/subnet/kube: flannel.alpha.coreos.com/backend-type), Calico's
// node (projectcalico.org/IPv4Address), Cilium's agent (network.cilium.io/ipv4-cilium-host), Antrea's agent
// (node.antrea.io/mac-address), kube-router (kube-router.io/pod-cidr).
var cniNodeAnnotations = []struct{ key, name string }{
	{"flannel.alpha.coreos.com/backend-type", "flannel"}, {"projectcalico.org/IPv4Address", "calico"},
	{"network.cilium.io/ipv4-cilium-host", "cilium"}, {"io.cilium.network.ipv4-cilium-host", "cilium"},
	{"node.antrea.io/mac-address", "antrea"}, {"kube-router.io/pod-cidr", "kube-router"},
}

// cniFromNodes names the CNI from its annotations on the nodes, with flannel's backend ("flannel (vxlan)"), or "".
func cniFromNodes(nodes []corev1.Node) string {
	for i := range nodes {
		for _, a := range cniNodeAnnotations {
			v, ok := nodes[i].Annotations[a.key]
			if !ok {
				continue
			}
			if a.name == "flannel" && v != "" {
				return "flannel (" + v + ")"
			}
			return a.name
		}
	}
	return ""
}

// Discover identifies the cluster: apiserver version, kube-system UID, node counts and a few facts (CNI,
// kube-proxy, DNS, managed). It needs read access; anything it may not read is recorded as "unknown".
// An unreachable apiserver is an error: nothing else can run.
func Discover(ctx context.Context, c kubernetes.Interface, name, server string) (result.Cluster, error) {
	cl := result.Cluster{Name: name, Server: server, Facts: map[string]string{}}
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		return cl, fmt.Errorf("cannot reach the apiserver at %s: %w", server, err)
	}
	cl.Version = v.GitVersion
	if ns, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err == nil {
		cl.UID = string(ns.UID)
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsForbidden(err):
		cl.Facts["nodes"] = "unknown (no permission to list nodes)"
	case err != nil:
		return cl, fmt.Errorf("listing nodes: %w", err)
	default:
		managed := ""
		for i := range nodes.Items {
			n := &nodes.Items[i]
			cl.Nodes.Total++
			for _, cond := range n.Status.Conditions {
				if cond.Type == "Ready" && cond.Status == "True" {
					cl.Nodes.Ready++
				}
			}
			if IsSimulated(n) {
				cl.Nodes.Simulated++
			}
			if p := n.Spec.ProviderID; p != "" && managed == "" {
				managed, _, _ = strings.Cut(p, "://")
			}
		}
		if managed != "" {
			cl.Facts["provider"] = managed
		}
		if cni := cniFromNodes(nodes.Items); cni != "" {
			cl.Facts["cni"] = cni
		}
	}
	ds, err := c.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err == nil {
		if cl.Facts["cni"] == "" {
			cl.Facts["cni"] = "unknown"
		}
		for _, d := range ds.Items {
			for _, k := range knownCNIs {
				// A known DaemonSet names it, unless the nodes said the same with more (flannel's backend).
				if strings.Contains(d.Name, k.fragment) && !strings.HasPrefix(cl.Facts["cni"], k.name) {
					cl.Facts["cni"] = k.name
				}
			}
			if d.Name == "kube-proxy" {
				cl.Facts["kube-proxy"] = "daemonset"
			}
		}
	}
	if cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{}); err == nil {
		for _, v := range cm.Data {
			for _, line := range strings.Split(v, "\n") {
				if mode, ok := strings.CutPrefix(strings.TrimSpace(line), "mode:"); ok {
					if m := strings.Trim(strings.TrimSpace(mode), `"'`); m != "" {
						cl.Facts["kube-proxy-mode"] = m
					}
				}
			}
		}
	}
	cl.Facts["events-etcd"] = eventsEtcd(ctx, c)
	if svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		cl.Facts["dns-service"] = svc.Spec.ClusterIP
	}
	return cl, nil
}

// eventsEtcd tells whether Events have their own etcd ("separate"), share the main one ("shared"), or
// cannot be known (no readable kube-apiserver pod, as on managed clusters), from the apiserver's
// --etcd-servers-overrides flag.
func eventsEtcd(ctx context.Context, c kubernetes.Interface) string {
	pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=kube-apiserver"})
	if err != nil || len(pods.Items) == 0 {
		return "unknown"
	}
	for _, ctr := range pods.Items[0].Spec.Containers {
		for _, a := range append(append([]string{}, ctr.Command...), ctr.Args...) {
			if v, ok := strings.CutPrefix(a, "--etcd-servers-overrides="); ok && strings.Contains(v, "/events#") {
				return "separate"
			}
		}
	}
	return "shared"
}
