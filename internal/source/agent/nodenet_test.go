package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeProxyMetrics is an excerpt of kube-proxy's /metrics in iptables mode.
const kubeProxyMetrics = `# HELP kubeproxy_sync_proxy_rules_iptables_total [ALPHA] Total number of iptables rules owned by kube-proxy
# TYPE kubeproxy_sync_proxy_rules_iptables_total gauge
kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="filter"} 12
kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"} 40123
kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="nat"} 5
# HELP kubeproxy_sync_proxy_rules_duration_seconds [ALPHA] SyncProxyRules latency in seconds
# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="0.5"} 0
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="1"} 10
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="2"} 100
kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="+Inf"} 100
kubeproxy_sync_proxy_rules_duration_seconds_sum 150
kubeproxy_sync_proxy_rules_duration_seconds_count 100
`

func TestReadNodeNet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/proxyMode":
			_, _ = w.Write([]byte("iptables"))
		case "/metrics":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte(kubeProxyMetrics))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	root := filepath.Join("testdata", "node")
	n := ReadNodeNet(context.Background(), NodeNetRoots{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys"), KubeProxy: srv.URL})
	if len(n.Unread) != 0 {
		t.Fatalf("unread: %v", n.Unread)
	}
	var names []string
	for _, i := range n.Interfaces {
		names = append(names, i.Name)
	}
	if strings.Join(names, ",") != "cni0,eth0,flannel.1,veth1a2b" {
		t.Errorf("interfaces %v (lo is left out, sorted)", names)
	}
	if n.Uplink != "eth0" || n.Snmp == nil || n.Snmp.IPFragFails != 7 || n.Snmp.ICMPOutDestUnreachs != 5 || n.Snmp.ICMPOutType3 != 5 {
		t.Errorf("uplink %q snmp %+v", n.Uplink, n.Snmp)
	}
	// Each interface's mtu and operstate as the fixture's files say (read through procfs's sysfs parser).
	want := map[string]Iface{"cni0": {MTU: 1450, Up: true}, "eth0": {MTU: 1500, Up: true}, "flannel.1": {MTU: 1450, Up: true}, "veth1a2b": {MTU: 1450, Up: true}}
	for _, i := range n.Interfaces {
		if w := want[i.Name]; i.MTU != w.MTU || i.Up != w.Up {
			t.Errorf("%s: mtu %d up %v, want %d %v", i.Name, i.MTU, i.Up, w.MTU, w.Up)
		}
	}
	ov := n.Overlay()
	if len(ov) != 1 || ov[0].Name != "flannel.1" || ov[0].MTU != 1450 || ov[0].Kind != "vxlan" || !ov[0].Up {
		t.Errorf("overlay %+v", ov)
	}
	if n.ConntrackEntries != 117000 || n.ConntrackMax != 131072 || n.Neighbours != 900 || n.NeighThresh3 != 1024 {
		t.Errorf("conntrack %d/%d neighbours %d/%d", n.ConntrackEntries, n.ConntrackMax, n.Neighbours, n.NeighThresh3)
	}
	if n.ConntrackStat[ConntrackInsertFailed] != 0x1c || n.ConntrackStat[ConntrackDrop] != 3 {
		t.Errorf("conntrack statistics %v", n.ConntrackStat)
	}
	if n.KubeProxyMode != "iptables" || n.KubeProxyRules["nat/IPv4"] != 40123 || n.KubeProxyRules["filter/IPv4"] != 12 || n.KubeProxyRules["nat/IPv6"] != 5 {
		t.Errorf("kube-proxy %q %v", n.KubeProxyMode, n.KubeProxyRules)
	}
	if n.KubeProxySyncP99 < 1.9 || n.KubeProxySyncP99 > 2 {
		t.Errorf("sync p99 %v, want ~1.99 (interpolated in the 1-2 s bucket)", n.KubeProxySyncP99)
	}
}

// TestReadNodeNetUnreadable: missing files and an unreachable or garbled kube-proxy are reported, not fatal.
func TestReadNodeNetUnreadable(t *testing.T) {
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("iptables\x00{not metrics"))
	}))
	defer garbled.Close()
	for _, kp := range []string{"http://127.0.0.1:1", garbled.URL} {
		n := ReadNodeNet(context.Background(), NodeNetRoots{Proc: t.TempDir(), Sys: t.TempDir(), KubeProxy: kp})
		if n.ConntrackEntries != -1 || n.Neighbours != -1 || len(n.Interfaces) != 0 {
			t.Errorf("%s: read something from nothing: %+v", kp, n)
		}
		joined := strings.Join(n.Unread, "; ")
		for _, want := range []string{"interfaces", "conntrack entries", "neighbours", "kube-proxy"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: unread %q does not mention %s", kp, joined, want)
			}
		}
	}
}

// An interface down, one without an mtu file, and a regular file in class/net (bonding_masters): listed as before,
// with what could be read.
func TestReadNodeNetInterfaces(t *testing.T) {
	sys := t.TempDir()
	for p, b := range map[string]string{"class/net/eth1/mtu": "9000\n", "class/net/eth1/operstate": "down\n", "class/net/wg0/operstate": "unknown\n",
		"class/net/bonding_masters": "\n"} {
		p = filepath.Join(sys, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := ReadNodeNet(context.Background(), NodeNetRoots{Proc: t.TempDir(), Sys: sys})
	want := []Iface{{Name: "bonding_masters"}, {Name: "eth1", MTU: 9000}, {Name: "wg0", Up: true}}
	if len(n.Interfaces) != len(want) {
		t.Fatalf("interfaces %+v", n.Interfaces)
	}
	for i, w := range want {
		if n.Interfaces[i] != w {
			t.Errorf("interface %d: %+v, want %+v", i, n.Interfaces[i], w)
		}
	}
}
