// Package nodenet judges a node's network as its node probe reads it (agent.NodeNet, `kubeslow probe node`):
// whether every node's uplink carries the overlay's largest packets (OverlayFit, KS-NET-MTU) and how full its
// conntrack and neighbour tables are (KS-NODE-CONNTRACK, KS-NODE-NEIGH). Bench net (internal/bench/netpath,
// over the nodes it probes) and the node sweep (internal/measure/nodeagent, over every real node) share it:
// one threshold, source and fix per rule, whichever facts a command has.
package nodenet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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

// OverlayOverhead is what an encapsulation adds to each IPv4 packet, by device kind: VXLAN 50 (outer IPv4 20 +
// UDP 8 + VXLAN 8 + inner Ethernet 14, RFC 7348), Geneve 50 without options (RFC 8926), IP-in-IP 20 (RFC
// 2003), GRE 24 (RFC 2784 with a key), WireGuard 60 over IPv4 (IPv4 20 + UDP 8 + WireGuard 32; 80 over IPv6:
// flannel's and Calico's figures); 0 without an overlay.
var OverlayOverhead = map[string]int{"vxlan": 50, "geneve": 50, "ipip": 20, "gre": 24, "wireguard": 60}

// EncapNames are the encapsulations' names by the overlay device's kind, as the findings say them.
var EncapNames = map[string]string{"vxlan": "VXLAN", "geneve": "Geneve", "ipip": "IP-in-IP", "gre": "GRE", "wireguard": "WireGuard"}

// ExpectedMTU is the MTU the pod path's links should have on a node: its uplink's minus its overlay's overhead
// (the largest overhead if it has several overlay devices), with what it rests on.
func ExpectedMTU(n *agent.NodeNet) (expected, uplink int, overlay string, ok bool) {
	for _, i := range n.Interfaces {
		if i.Name == n.Uplink {
			uplink = i.MTU
		}
	}
	if uplink == 0 {
		return 0, 0, "", false
	}
	overhead := 0
	overlay = "none"
	for _, i := range n.Overlay() {
		if o, known := OverlayOverhead[i.Kind]; known && o > overhead {
			overhead, overlay = o, fmt.Sprintf("%s %s (+%d)", i.Kind, i.Name, o)
		}
	}
	return uplink - overhead, uplink, overlay, true
}

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
