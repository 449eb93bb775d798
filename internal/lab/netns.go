package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kubeslow/kubeslow/internal/lab/host"
)

// setupNetwork creates the lab namespace, its bridge (the control-plane node's "NIC") and the uplink to the
// host, with host routes for the lab's prefixes. Packets to any other destination die inside the namespace:
// its default route points at the bridge, where no gateway exists.
func setupNetwork(ctx context.Context) error {
	if host.NetnsExists(NetNS) {
		return nil
	}
	if err := host.AddNetns(ctx, NetNS); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"link", "add", Bridge, "type", "bridge"},
		{"addr", "add", ControlPlaneIP + "/" + strconv.Itoa(NodeNetPrefix), "dev", Bridge},
		{"link", "set", Bridge, "up"},
	} {
		if err := host.IPIn(ctx, NetNS, s...); err != nil {
			return err
		}
	}
	// The uplink: created on the host, one end moved into the namespace.
	if err := host.IP(ctx, "link", "add", HostVeth, "type", "veth", "peer", "name", UplinkVeth, "netns", NetNS); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", HostLinkIP, LinkPrefix), "dev", HostVeth},
		{"link", "set", HostVeth, "up"},
	} {
		if err := host.IP(ctx, s...); err != nil {
			return err
		}
	}
	for _, s := range [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", UplinkIP, LinkPrefix), "dev", UplinkVeth},
		{"link", "set", UplinkVeth, "up"},
		{"route", "add", "default", "dev", Bridge},
	} {
		if err := host.IPIn(ctx, NetNS, s...); err != nil {
			return err
		}
	}
	for _, r := range hostRoutes {
		if err := host.IP(ctx, "route", "add", r, "via", UplinkIP, "dev", HostVeth); err != nil {
			return err
		}
	}
	// Forwarding inside the namespace only (the host's setting is not touched).
	return host.EnableForwarding(ctx, NetNS)
}

// teardownNetwork deletes the namespace; the kernel removes its links (and so the host's veth end and the
// routes through it) and its iptables rules with it.
func teardownNetwork(ctx context.Context) (removed bool, firstErr error) {
	removed, firstErr = host.DelNetns(ctx, NetNS)
	// If the namespace was lost some other way, the host end may linger.
	if _, err := os.Stat(filepath.Join("/sys/class/net", HostVeth)); err == nil {
		// Deleting the namespace removes the host end asynchronously: gone by now is not an error.
		if err := host.IP(ctx, "link", "del", HostVeth); err != nil && firstErr == nil {
			if _, serr := os.Stat(filepath.Join("/sys/class/net", HostVeth)); serr == nil {
				firstErr = err
			}
		}
	}
	return removed, firstErr
}
