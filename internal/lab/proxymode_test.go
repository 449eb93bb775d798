package lab

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostRoot writes a fixture host root: the kernel's release, and optionally /proc/net/ip_vs and modules.dep.
func hostRoot(t *testing.T, release string, ipvsProc bool, modulesDep string) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/sys/kernel/osrelease", release+"\n")
	if ipvsProc {
		write("proc/net/ip_vs", "IP Virtual Server version 1.2.1 (size=4096)\n")
	}
	if modulesDep != "" {
		write("lib/modules/"+release+"/modules.dep", modulesDep)
	}
	return root
}

func TestCheckProxyMode(t *testing.T) {
	all := func(string) (string, error) { return "/usr/sbin/x", nil }
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	noIpset := func(tool string) (string, error) {
		if tool == "ipset" {
			return "", exec.ErrNotFound
		}
		return "/usr/sbin/" + tool, nil
	}
	const ipvsDep = "kernel/net/netfilter/ipvs/ip_vs.ko.xz: kernel/net/netfilter/nf_conntrack.ko.xz\n"
	for _, c := range []struct {
		name, mode string
		root       string
		look       func(string) (string, error)
		wantErr    string // "" for accepted
	}{
		{"iptables", ProxyIPTables, hostRoot(t, "6.18.44-fc-v782", false, ""), all, ""},
		{"default is iptables", "", hostRoot(t, "6.18.44-fc-v782", false, ""), none, "iptables"},
		{"nftables on 6.18", ProxyNFTables, hostRoot(t, "6.18.44-fc-v782", false, ""), all, ""},
		{"nftables on 5.10", ProxyNFTables, hostRoot(t, "5.10.0-28-amd64", false, ""), all, "needs 5.13"},
		{"nftables without nft", ProxyNFTables, hostRoot(t, "6.1.0-18-amd64", false, ""), none, "nft"},
		// This machine's kernel: everything built in, no /lib/modules, no /proc/net/ip_vs.
		{"ipvs, no IPVS at all", ProxyIPVS, hostRoot(t, "6.18.44-fc-v782", false, ""), all, "no IPVS"},
		{"ipvs, modules without ip_vs", ProxyIPVS, hostRoot(t, "6.1.0-18-amd64", false, "kernel/net/netfilter/nf_nat.ko.xz:\n"), all, "CONFIG_IP_VS off"},
		{"ipvs as a module", ProxyIPVS, hostRoot(t, "6.1.0-18-amd64", false, ipvsDep), all, ""},
		{"ipvs built in", ProxyIPVS, hostRoot(t, "6.18.44-fc-v782", true, ""), all, ""},
		{"ipvs without ipset", ProxyIPVS, hostRoot(t, "6.18.44-fc-v782", true, ""), noIpset, "ipset"},
		{"unknown mode", "userspace", hostRoot(t, "6.18.44-fc-v782", false, ""), all, "want one of"},
	} {
		err := CheckProxyMode(c.root, c.mode, c.look)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
	// A kernel release that cannot be read or parsed is an error, not a guess.
	if err := CheckProxyMode(t.TempDir(), ProxyNFTables, all); err == nil {
		t.Error("no osrelease: accepted")
	}
	if err := CheckProxyMode(hostRoot(t, "garbage", false, ""), ProxyNFTables, all); err == nil {
		t.Error("unparsable release: accepted")
	}
	if err := CheckProxyMode(hostRoot(t, "6.1", false, ""), ProxyNFTables, none); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing nft: %v, want it to wrap exec.ErrNotFound", err)
	}
}

func TestValidateProxyMode(t *testing.T) {
	for _, c := range []struct {
		c  Config
		ok bool
	}{
		{Config{}, true},
		{Config{RealNodes: 2, ProxyMode: ProxyNFTables}, true},
		{Config{RealNodes: 2, ProxyMode: ProxyIPVS}, true}, // the host check (CheckProxyMode) refuses it where IPVS is missing
		{Config{RealNodes: 2, ProxyMode: "userspace"}, false},
		{Config{ProxyMode: ProxyNFTables}, false}, // no real node runs kube-proxy
	} {
		if err := c.c.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.c, err)
		}
	}
}

func TestKubeProxyConfigMode(t *testing.T) {
	d := Dirs{State: "/s"}
	for mode, want := range map[string]string{"": "mode: iptables\n", ProxyNFTables: "mode: nftables\n"} {
		c := Config{RealNodes: 1, ProxyMode: mode}
		if got := kubeProxyConfig(d, &c, realNode{1}); !strings.Contains(got, want) {
			t.Errorf("mode %q: config has no %q:\n%s", mode, want, got)
		}
	}
}
