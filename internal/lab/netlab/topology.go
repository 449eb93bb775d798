// Package netlab builds network-namespace topologies that reproduce CNI data paths without Kubernetes
// (loopback, routed veth, bridge, VXLAN overlay, kube-proxy-style NAT with many services in
// iptables-legacy, iptables-nft and an nftables map, tc-eBPF redirect), so that the same benchmark can be run
// through each path in one run. Addresses come from 198.19.128.0/17 (inside the benchmarking range
// 198.18.0.0/15); every namespace is prefixed "ksnet-" and removed by Teardown.
package netlab

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeslow/kubeslow/internal/lab/host"
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

// Teardown deletes every namespace netlab made (by its prefix; each holds only what netlab put there).
func Teardown(ctx context.Context) error {
	entries, err := os.ReadDir(filepath.Dir(host.NetnsPath(NSPrefix)))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var firstErr error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NSPrefix) {
			if _, err := host.DelNetns(ctx, e.Name()); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// Remaining lists netlab namespaces that still exist.
func Remaining() []string {
	m, _ := filepath.Glob(host.NetnsPath(NSPrefix) + "*")
	return m
}
