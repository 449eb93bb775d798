package scenario

import (
	"context"
	"fmt"

	"github.com/kubeslow/kubeslow/internal/lab"
)

// The MTU scenarios' figures: the lab's links are at 1500 (veth defaults), flannel.1 at 1450.
const (
	// MTUPodWrong is the pods' MTU in mtu-pod: the uplink's, as a CNI configuration hard-coding 1500 on a VXLAN
	// overlay sets it (flannel.1 stays at 1450).
	MTUPodWrong = 1500
	// MTUTransit is the transit link's MTU in mtu-transit: 100 bytes below the nodes' uplinks.
	MTUTransit = 1400
	// MTUTransitNode is the real node whose transit link mtu-transit narrows.
	MTUTransitNode = 2
)

// mtuPodScenario: flannel's VXLAN overlay with the pods' MTU set to the uplink's instead of flannel's, once the
// lab is up (the lab's own pods keep flannel's; `lab up --pod-mtu` sets it from the start).
func mtuPodScenario() Scenario {
	return Scenario{Name: "mtu-pod", Case: "D", Layouts: flannelLayouts, Description: fmt.Sprintf("flannel (VXLAN) on 2 real nodes; once up, the nodes' CNI configuration "+
		"gives new pods eth0 (and cni0) at MTU %d, the uplink's, while flannel.1 is at %d: full-size packets from a pod to another node are "+
		"refused at flannel.1 (ICMP fragmentation needed to the pod)", MTUPodWrong, MTUPodWrong-lab.VXLANOverhead),
		Configure: twoFlannelNodes,
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			if err := lab.SetPodMTU(d, c, MTUPodWrong); err != nil {
				return err
			}
			progress("new pods get MTU %d (flannel.1 at %d)", MTUPodWrong, MTUPodWrong-lab.VXLANOverhead)
			return nil
		}, Expect: []string{"KS-NET-MTU"}}
}

// mtuTransitScenario: every link on the nodes right, but the transit link to one node narrower (its port on the
// lab bridge, like a switch port, a VPN or a cloud network with a smaller MTU): the bridge drops the larger
// frames and, being layer 2, sends no ICMP.
func mtuTransitScenario() Scenario {
	return Scenario{Name: "mtu-transit", Case: "D", Layouts: flannelLayouts, Description: fmt.Sprintf("flannel (VXLAN) on 2 real nodes, every MTU on the nodes right, but %s's "+
		"port on the lab bridge (the transit link to it) at MTU %d: frames above it are dropped without ICMP (a black hole for VXLAN packets over %d bytes, "+
		"pod packets over %d)", lab.RealNodeName(MTUTransitNode), MTUTransit, MTUTransit, MTUTransit-lab.VXLANOverhead),
		Configure: twoFlannelNodes,
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			if err := lab.SetTransitMTU(ctx, MTUTransitNode, MTUTransit); err != nil {
				return err
			}
			progress("%s's transit link at MTU %d", lab.RealNodeName(MTUTransitNode), MTUTransit)
			return nil
		}, Expect: []string{"KS-NET-MTU"}}
}

// twoFlannelNodes is the flannel scenarios' lab: flannel's VXLAN overlay on at least two real nodes.
func twoFlannelNodes(c *lab.Config) {
	c.RealNodes = max(c.RealNodes, 2)
	c.CNI = lab.CNIFlannel
}

// flannelLayouts: the flannel lab has been run with the control plane outside every node only; the kubeadm
// layout's control-plane node runs no flanneld and is left out until a test runs it there.
var flannelLayouts = []string{lab.LayoutManaged}

// OverlayRateMbit is slow-overlay's cap on flannel.1: a tenth of what the lab's veth pairs carry between two
// nodes (2–5 Gbit/s here), far below the nodes' own link.
const OverlayRateMbit = 200

// slowOverlayScenario: flannel's VXLAN device capped on every node (tc tbf on flannel.1's egress), the nodes'
// link untouched: pods across nodes move a fraction of what the hosts do, the pod network's hop costs many
// times the host path. Case B's flannel carried ~2 of the nodes' 10–15 Gbit/s.
func slowOverlayScenario() Scenario {
	return Scenario{Name: "slow-overlay", Case: "B", Layouts: flannelLayouts, Description: fmt.Sprintf("flannel (VXLAN) on 2 real nodes; once up, "+
		"flannel.1's egress capped at %d Mbit/s on every node (tc tbf) while the nodes' own link is not: bulk transfers between pods on two nodes "+
		"top out at the cap (case B's flannel: ~2 of 10–15 Gbit/s), host to host does not", OverlayRateMbit),
		Configure: twoFlannelNodes,
		Start: func(ctx context.Context, d lab.Dirs, c *lab.Config, progress lab.Progress) error {
			if err := lab.SetOverlayRate(ctx, c, OverlayRateMbit); err != nil {
				return err
			}
			progress("flannel.1 capped at %d Mbit/s on %d nodes", OverlayRateMbit, c.RealNodes)
			return nil
		},
		Stop: func(ctx context.Context, _ lab.Dirs, c *lab.Config, progress lab.Progress) error {
			if err := lab.SetOverlayRate(ctx, c, 0); err != nil {
				return err
			}
			progress("flannel.1's cap taken off")
			return nil
		},
		Expect: []string{"KS-NET-HOP"}}
}
