package nodenet

import (
	"fmt"
	"strings"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// mtuSource is KS-NET-MTU's threshold source: the overheads and why a packet above a link's MTU is lost.
const mtuSource = "the encapsulations' overheads over IPv4 (the uplink is the default route of /proc/net/route): VXLAN 50 = outer IPv4 20 + UDP 8 + " +
	"VXLAN 8 + inner Ethernet 14 (RFC 7348 section 5; 70 over IPv6), and RFC 7348 section 4.3: VTEPs do not fragment, so the overlay and the " +
	"pods must be at the uplink's MTU minus 50 (flannel sets flannel.1 so); Geneve 50 without options, each option adding to it (RFC 8926 " +
	"section 3.1; 70 over IPv6); IP-in-IP 20 (RFC 2003 section 3); GRE 24 (RFC 2784); WireGuard 60 = outer IPv4 20 + UDP 8 + WireGuard's " +
	"header 16 and tag 16 (80 over IPv6: the figures flannel's and Calico's WireGuard MTUs subtract). A packet crosses the sender's uplink " +
	"and the receiver's, so every node's overlay packet (its MTU plus the overhead) must fit every node's uplink: an exact fit is healthy " +
	"(1450 + 50 on 1500), a byte more is dropped (flannel#463: the overlay's MTU must be the smallest node's). flannel#1614 and #1999: pods " +
	"above the path's MTU pass small requests and stall on large responses and TLS handshakes. A DF-set echo filling the pod's MTU " +
	"(ping -M do -s MTU-28) must cross to a pod on another node (RFC 1191). bench mtu evaluates it over its links and DF probe (net.mtu); " +
	"bench net over its node probes' facts (net.paths) and the node agent over every real node's (nodes.agent), with overlay_packet_excess " +
	"> 0 bytes: the largest overlay packet of any node against each node's uplink"

// mtuRemediation is KS-NET-MTU's fix, whichever facts named the link.
const mtuRemediation = "Make every link carry the overlay's packets: either lower the overlay's and the pods' MTU to the smallest node uplink " +
	"minus the overhead, on every node, or raise the narrow link's MTU to the overlay's MTU plus the overhead. flannel sets flannel.1 (and " +
	"FLANNEL_MTU in subnet.env, which the pods get) from its interface's MTU (--iface, else the default route's) when flanneld starts: after " +
	"changing a link restart flanneld on every node, or give the transport MTU explicitly where the flannel version or distribution takes " +
	"one (net-conf.json's Backend, Talos' backendMTU), never hard-code 1500 in a CNI config on an overlay; Calico: veth_mtu (FELIX_VXLANMTU, " +
	"FELIX_IPINIPMTU, FELIX_WIREGUARDMTU); Cilium: --mtu. When the links agree but DF probes stop short, a link between the nodes is narrower " +
	"(a VPN, a cloud network at 1460, a switch port): lower the uplink or overlay MTU to what crosses, let ICMP \"fragmentation needed\" " +
	"(type 3 code 4) through every firewall on the way, and consider net.ipv4.tcp_mtu_probing=1 on the nodes."

// MTURule is KS-NET-MTU: one cause, whichever measurement's facts show it. Its threshold, source and fix are
// one; When and Match are the measurement's (MTURuleOver, bench mtu's probe).
func MTURule(when rule.Condition, also []rule.Condition, reads []rule.Metric, match func(*result.Report, rule.Rule) []rule.Hit) rule.Rule {
	return rule.Rule{
		ID: "KS-NET-MTU", Title: "An MTU on the pod path does not fit: packets larger than a link carries are dropped", Severity: result.SeverityError, Cases: []string{"D"},
		When: when, Also: also, Reads: reads, Source: mtuSource, Summary: "{{.link}}: {{.detail}}", Remediation: mtuRemediation, Match: match,
	}
}

// MTURuleOver is KS-NET-MTU over the node facts of the result named res (MetricOverlayExcess, by OverlayFit):
// bench net's (net.paths) and the node agent's (nodes.agent). One item per node uplink the overlay's packets do
// not fit, naming the node and the link.
func MTURuleOver(res string) rule.Rule {
	m := rule.Metric{Result: res, Name: MetricOverlayExcess}
	return MTURule(rule.Condition{Metric: m, Op: ">", Value: 0, Unit: "bytes"}, nil, nil, func(r *result.Report, rl rule.Rule) []rule.Hit {
		var hits []rule.Hit
		for _, s := range m.Samples(r) {
			if !rl.When.Holds(s.Value) {
				continue
			}
			l := s.Labels
			hits = append(hits, rule.Hit{Key: "link=node " + l["node"] + "/" + l["iface"], Value: s.Value, Evidence: []result.Evidence{m.Evidence(s)},
				Vars: map[string]string{"link": fmt.Sprintf("%s's %s MTU %s < %s", l["node"], l["iface"], l["mtu"], l["overlay"]),
					"detail": fmt.Sprintf("the overlay's full-size packets (sent by %s) are %s bytes larger than this link carries and are dropped "+
						"(encapsulated packets are not fragmented): small requests pass, bulk transfers and large responses stall or crawl. "+
						"Either the overlay at %s on every node (the narrowest uplink, %s, minus the overhead) or %s's %s at %s",
						l["senders"], result.FormatValue(s.Value), l["fit"], l["narrowest"], l["node"], l["iface"], packetOf(l["overlay"]))}})
		}
		return hits
	})
}

// packetOf is the packet size at the end of an overlay label ("flannel.1 1450 + VXLAN 50 = 1500": 1500).
func packetOf(overlay string) string {
	_, p, _ := strings.Cut(overlay, " = ")
	return p
}

// ConntrackRule is KS-NODE-CONNTRACK over m, a node's conntrack fill (entries over nf_conntrack_max): bench net's
// over the nodes it probes (its summary names the label where), the node sweep's over every real node.
func ConntrackRule(m rule.Metric) rule.Rule {
	return rule.Rule{
		ID: "KS-NODE-CONNTRACK", Title: "A node's conntrack table is nearly full", Severity: result.SeverityWarning, Cases: []string{"B", "D"},
		When:        rule.Condition{Metric: m, Op: ">=", Value: 0.8, Unit: "ratio"},
		Source:      "Linux netfilter: at nf_conntrack_max new connections are dropped (\"nf_conntrack: table full, dropping packet\"); 80% leaves room for a burst",
		Summary:     "conntrack on {{.where}} holds {{.value}} of nf_conntrack_max: new connections through kube-proxy's NAT are dropped when it fills",
		Remediation: "Raise net.netfilter.nf_conntrack_max (kube-proxy's conntrack.maxPerCore), shorten established/time-wait time-outs, or bypass conntrack (an eBPF datapath, NOTRACK for node-local traffic).",
	}
}

// NeighbourRule is KS-NODE-NEIGH over m, a node's neighbour (ARP) table fill (entries over gc_thresh3): bench
// net's over the nodes it probes (its summary names the label where), the node sweep's over every real node.
func NeighbourRule(m rule.Metric) rule.Rule {
	return rule.Rule{
		ID: "KS-NODE-NEIGH", Title: "A node's ARP table is near its hard limit", Severity: result.SeverityWarning, Cases: []string{"B"},
		When:        rule.Condition{Metric: m, Op: ">=", Value: 0.8, Unit: "ratio"},
		Source:      "Linux neighbour table: past gc_thresh3 entries are refused (\"neighbor table overflow\"), which broke case B's cluster at 2,500 nodes",
		Summary:     "{{.where}} has {{.value}} of gc_thresh3 neighbour entries: new peers fail to resolve once it is full",
		Remediation: "Raise net.ipv4.neigh.default.gc_thresh1/2/3 (case B: 80000/90000/100000), or use a datapath that does not need an ARP entry per pod (routed /32s with a gateway, overlay).",
	}
}
