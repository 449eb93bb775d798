package lab

// Every address the lab uses comes from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking, so the
// lab can never collide with, or send traffic to, a real network.
const (
	// NetNS is the network namespace that holds the control plane (and, later, the node bridge).
	NetNS = "kubeslow-lab"
	// HostVeth / UplinkVeth are the two ends of the link between the host and the lab namespace.
	HostVeth   = "ksl-host"
	UplinkVeth = "ksl-uplink"
	// HostLinkIP is the host's end of the uplink, UplinkIP the lab's end (a /30).
	HostLinkIP = "198.19.254.1"
	UplinkIP   = "198.19.254.2"
	LinkPrefix = 30
	// Bridge is the lab's "node network"; ControlPlaneIP is the control-plane node's address on it.
	Bridge          = "ksl-br0"
	ControlPlaneIP  = "198.19.255.1"
	NodeNetCIDR     = "198.19.255.0/24"
	NodeNetPrefix   = 24
	PodCIDR         = "198.18.0.0/16"
	NodeCIDRMask    = 24
	ServiceCIDR     = "198.19.0.0/20"
	KubernetesSvcIP = "198.19.0.1"
	ClusterDNSIP    = "198.19.0.10"
	// KwokPodCIDR is the upper half of PodCIDR, shared by every simulated node: each kwok node is created with it
	// as its spec.podCIDR, and kwok draws fake pods' IPs from one pool per CIDR (so from one pool for all of
	// them, each IP handed out once). The controller-manager's range allocator occupies a pre-set podCIDR
	// (the /24 blocks 128..255 of PodCIDR, once, whatever the number of kwok nodes), so real nodes get their
	// /24 from the lower half (198.18.0.0/17, 128 blocks) and kwok nodes take none of them. It is also
	// kwok's --cidr, used for a node with no podCIDR.
	KwokPodCIDR = "198.18.128.0/17"

	APIServerPort = 6443
	EtcdPort      = 2379
	EtcdPeerPort  = 2380
	KwokPort      = 10247
)

// hostRoutes are the prefixes the host reaches through the lab namespace.
var hostRoutes = []string{PodCIDR, ServiceCIDR, NodeNetCIDR}

// MaxKwokNodes bounds --nodes. Simulated nodes take no address of their own (kwok answers for all of them on
// ControlPlaneIP) and share KwokPodCIDR, so the bound is not an address plan but the lab's size: 10,000 is
// twice clusterloader2's 5,000-node reference, the largest size the scale benchmark (docs/scale.md) aims at.
const MaxKwokNodes = 10000

// MaxKwokPods is the number of pods the simulated nodes can hold together: the usable addresses of
// KwokPodCIDR (a /17 less its network and broadcast addresses).
const MaxKwokPods = 1<<15 - 2
