package lab

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseSubnetEnv(t *testing.T) {
	e, err := ParseSubnetEnv([]byte("FLANNEL_NETWORK=198.18.0.0/16\nFLANNEL_SUBNET=198.18.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n"))
	if err != nil || e.Subnet != "198.18.1.1/24" || e.MTU != 1450 || e.Network != "198.18.0.0/16" || e.IPMasq {
		t.Fatalf("%+v %v", e, err)
	}
	for _, bad := range []string{"", "FLANNEL_SUBNET=198.18.1.1/24\n", "FLANNEL_SUBNET=x\nFLANNEL_MTU=1450", "FLANNEL_SUBNET=198.18.1.1/24\nFLANNEL_MTU=9999999", "garbage"} {
		if _, err := ParseSubnetEnv([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestFlannelConflist: the bridge plugin on FLANNEL_SUBNET's network with flannel's MTU, or the override.
func TestFlannelConflist(t *testing.T) {
	e := SubnetEnv{Subnet: "198.18.1.1/24", MTU: 1450}
	for _, c := range []struct{ override, want int }{{0, 1450}, {1500, 1500}} {
		s, err := flannelConflist(Dirs{State: "/s"}, realNode{1}, e, c.override)
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			Plugins []struct {
				Type string
				MTU  int
				IPAM struct{ Ranges [][]struct{ Subnet string } }
			}
		}
		if err := json.Unmarshal([]byte(s), &conf); err != nil {
			t.Fatal(err)
		}
		p := conf.Plugins[0]
		if p.Type != "bridge" || p.MTU != c.want || p.IPAM.Ranges[0][0].Subnet != "198.18.1.0/24" {
			t.Errorf("override %d: %s", c.override, s)
		}
	}
}

// TestFlannelConfig: --cni flannel needs real nodes; --pod-mtu needs flannel; bridge stays the default; a flannel
// lab's containerd renders no CNI template and its plan starts flanneld on each node.
func TestFlannelConfig(t *testing.T) {
	for _, c := range []Config{{CNI: "calico", RealNodes: 1}, {CNI: CNIFlannel}, {RealNodes: 1, PodMTU: 1400}, {CNI: CNIFlannel, RealNodes: 1, PodMTU: 100}} {
		if err := validateCNI(&c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c := Config{RealNodes: 2, CNI: CNIFlannel}
	if err := validateCNI(&c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(containerdConfig(Dirs{State: "/s"}, &c, realNode{1}), "conf_template") {
		t.Error("flannel's containerd config renders a template")
	}
	if !strings.Contains(containerdConfig(Dirs{State: "/s"}, &Config{RealNodes: 1}, realNode{1}), "conf_template") {
		t.Error("the bridge lab lost its template")
	}
	c.AgentBinary = "/bin/kubeslow"
	bins := map[string]string{}
	for _, b := range plannedBinaries(&c) {
		bins[b] = "/bin/" + b
	}
	p, err := NewPlan(Dirs{State: "/s"}, c, bins)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, comp := range p.Components() {
		if strings.HasSuffix(comp.Name, "."+Flannel) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d flanneld components, want 2:\n%s", n, p.Render())
	}
}

func FuzzParseSubnetEnv(f *testing.F) {
	f.Add([]byte("FLANNEL_NETWORK=198.18.0.0/16\nFLANNEL_SUBNET=198.18.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n"))
	f.Add([]byte("FLANNEL_MTU=-1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseSubnetEnv(b)
		if err == nil && (e.MTU < 68 || e.MTU > 65535 || e.Subnet == "") {
			t.Fatalf("accepted %q as %+v", b, e)
		}
	})
}
