package netlab

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// Destroy removes a path's namespaces (and with them its links, routes, rules and attached programs).
func Destroy(ctx context.Context, p *Path) error {
	if p.cleanup != nil {
		p.cleanup()
	}
	var firstErr error
	for _, ns := range p.allNS() {
		if _, err := host.DelNetns(ctx, ns); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// allNS includes intermediate namespaces (bridge, router).
func (p *Path) allNS() []string { return p.extra }

// Loopback: client and server in one namespace, over lo.
func Loopback(ctx context.Context) (*Path, error) {
	ns := NSPrefix + "lo"
	p := &Path{Name: "loopback", Description: "client and server in one namespace, over lo", ClientNS: ns, ServerNS: ns,
		ServerIP: "127.0.0.1", DialIP: "127.0.0.1", MTU: 65536, extra: []string{ns}}
	return p, host.AddNetns(ctx, ns)
}

// Veth: two namespaces joined by a veth pair (a routed pod network, like host-gw or ptp).
func Veth(ctx context.Context) (*Path, error) {
	c, s := NSPrefix+"veth-c", NSPrefix+"veth-s"
	p := &Path{Name: "veth", Description: "two namespaces joined by a veth pair (routed)", ClientNS: c, ServerNS: s,
		ServerIP: "198.19.128.2", DialIP: "198.19.128.2", MTU: 1500, extra: []string{c, s}}
	if err := host.AddNetns(ctx, c, s); err != nil {
		return p, err
	}
	return p, host.Veth(ctx, c, "eth0", "198.19.128.1/30", s, "eth0", "198.19.128.2/30")
}

// Bridge: client and server each on a veth into a Linux bridge in a third namespace (pods on one node).
func Bridge(ctx context.Context) (*Path, error) {
	c, s, b := NSPrefix+"br-c", NSPrefix+"br-s", NSPrefix+"br-node"
	p := &Path{Name: "bridge", Description: "veth into a Linux bridge and out again (pods on one node)", ClientNS: c, ServerNS: s,
		ServerIP: "198.19.129.3", DialIP: "198.19.129.3", MTU: 1500, extra: []string{c, s, b}}
	if err := host.AddNetns(ctx, c, s, b); err != nil {
		return p, err
	}
	if err := host.IPIn(ctx, b, "link", "add", "br0", "type", "bridge"); err != nil {
		return p, err
	}
	if err := host.IPIn(ctx, b, "link", "set", "br0", "up"); err != nil {
		return p, err
	}
	for _, e := range []struct{ ns, port, addr string }{{c, "vc", "198.19.129.2/24"}, {s, "vs", "198.19.129.3/24"}} {
		if err := host.Veth(ctx, b, e.port, "", e.ns, "eth0", e.addr); err != nil {
			return p, err
		}
		if err := host.IPIn(ctx, b, "link", "set", e.port, "master", "br0"); err != nil {
			return p, err
		}
	}
	return p, nil
}

// VXLAN: two "node" namespaces joined by an underlay veth, with a VXLAN overlay (VNI 42, UDP 4789, MTU 1450,
// flannel's defaults) between them; client and server use the overlay addresses.
func VXLAN(ctx context.Context) (*Path, error) {
	c, s := NSPrefix+"vx-n1", NSPrefix+"vx-n2"
	p := &Path{Name: "vxlan", Description: "VXLAN overlay between two node namespaces (VNI 42, MTU 1450)", ClientNS: c, ServerNS: s,
		ServerIP: "198.19.131.2", DialIP: "198.19.131.2", MTU: 1450, extra: []string{c, s}}
	if err := host.AddNetns(ctx, c, s); err != nil {
		return p, err
	}
	if err := host.Veth(ctx, c, "eth0", "198.19.130.1/30", s, "eth0", "198.19.130.2/30"); err != nil {
		return p, err
	}
	for _, e := range []struct{ ns, local, remote, overlay string }{
		{c, "198.19.130.1", "198.19.130.2", "198.19.131.1/24"}, {s, "198.19.130.2", "198.19.130.1", "198.19.131.2/24"}} {
		if err := host.IPIn(ctx, e.ns, "link", "add", "vxlan0", "type", "vxlan", "id", "42", "local", e.local, "remote", e.remote,
			"dstport", "4789", "dev", "eth0"); err != nil {
			return p, err
		}
		for _, args := range [][]string{{"link", "set", "vxlan0", "mtu", "1450"}, {"addr", "add", e.overlay, "dev", "vxlan0"}, {"link", "set", "vxlan0", "up"}} {
			if err := host.IPIn(ctx, e.ns, args...); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// Backend is a NAT implementation.
type Backend string

const (
	IPTablesLegacy Backend = "iptables-legacy"
	IPTablesNFT    Backend = "iptables-nft"
	NFTablesMap    Backend = "nftables-map"
)

// NAT is the veth path with a kube-proxy-style ClusterIP in front of the server: services rules in the
// client's namespace (a node's OUTPUT path), the target service last, so every new connection walks all of
// them in the iptables backends (the nftables map looks it up in one step).
func NAT(ctx context.Context, backend Backend, services int, port int) (*Path, error) {
	p, err := Veth(ctx)
	if err != nil {
		return p, err
	}
	p.Name = fmt.Sprintf("nat-%s-%d", backend, services)
	p.Description = fmt.Sprintf("veth + ClusterIP DNAT with %d services in %s", services, backend)
	p.Rules = services
	vip := serviceVIP(max(services-1, 0))
	p.DialIP = vip
	// A node reaches ClusterIPs through its default route; here that is the veth towards the server.
	if err := host.IPIn(ctx, p.ClientNS, "route", "add", "default", "via", p.ServerIP); err != nil {
		return p, err
	}
	var rules []byte
	var tool string
	switch backend {
	case IPTablesLegacy, IPTablesNFT:
		rules, tool = iptablesRules(services, vip, p.ServerIP, port), string(backend)+"-restore"
	case NFTablesMap:
		rules, tool = nftRules(services, vip, p.ServerIP, port), "nft"
	default:
		return p, fmt.Errorf("unknown NAT backend %q", backend)
	}
	args := []string{}
	if tool == "nft" {
		args = []string{"-f", "-"}
	}
	if _, err := host.RunIn(ctx, 10*time.Minute, rules, p.ClientNS, append([]string{tool}, args...)...); err != nil {
		return p, fmt.Errorf("loading %d services into %s: %w", services, backend, err)
	}
	return p, nil
}
