package netpath_test

import (
	"strings"
	"testing"

	"github.com/kubeslow/kubeslow/internal/bench/netpath"
	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestNetPod: one finding for the pod paths below 90 % of host->host, each path an item on its worst
// connection mode, the worst path first and in the summary, naming the cluster's CNI; host paths and paths
// within the tolerance stay quiet.
func TestNetPod(t *testing.T) {
	m := func(path, conn string, v float64) result.Metric {
		return result.Metric{Name: "ratio_to_host", Unit: "ratio", Value: v, Labels: map[string]string{"path": path, "conn": conn}}
	}
	r := &result.Report{Cluster: result.Cluster{Facts: map[string]string{"cni": "flannel"}}, Results: []result.Result{{Name: netpath.Name, Status: result.StatusPass,
		Metrics: []result.Metric{m("host->host", "new", 1), m("host->pod", "new", 0.5), m("pod->pod other node", "keepalive", 0.8),
			m("pod->pod other node", "new", 0.06), m("pod->pod same node", "new", 0.95), m("pod->Service", "stream", 0.7)}}}}
	fs, _ := rule.Evaluate(r, netpath.Rules())
	if len(fs) != 1 || fs[0].ItemCount != 2 || len(fs[0].Items) != 2 {
		t.Fatalf("findings %+v", fs)
	}
	if e := fs[0].Evidence[0]; e.Labels["path"] != "pod->pod other node" || e.Labels["conn"] != "new" || e.Value != 0.06 ||
		!strings.Contains(fs[0].Summary, "flannel") || !strings.Contains(fs[0].Summary, "per new connection") {
		t.Fatalf("first finding %+v", fs[0])
	}
	if it := fs[0].Items; it[0].Key != "path=pod->pod other node" || it[0].Value != 0.06 || it[1].Key != "path=pod->Service" || it[1].Value != 0.7 ||
		!strings.Contains(it[1].Summary, "pod->Service reaches 0.7x") {
		t.Fatalf("items %+v", it)
	}
	if !strings.Contains(fs[0].Summary, "nothing (the node probes") {
		t.Errorf("no probe data, yet the summary says %q", fs[0].Summary)
	}
}

// TestNetPodObserved: what the agents saw (pod MTU, overlay, kube-proxy mode and NAT rules, conntrack) is in
// the finding's summary and evidence; conntrack and ARP tables past 80 % are findings of their own.
func TestNetPodObserved(t *testing.T) {
	w := func(name string, v float64, kv ...string) result.Metric {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return result.Metric{Name: name, Value: v, Labels: l}
	}
	r := &result.Report{Cluster: result.Cluster{Facts: map[string]string{}}, Results: []result.Result{{Name: netpath.Name, Status: result.StatusPass,
		Metrics: []result.Metric{
			w("ratio_to_host", 0.4, "path", "pod->pod other node", "conn", "new"),
			w("mtu", 1450, "where", "pod", "iface", "eth0"),
			w("kube_proxy_rules", 40123, "where", "node n1", "table", "nat"),
			w("conntrack_usage", 0.93, "where", "node n1"),
			w("conntrack_usage", 0.10, "where", "node n2"),
			w("neighbour_usage", 0.85, "where", "node n2"),
		},
		Records: []result.Record{{ID: "net node n1", Labels: map[string]string{"where": "node n1", "kube_proxy_mode": "iptables", "overlay": "flannel.1 (vxlan, MTU 1450)"}}},
	}}}
	fs, _ := rule.Evaluate(r, netpath.Rules())
	byID := map[string][]result.Finding{}
	for _, f := range fs {
		byID[f.ID] = append(byID[f.ID], f)
	}
	pod := byID["KS-NET-POD"]
	if len(pod) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	for _, want := range []string{"kube-proxy iptables", "pod MTU 1450", "40123 kube-proxy NAT rules on node n1", "conntrack 93% full on node n1", "overlay flannel.1 (vxlan, MTU 1450) on node n1"} {
		if !strings.Contains(pod[0].Summary, want) {
			t.Errorf("summary %q lacks %q", pod[0].Summary, want)
		}
	}
	if len(pod[0].Evidence) != 5 {
		t.Errorf("evidence %+v: want the ratio, the MTU, the rules and both conntrack fills", pod[0].Evidence)
	}
	if ct := byID["KS-NODE-CONNTRACK"]; len(ct) != 1 || ct[0].Evidence[0].Labels["where"] != "node n1" {
		t.Errorf("conntrack findings %+v", ct)
	}
	if ng := byID["KS-NODE-NEIGH"]; len(ng) != 1 || ng[0].Evidence[0].Labels["where"] != "node n2" {
		t.Errorf("neighbour findings %+v", ng)
	}
}
