package host

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// NetnsPath is the bind-mounted namespace file `ip netns` manages.
func NetnsPath(name string) string { return filepath.Join("/run/netns", name) }

// NetnsExists reports whether the named network namespace exists.
func NetnsExists(name string) bool {
	_, err := os.Stat(NetnsPath(name))
	return err == nil
}

// AddNetns creates network namespaces with their loopback up.
func AddNetns(ctx context.Context, names ...string) error {
	for _, n := range names {
		if err := IP(ctx, "netns", "add", n); err != nil {
			return err
		}
		if err := IPIn(ctx, n, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	return nil
}

// DelNetns deletes a network namespace if it exists (the kernel removes its links, routes and firewall rules
// with it) and says whether it did.
func DelNetns(ctx context.Context, name string) (bool, error) {
	if !NetnsExists(name) {
		return false, nil
	}
	if err := IP(ctx, "netns", "del", name); err != nil {
		return false, err
	}
	return true, nil
}

// IP runs `ip args...` on the host.
func IP(ctx context.Context, args ...string) error {
	_, err := Run(ctx, Short, "ip", args...)
	return err
}

// IPIn runs `ip -n NS args...`.
func IPIn(ctx context.Context, ns string, args ...string) error {
	_, err := Run(ctx, Short, "ip", append([]string{"-n", ns}, args...)...)
	return err
}

// Veth connects ns1/if1 (addr1) with ns2/if2 (addr2) and sets both ends up; empty addresses are left unset.
func Veth(ctx context.Context, ns1, if1, addr1, ns2, if2, addr2 string) error {
	if err := IPIn(ctx, ns1, "link", "add", if1, "type", "veth", "peer", "name", if2, "netns", ns2); err != nil {
		return err
	}
	for _, e := range []struct{ ns, ifc, addr string }{{ns1, if1, addr1}, {ns2, if2, addr2}} {
		if e.addr != "" {
			if err := IPIn(ctx, e.ns, "addr", "add", e.addr, "dev", e.ifc); err != nil {
				return err
			}
		}
		if err := IPIn(ctx, e.ns, "link", "set", e.ifc, "up"); err != nil {
			return err
		}
	}
	return nil
}

// InNetns prefixes argv so that it runs inside network namespace ns.
func InNetns(ns string, argv ...string) []string {
	return append([]string{"nsenter", "--net=" + NetnsPath(ns), "--"}, argv...)
}

// RunIn runs a command inside network namespace ns, with stdin (nil: none), and returns its output.
func RunIn(ctx context.Context, timeout time.Duration, stdin []byte, ns string, argv ...string) (string, error) {
	full := InNetns(ns, argv...)
	return RunInput(ctx, timeout, stdin, full[0], full[1:]...)
}

// EnableForwarding turns on IPv4 forwarding inside ns (the host's setting is not touched).
func EnableForwarding(ctx context.Context, ns string) error {
	_, err := RunIn(ctx, Short, nil, ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	return err
}
