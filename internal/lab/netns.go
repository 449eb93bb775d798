package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// netnsPath is the bind-mounted namespace file `ip netns` manages.
func netnsPath(name string) string { return filepath.Join("/run/netns", name) }

func netnsExists(name string) bool {
	_, err := os.Stat(netnsPath(name))
	return err == nil
}

// ipIn runs `ip -n NS args...`.
func ipIn(ctx context.Context, ns string, args ...string) error {
	_, err := run(ctx, short, "ip", append([]string{"-n", ns}, args...)...)
	return err
}

// setupNetwork creates the lab namespace, its bridge (the control-plane node's "NIC") and the uplink to the
// host, with host routes for the lab's prefixes. Packets to any other destination die inside the namespace:
// its default route points at the bridge, where no gateway exists.
func setupNetwork(ctx context.Context) error {
	if netnsExists(NetNS) {
		return nil
	}
	steps := [][]string{
		{"netns", "add", NetNS},
	}
	for _, s := range steps {
		if _, err := run(ctx, short, "ip", s...); err != nil {
			return err
		}
	}
	in := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", Bridge, "type", "bridge"},
		{"addr", "add", ControlPlaneIP + "/" + strconv.Itoa(NodeNetPrefix), "dev", Bridge},
		{"link", "set", Bridge, "up"},
	}
	for _, s := range in {
		if err := ipIn(ctx, NetNS, s...); err != nil {
			return err
		}
	}
	// The uplink: created on the host, one end moved into the namespace.
	if _, err := run(ctx, short, "ip", "link", "add", HostVeth, "type", "veth", "peer", "name", UplinkVeth, "netns", NetNS); err != nil {
		return err
	}
	host := [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", HostLinkIP, LinkPrefix), "dev", HostVeth},
		{"link", "set", HostVeth, "up"},
	}
	for _, s := range host {
		if _, err := run(ctx, short, "ip", s...); err != nil {
			return err
		}
	}
	if err := ipIn(ctx, NetNS, "addr", "add", fmt.Sprintf("%s/%d", UplinkIP, LinkPrefix), "dev", UplinkVeth); err != nil {
		return err
	}
	if err := ipIn(ctx, NetNS, "link", "set", UplinkVeth, "up"); err != nil {
		return err
	}
	if err := ipIn(ctx, NetNS, "route", "add", "default", "dev", Bridge); err != nil {
		return err
	}
	for _, r := range hostRoutes {
		if _, err := run(ctx, short, "ip", "route", "add", r, "via", UplinkIP, "dev", HostVeth); err != nil {
			return err
		}
	}
	// Forwarding inside the namespace only (the host's setting is not touched).
	_, err := run(ctx, short, "ip", "netns", "exec", NetNS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	return err
}

// teardownNetwork deletes the namespace; the kernel removes its links (and so the host's veth end and the
// routes through it) and its iptables rules with it.
func teardownNetwork(ctx context.Context) (removed bool, firstErr error) {
	if netnsExists(NetNS) {
		if _, err := run(ctx, short, "ip", "netns", "del", NetNS); err != nil {
			firstErr = err
		} else {
			removed = true
		}
	}
	// If the namespace was lost some other way, the host end may linger.
	if _, err := os.Stat(filepath.Join("/sys/class/net", HostVeth)); err == nil {
		if _, err := run(ctx, short, "ip", "link", "del", HostVeth); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return removed, firstErr
}
