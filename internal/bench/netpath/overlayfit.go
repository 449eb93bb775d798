package netpath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeslow/kubeslow/internal/rule"
	"github.com/kubeslow/kubeslow/internal/source/agent"
	"github.com/kubeslow/kubeslow/pkg/result"
)

// MetricOverlayExcess is, for one node's uplink, how many bytes the largest packet an overlay device of the
// cluster puts on the wire (the device's MTU plus its encapsulation's overhead) exceeds the uplink's MTU: a
// packet crosses the sender's uplink and the receiver's, so every node's overlay counts against every node's
// link. 0 is an exact fit (flannel's 1450 + 50 on a 1500 link). Labels: node, iface and mtu (the uplink),
// overlay ("flannel.1 1450 + VXLAN 50 = 1500"), senders (the nodes whose overlay sends packets this link
// cannot carry), fit (the overlay MTU every link carries: the smallest uplink minus the overhead) and narrowest
// (that uplink).
const MetricOverlayExcess = "overlay_packet_excess"

// EncapNames are the encapsulations' names by the overlay device's kind, as the findings say them.
var EncapNames = map[string]string{"vxlan": "VXLAN", "geneve": "Geneve", "ipip": "IP-in-IP", "gre": "GRE", "wireguard": "WireGuard"}

// OverlayKind is the encapsulation of an interface as the node probe reports it: its kind (the device's
// DEVTYPE) when it is an encapsulating one, else, when the probe read no kind, the CNIs' device names
// (flannel.<VNI>, vxlan.calico, cilium_vxlan: VXLAN; genev_sys_6081, cilium_geneve: Geneve; tunl0: IP-in-IP;
// flannel-wg, wireguard.cali, cilium_wg0: WireGuard); "" for any other interface.
func OverlayKind(i agent.Iface) string {
	if i.Kind != "" {
		if _, ok := OverlayOverhead[i.Kind]; ok {
			return i.Kind
		}
		return ""
	}
	n := i.Name
	switch {
	case strings.HasPrefix(n, "flannel.") || n == "vxlan.calico" || n == "cilium_vxlan":
		return "vxlan"
	case strings.HasPrefix(n, "genev_sys_") || n == "cilium_geneve":
		return "geneve"
	case n == "tunl0":
		return "ipip"
	case n == "flannel-wg" || n == "wireguard.cali" || n == "cilium_wg0":
		return "wireguard"
	}
	return ""
}

// NodeLinks is one node's network facts as its node probe read them; Net nil means they were not read, and
// Why says why.
type NodeLinks struct {
	Node string
	Net  *agent.NodeNet
	Why  string
}

// overlayDev is one node's overlay device and the largest packet it sends onto the underlay.
type overlayDev struct {
	node, name, kind string
	mtu, packet      int
}

func (o overlayDev) String() string {
	return fmt.Sprintf("%s %d + %s %d = %d", o.name, o.mtu, EncapNames[o.kind], OverlayOverhead[o.kind], o.packet)
}

// OverlayFit checks, from the facts each node's probe read, that every node's uplink carries the overlay's
// largest packets (pure): one MetricOverlayExcess per node whose uplink is known, when any node has an
// overlay device that is up (a device that is down carries nothing: Calico leaves tunl0 down when it does not
// use IP-in-IP). The uplink is the interface of the node's default route, as the probe reads it from
// /proc/net/route (IPv4's table: the overheads are IPv4's). What could not be read (a node whose probe failed,
// no default route, an uplink without an MTU) is listed in res.Absent under the metric, so that the rule says
// "not evaluated" with the reason rather than "clear" when nothing else fires.
func OverlayFit(res *result.Result, nodes []NodeLinks) {
	type uplink struct {
		node, iface string
		mtu         int
	}
	var links []uplink
	var devs []overlayDev
	var unread []string
	for _, n := range nodes {
		if n.Net == nil {
			unread = append(unread, fmt.Sprintf("%s: %s", n.Node, n.Why))
			continue
		}
		up := uplink{node: n.Node, iface: n.Net.Uplink}
		for _, i := range n.Net.Interfaces {
			if i.Name == up.iface {
				up.mtu = i.MTU
			}
			if k := OverlayKind(i); k != "" && i.Up && i.MTU > 0 {
				devs = append(devs, overlayDev{node: n.Node, name: i.Name, kind: k, mtu: i.MTU, packet: i.MTU + OverlayOverhead[k]})
			}
		}
		switch {
		case up.iface == "":
			unread = append(unread, n.Node+": no default route in /proc/net/route (the uplink is unknown)")
		case up.mtu <= 0:
			unread = append(unread, fmt.Sprintf("%s: the uplink %s's MTU was not read", n.Node, up.iface))
		default:
			links = append(links, up)
		}
	}
	if len(unread) > 0 {
		res.Absent = append(res.Absent, result.Absence{Metric: MetricOverlayExcess, Series: "the node probes' interfaces and default route",
			Reason: strings.Join(unread, "; ")})
	}
	if len(devs) == 0 || len(links) == 0 {
		return
	}
	// Largest packet first. Each link's senders are a prefix of that order (the devices whose packet is larger than
	// its MTU): the distinct nodes of each prefix are counted once, so that 5,000 nodes cost no 5,000² loop.
	sort.SliceStable(devs, func(a, b int) bool { return devs[a].packet > devs[b].packet })
	own := map[string]overlayDev{} // each node's largest
	var firstAt []int              // index in devs of each node's first device, in order
	distinct := make([]int, len(devs)+1)
	for i, d := range devs {
		distinct[i+1] = distinct[i]
		if _, ok := own[d.node]; !ok {
			own[d.node] = d
			firstAt = append(firstAt, i)
			distinct[i+1]++
		}
	}
	narrowest := links[0]
	for _, l := range links {
		if l.mtu < narrowest.mtu {
			narrowest = l
		}
	}
	for _, l := range links {
		top := devs[0]
		if d, ok := own[l.node]; ok && d.packet == top.packet { // the link's own node's device, among equals
			top = d
		}
		k := sort.Search(len(devs), func(i int) bool { return devs[i].packet <= l.mtu })
		var senders []string
		for _, i := range firstAt {
			if i >= k || len(senders) == 4 {
				break
			}
			senders = append(senders, devs[i].node)
		}
		if more := distinct[k] - len(senders); more > 0 {
			senders = append(senders, fmt.Sprintf("and %d more", more))
		}
		res.Metrics = append(res.Metrics, result.Metric{Name: MetricOverlayExcess, Unit: "bytes", Value: float64(top.packet - l.mtu),
			Labels: map[string]string{"node": l.node, "iface": l.iface, "mtu": strconv.Itoa(l.mtu), "overlay": top.String(),
				"senders": strings.Join(senders, ", "), "fit": strconv.Itoa(narrowest.mtu - OverlayOverhead[top.kind]),
				"narrowest": fmt.Sprintf("%s's %s %d", narrowest.node, narrowest.iface, narrowest.mtu)}})
	}
}

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

// mtuRule is KS-NET-MTU: one cause, whichever measurement's facts show it. Its threshold, source and fix are
// one; When and Match are the measurement's.
func mtuRule(when rule.Condition, also []rule.Condition, reads []rule.Metric, match func(*result.Report, rule.Rule) []rule.Hit) rule.Rule {
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
	return mtuRule(rule.Condition{Metric: m, Op: ">", Value: 0, Unit: "bytes"}, nil, nil, func(r *result.Report, rl rule.Rule) []rule.Hit {
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
