package nodenet_test

import (
	"testing"

	"github.com/kubeslow/kubeslow/internal/measure/nodenet"
	"github.com/kubeslow/kubeslow/internal/measure/nodenet/nodenettest"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// TestOverlayFitExact: the healthy flannel lab (eth0 1500, flannel.1 1450 on both nodes) is an exact fit: 0 on
// each node's uplink, nothing absent.
func TestOverlayFitExact(t *testing.T) {
	var res result.Result
	nodenet.OverlayFit(&res, nodenettest.FlannelLinks(t, nil, nil))
	if len(res.Metrics) != 2 || res.Metrics[0].Value != 0 || res.Metrics[1].Value != 0 || len(res.Absent) != 0 {
		t.Errorf("healthy flannel: %+v", res)
	}
}

// TestOverlayFitNoFacts: no facts at all (the probes did not run): not evaluated, with the reason in Absent.
func TestOverlayFitNoFacts(t *testing.T) {
	var res result.Result
	nodenet.OverlayFit(&res, []nodenet.NodeLinks{{Node: "n1", Why: "x"}})
	if len(res.Metrics) != 0 || len(res.Absent) != 1 {
		t.Errorf("no facts: %+v", res)
	}
}

// TestOverlayKind: the probe's kind decides; without one, the CNIs' device names; a device that is down
// (Calico's tunl0 when it does not use IP-in-IP) carries nothing.
func TestOverlayKind(t *testing.T) {
	for _, c := range []struct {
		i    agent.Iface
		want string
	}{
		{agent.Iface{Name: "flannel.1", Kind: "vxlan"}, "vxlan"}, {agent.Iface{Name: "flannel.1"}, "vxlan"}, {agent.Iface{Name: "vxlan.calico"}, "vxlan"},
		{agent.Iface{Name: "cilium_geneve"}, "geneve"}, {agent.Iface{Name: "genev_sys_6081"}, "geneve"}, {agent.Iface{Name: "tunl0"}, "ipip"},
		{agent.Iface{Name: "flannel-wg"}, "wireguard"}, {agent.Iface{Name: "wg0", Kind: "wireguard"}, "wireguard"},
		{agent.Iface{Name: "cni0", Kind: "bridge"}, ""}, {agent.Iface{Name: "eth0"}, ""}, {agent.Iface{Name: "flannel.1", Kind: "bridge"}, ""},
	} {
		if got := nodenet.OverlayKind(c.i); got != c.want {
			t.Errorf("%+v: %q, want %q", c.i, got, c.want)
		}
	}
	// Kind absent from the probe: flannel.1 still found by name; tunl0 down left out.
	noKind := func(n *agent.NodeNet) {
		for i := range n.Interfaces {
			n.Interfaces[i].Kind = ""
		}
		n.Interfaces = append(n.Interfaces, agent.Iface{Name: "tunl0", MTU: 1480})
	}
	var res result.Result
	nodenet.OverlayFit(&res, nodenettest.FlannelLinks(t, []func(*agent.NodeNet){noKind}, []func(*agent.NodeNet){noKind, nodenettest.SetMTU("eth0", 1400)}))
	if len(res.Metrics) != 2 || res.Metrics[1].Value != 100 || res.Metrics[1].Labels["overlay"] != "flannel.1 1450 + VXLAN 50 = 1500" {
		t.Errorf("kind by name: %+v", res.Metrics)
	}
	// WireGuard's 60 and IP-in-IP's 20.
	wg := func(n *agent.NodeNet) {
		NoOverlay := nodenettest.NoOverlay
		NoOverlay(n)
		n.Interfaces = append(n.Interfaces, agent.Iface{Name: "flannel-wg", MTU: 1440, Kind: "wireguard", Up: true})
	}
	res = result.Result{}
	nodenet.OverlayFit(&res, nodenettest.FlannelLinks(t, []func(*agent.NodeNet){wg}, []func(*agent.NodeNet){wg}))
	if len(res.Metrics) != 2 || res.Metrics[0].Value != 0 || res.Metrics[0].Labels["overlay"] != "flannel-wg 1440 + WireGuard 60 = 1500" {
		t.Errorf("wireguard: %+v", res.Metrics)
	}
}

// TestOverlayFitManyNodes: six nodes with flannel.1 at 1500: every link named, each naming four senders and how
// many more.
func TestOverlayFitManyNodes(t *testing.T) {
	var links []nodenet.NodeLinks
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6"} {
		links = append(links, nodenet.NodeLinks{Node: n, Net: nodenettest.FlannelNode(t, nodenettest.SetMTU("flannel.1", 1500))})
	}
	var res result.Result
	nodenet.OverlayFit(&res, links)
	if len(res.Metrics) != 6 {
		t.Fatalf("metrics %+v", res.Metrics)
	}
	for _, m := range res.Metrics {
		if m.Value != 50 || m.Labels["senders"] != "n1, n2, n3, n4, and 2 more" || m.Labels["fit"] != "1450" {
			t.Errorf("%+v", m)
		}
	}
}

// TestMTUOverheads: the expected MTU follows the overlay's kind.
func TestMTUOverheads(t *testing.T) {
	for kind, want := range map[string]int{"vxlan": 50, "ipip": 20, "wireguard": 60} {
		if nodenet.OverlayOverhead[kind] != want {
			t.Errorf("%s overhead %d, want %d", kind, nodenet.OverlayOverhead[kind], want)
		}
	}
}
