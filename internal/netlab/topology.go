// Package netlab builds network-namespace topologies that reproduce CNI data paths without Kubernetes
// (loopback, routed veth, bridge, VXLAN overlay, kube-proxy-style NAT with many services in
// iptables-legacy, iptables-nft and an nftables map, tc-eBPF redirect), so that the same benchmark can be run
// through each path in one run. Addresses come from 198.19.128.0/17 (inside the benchmarking range
// 198.18.0.0/15); every namespace is prefixed "ksnet-" and removed by Teardown.
package netlab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// NSPrefix starts the name of every namespace netlab makes.
const NSPrefix = "ksnet-"

// Path is one built topology: where the server listens and where the client connects.
type Path struct {
	Name        string
	Description string
	ClientNS    string
	ServerNS    string
	// ServerIP is the address the server binds; DialIP the address the client dials (a VIP for NAT paths).
	ServerIP string
	DialIP   string
	// MTU of the client's route to the server (1450 on the overlay).
	MTU int
	// Rules is the number of NAT service rules on the path (0 without NAT).
	Rules int
	// cleanup runs before the namespaces are deleted (eBPF links).
	cleanup func()
	// extra lists every namespace the path made, intermediate ones included.
	extra []string
}

// Namespaces lists the namespaces the path uses.
func (p *Path) Namespaces() []string {
	if p.ClientNS == p.ServerNS {
		return []string{p.ClientNS}
	}
	return []string{p.ClientNS, p.ServerNS}
}

// sh runs a command with a time-out; the error carries its output.
func sh(ctx context.Context, timeout time.Duration, name string, args ...string) error {
	return shIn(ctx, timeout, nil, name, args...)
}

func shIn(ctx context.Context, timeout time.Duration, stdin []byte, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

const quick = 30 * time.Second

func ip(ctx context.Context, args ...string) error { return sh(ctx, quick, "ip", args...) }

func inNS(ctx context.Context, ns string, args ...string) error {
	return sh(ctx, quick, "ip", append([]string{"-n", ns}, args...)...)
}

// nsExec runs a command inside ns.
func nsExec(ctx context.Context, timeout time.Duration, stdin []byte, ns string, args ...string) error {
	return shIn(ctx, timeout, stdin, "nsenter", append([]string{"--net=/run/netns/" + ns, "--"}, args...)...)
}

func addNS(ctx context.Context, names ...string) error {
	for _, n := range names {
		if err := ip(ctx, "netns", "add", n); err != nil {
			return err
		}
		if err := inNS(ctx, n, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	return nil
}

// vethPair connects ns1/if1 (addr1) with ns2/if2 (addr2); empty addresses are left unset.
func vethPair(ctx context.Context, ns1, if1, addr1, ns2, if2, addr2 string) error {
	if err := inNS(ctx, ns1, "link", "add", if1, "type", "veth", "peer", "name", if2, "netns", ns2); err != nil {
		return err
	}
	for _, e := range []struct{ ns, ifc, addr string }{{ns1, if1, addr1}, {ns2, if2, addr2}} {
		if e.addr != "" {
			if err := inNS(ctx, e.ns, "addr", "add", e.addr, "dev", e.ifc); err != nil {
				return err
			}
		}
		if err := inNS(ctx, e.ns, "link", "set", e.ifc, "up"); err != nil {
			return err
		}
	}
	return nil
}

// Teardown deletes every namespace netlab made (by its prefix; each holds only what netlab put there).
func Teardown(ctx context.Context) error {
	entries, err := os.ReadDir("/run/netns")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var firstErr error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NSPrefix) {
			if err := ip(ctx, "netns", "del", e.Name()); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// Remaining lists netlab namespaces that still exist.
func Remaining() []string {
	m, _ := filepath.Glob("/run/netns/" + NSPrefix + "*")
	return m
}
