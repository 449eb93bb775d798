package netlab

import (
	"bytes"
	"fmt"
)

// serviceAddr is the i-th ClusterIP service's address and port: VIPs from 198.19.192.0/18, the port telling
// apart services beyond 16,384.
func serviceAddr(i int) (string, int) {
	n := i % 16384
	return fmt.Sprintf("198.19.%d.%d", 192+n/256, n%256), 1000 + i/16384
}

func serviceVIP(i int) string {
	a, _ := serviceAddr(i)
	return a
}

// ServicePort is the port the client dials for a NAT path of n services.
func ServicePort(n int) int {
	_, p := serviceAddr(max(n-1, 0))
	return p
}

// deadEndpoint is where the services other than the target point: an address nothing answers on (those rules
// are only walked, never matched).
const deadEndpoint = "198.19.143.1"

// iptablesRules renders kube-proxy's iptables layout for n services (KUBE-SERVICES -> KUBE-SVC -> KUBE-SEP ->
// DNAT), the last one pointing at the server, for iptables-restore.
func iptablesRules(n int, _ string, server string, port int) []byte {
	var b bytes.Buffer
	b.WriteString("*nat\n:KUBE-SERVICES - [0:0]\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, ":KUBE-SVC-%05d - [0:0]\n:KUBE-SEP-%05d - [0:0]\n", i, i)
	}
	b.WriteString("-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n")
	for i := 0; i < n; i++ {
		vip, p := serviceAddr(i)
		fmt.Fprintf(&b, "-A KUBE-SERVICES -d %s/32 -p tcp -m comment --comment \"ns/svc-%d\" -m tcp --dport %d -j KUBE-SVC-%05d\n", vip, i, p, i)
	}
	for i := 0; i < n; i++ {
		target := deadEndpoint
		if i == n-1 {
			target = server
		}
		fmt.Fprintf(&b, "-A KUBE-SVC-%05d -j KUBE-SEP-%05d\n", i, i)
		fmt.Fprintf(&b, "-A KUBE-SEP-%05d -p tcp -m tcp -j DNAT --to-destination %s:%d\n", i, target, port)
	}
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

// nftRules renders an nftables ruleset where one map lookup (address . port -> endpoint) replaces the chain
// walk, as kube-proxy's nftables mode does.
func nftRules(n int, _ string, server string, port int) []byte {
	var b bytes.Buffer
	b.WriteString("table ip kubeslow_nat {\n  map services {\n    type ipv4_addr . inet_service : ipv4_addr . inet_service\n")
	if n > 0 {
		b.WriteString("    elements = {\n")
		for i := 0; i < n; i++ {
			vip, p := serviceAddr(i)
			target := deadEndpoint
			if i == n-1 {
				target = server
			}
			sep := ","
			if i == n-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "      %s . %d : %s . %d%s\n", vip, p, target, port, sep)
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  }\n  chain output {\n    type nat hook output priority -100; policy accept;\n")
	b.WriteString("    dnat ip to ip daddr . tcp dport map @services\n  }\n}\n")
	return b.Bytes()
}
